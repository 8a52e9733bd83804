/**
 * The depthwise INT8 microkernel: ocb channel vectors × width output columns of one output row,
 * each lane one channel. Per tap it widens the lanes' u8 inputs to 32 bits and multiplies them by
 * the tap's int32 weights (packed widened: a depthwise weight is kh·kw bytes per channel, so
 * four times that costs nothing) — exact, with no pair to saturate and no channel reduction to feed
 * a dot-product instruction. Only the last vector of the last channel group may be partial.
 */
import type { Int8Dims, Int8Problem } from '../space/int8-problem.js';
import type { Int8Ops } from './int8-isa.js';

export function depthwiseMicrokernel(
  name: string,
  p: Int8Problem,
  d: Int8Dims,
  ops: Int8Ops,
  outT: string,
  ocb: number,
  width: number,
): string {
  const v = d.vec;
  const taps = p.kh * p.kw;
  const acc: string[] = [];
  for (let i = 0; i < ocb; i++) for (let j = 0; j < width; j++) acc.push(`c${i}_${j} = ${ops.zero}`);
  const steps: string[] = [];
  for (let i = 0; i < ocb; i++) steps.push(ops.dwWeight(`wp + ${i * taps * v} + t * ${v}`, i));
  for (let j = 0; j < width; j++)
    for (let i = 0; i < ocb; i++) steps.push(ops.dwTap(`c${i}_${j}`, `ik + ${j * p.sw * d.cp + i * v}`, i, v > 1 && i === ocb - 1));
  const finish: string[] = [];
  for (let i = 0; i < ocb; i++)
    for (let j = 0; j < width; j++)
      finish.push(...ops.finish(`c${i}_${j}`, i, `op + ${j * p.cout + i * v}`, i === ocb - 1 ? 'lanes' : `${v}`));
  return [
    `static __attribute__((noinline)) void ${name}(const uint8_t* restrict ip, const int32_t* restrict wp, ` +
      `const int32_t* restrict comp, const float* restrict mult, ${outT}* restrict op, int lanes) {`,
    '  (void)mult; (void)lanes;',
    ...ops.constants.map((x) => '  ' + x),
    `  ${ops.accType} ${acc.join(', ')};`,
    `  for (int ky = 0; ky < ${p.kh}; ++ky)`,
    `  #pragma GCC unroll ${p.kw}`,
    `  for (int kx = 0; kx < ${p.kw}; ++kx) {`,
    `    const long t = (long)ky * ${p.kw} + kx;`,
    `    const uint8_t* ik = ip + ((long)ky * ${p.dh * d.wp} + (long)kx * ${p.dw}) * ${d.cp};`,
    ...steps.map((x) => '    ' + x),
    '  }',
    ...finish.map((x) => '  ' + x),
    '}',
  ].join('\n');
}
