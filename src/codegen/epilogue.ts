/**
 * The fused epilogue as one C function per candidate, applied to each accumulator vector after the
 * last reduction pass: bias, activations (runtime parameters from epi_params, in step order),
 * residual add, channel multiply. Folded BatchNorm needs no step: it is already in weight and bias.
 */
import type { EpilogueKind } from '../ir/workload.js';
import { codesOf, EPILOGUE_ENUM } from '../toolchain/abi.js';

/** Codes of enum vt_epi (the ABI table, generated into vt_abi.h). */
export const EPILOGUE_CODES: Readonly<Record<EpilogueKind, number>> = codesOf(EPILOGUE_ENUM);

/** How many runtime floats each step reads from epi_params. */
export const EPILOGUE_PARAMS: Readonly<Record<EpilogueKind, number>> = {
  bias: 0,
  relu: 0,
  clip: 2,
  leaky_relu: 1,
  sigmoid: 0,
  hard_sigmoid: 2,
  hard_swish: 0,
  silu: 0,
  tanh: 0,
  gelu: 0,
  residual_add: 0,
  channel_mul: 0,
  gelu_tanh: 0,
};

export function epilogueParamCount(steps: readonly EpilogueKind[]): number {
  return steps.reduce((n, s) => n + EPILOGUE_PARAMS[s], 0);
}

/**
 * `static inline T <name>(T x, const float* b, const float* r, const float* g, const float* p)`:
 * b = bias at this vector's channels, r = residual at this vector's elements, g = gate at this
 * vector's channels, p = epi_params.
 */
export function emitEpilogue(name: string, vec: number, steps: readonly EpilogueKind[]): string {
  const v = `vt${vec}`;
  const lines: string[] = [];
  let p = 0;
  for (const step of steps) {
    switch (step) {
      case 'bias':
        lines.push(`x = ${v}_add(x, ${v}_load(b));`);
        break;
      case 'relu':
        lines.push(`x = ${v}_max(x, ${v}_zero());`);
        break;
      case 'clip':
        lines.push(`x = ${v}_clamp(x, p[${p}], p[${p + 1}]);`);
        break;
      case 'leaky_relu':
        lines.push(`x = ${v}_leaky_relu(x, p[${p}]);`);
        break;
      case 'sigmoid':
        lines.push(`x = ${v}_sigmoid(x);`);
        break;
      case 'hard_sigmoid':
        lines.push(`x = ${v}_hard_sigmoid(x, p[${p}], p[${p + 1}]);`);
        break;
      case 'hard_swish':
        lines.push(`x = ${v}_hard_swish(x);`);
        break;
      case 'silu':
        lines.push(`x = ${v}_mul(x, ${v}_sigmoid(x));`);
        break;
      case 'tanh':
        lines.push(`x = ${v}_tanh(x);`);
        break;
      case 'gelu':
        lines.push(`x = ${v}_gelu(x);`);
        break;
      case 'gelu_tanh':
        lines.push(`x = ${v}_gelu_tanh(x);`);
        break;
      case 'residual_add':
        lines.push(`x = ${v}_add(x, ${v}_load(r));`);
        break;
      case 'channel_mul':
        lines.push(`x = ${v}_mul(x, ${v}_load(g));`);
        break;
    }
    p += EPILOGUE_PARAMS[step];
  }
  return [
    `static inline ${v}_t ${name}(${v}_t x, const float* b, const float* r, const float* g, const float* p) {`,
    '  (void)b; (void)r; (void)g; (void)p;',
    ...lines.map((l) => '  ' + l),
    '  return x;',
    '}',
  ].join('\n');
}
