/**
 * Register-blocked microkernels of the direct problem (conv / 1×1 / dense / batch_matmul).
 * One call computes regOc output vectors × width output columns of one output row:
 * accumulators c<i>_<j> stay in registers across the whole reduction (ic blocks × kh × kw × lanes);
 * each reduction lane loads the regOc weight vectors once (contiguous in the packed layout) and
 * broadcasts one input element per column into all regOc FMAs. The kw loop and the lane loop are
 * unrolled; tails never reach the hot loop: a partial last ic block gets its own copy of the loop
 * with a compile-time lane count, and column blocks that touch padding or are narrower than the
 * tile are separate "special" kernels whose valid taps are decided at generation time.
 */
import type { DirectProblem } from '../space/problem.js';
import type { Schedule } from '../space/knobs.js';
import type { EpilogueKind } from '../ir/workload.js';

export interface MicrokernelSpec {
  readonly name: string;
  readonly p: DirectProblem;
  readonly s: Schedule;
  /** Output vectors in this variant (regOc, or fewer for the last oc group). */
  readonly ocb: number;
  /** Floats between the weight rows of consecutive reduction lanes, and between ic blocks. */
  readonly wstep: number;
  readonly wBlock: number;
  /** Undefined: interior kernel at a runtime column; else a special block at a fixed column. */
  readonly special?: { readonly ow0: number; readonly width: number };
  readonly epilogue: string;
  readonly steps: readonly EpilogueKind[];
}

export const MICROKERNEL_PARAMS =
  'const float* restrict ip, const float* restrict wp, float* restrict op, ' +
  'int nfull, int tail, int ih0, int iw0, int kh0, int kh1, int first, int last, int lastq, ' +
  'const float* bias, const float* res, const float* gate, const float* prm';

/** Input column offsets (floats, from column 0 of the row) of the taps of column j at kw, or undefined when out of bounds. */
export function tapOffset(
  p: { sw: number; padL: number; dw: number; inW: number; in: { pix: number } },
  ow: number,
  kw: number,
): number | undefined {
  const iw = ow * p.sw - p.padL + kw * p.dw;
  return iw < 0 || iw >= p.inW ? undefined : iw * p.in.pix;
}

function fmaStep(k: MicrokernelSpec, wl: string, columns: readonly { j: number; addr: string }[]): string[] {
  const v = `vt${k.p.vec}`;
  const out: string[] = [`const float* wl = ${wl};`];
  out.push(Array.from({ length: k.ocb }, (_, i) => `${v}_t w${i} = ${v}_load(wl + ${i * k.p.vec});`).join(' '));
  for (const { j, addr } of columns) {
    const fmas = Array.from({ length: k.ocb }, (_, i) => `c${i}_${j} = ${v}_fma(b, w${i}, c${i}_${j});`).join(' ');
    out.push(`{ ${v}_t b = ${v}_set1(${addr}); ${fmas} }`);
  }
  return out;
}

function laneLoop(k: MicrokernelSpec, lanes: number, wBase: string, columns: readonly { j: number; addr: string }[]): string[] {
  const unroll = Math.min(k.s.unroll, lanes);
  return [
    `#pragma GCC unroll ${unroll}`,
    `for (int l = 0; l < ${lanes}; ++l) {`,
    ...fmaStep(k, `${wBase} + (long)l * ${k.wstep}`, columns).map((x) => '  ' + x),
    '}',
  ];
}

function reductionBlock(k: MicrokernelSpec, lanes: number, icb: string): string[] {
  const { p } = k;
  // packed weights store only the real lanes of a partial last ic block (dense, so a 3-channel
  // first layer does not stride over 13 zero lanes per tap); B rows are indexed by k directly
  const laneStride = p.weights === 'packed' ? lanes : p.vec;
  const width = k.special?.width ?? k.s.regCols;
  // reduction lane l = input channel: adjacent floats when blocked, a whole plane apart in NCHW input
  const lane = p.in.lane === 1 ? 'l' : `l * ${p.in.lane}`;
  const body: string[] = [];
  if (!k.special) {
    const cols = Array.from({ length: width }, (_, j) => ({ j, addr: `ipk[${lane} + ${j * p.sw * p.in.pix}]` }));
    body.push(
      `#pragma GCC unroll ${p.kw}`,
      `for (int kw = 0; kw < ${p.kw}; ++kw) {`,
      `  const float* ipk = ipr + (long)kw * ${p.dw * p.in.pix};`,
      `  const float* wpk = wpr + (long)kw * ${laneStride * k.wstep};`,
      ...laneLoop(k, lanes, 'wpk', cols).map((x) => '  ' + x),
      '}',
    );
  } else {
    for (let kw = 0; kw < p.kw; kw++) {
      const cols = [];
      for (let j = 0; j < width; j++) {
        const off = tapOffset(p, k.special.ow0 + j, kw);
        if (off !== undefined) cols.push({ j, addr: `ipr[${lane} + ${off}]` });
      }
      if (cols.length === 0) continue;
      body.push(`{ /* kw = ${kw} */`, ...laneLoop(k, lanes, `wpr + ${kw * laneStride * k.wstep}`, cols).map((x) => '  ' + x), '}');
    }
  }
  const colStart = k.special ? '' : ` + (long)iw0 * ${p.in.pix}`;
  return [
    '{',
    `  const float* ipc = ip + (long)(${icb}) * ${p.in.block};`,
    `  const float* wpc = wp + (long)(${icb}) * ${k.wBlock};`,
    '  for (int kh = kh0; kh < kh1; ++kh) {',
    `    const float* ipr = ipc + (long)(ih0 + kh * ${p.dh}) * ${p.in.row}${colStart};`,
    `    const float* wpr = wpc + (long)kh * ${p.kw * laneStride * k.wstep};`,
    ...body.map((x) => '    ' + x),
    '  }',
    '}',
  ];
}

export function emitMicrokernel(k: MicrokernelSpec): string {
  const { p } = k;
  const v = `vt${p.vec}`;
  const width = k.special?.width ?? k.s.regCols;
  const acc: string[] = [];
  for (let i = 0; i < k.ocb; i++) for (let j = 0; j < width; j++) acc.push(`c${i}_${j}`);
  const at = (i: number, j: number) => i * p.out.block + j * p.out.pix;
  const each = (f: (i: number, j: number) => string) => {
    const lines: string[] = [];
    for (let i = 0; i < k.ocb; i++) for (let j = 0; j < width; j++) lines.push(f(i, j));
    return lines;
  };
  const arg = (kind: EpilogueKind, ptr: string) => (k.steps.includes(kind) ? ptr : '0');
  const keep =
    p.ocLanesLast < p.vec
      ? [
          `if (lastq) {`,
          ...Array.from({ length: width }, (_, j) => `  c${k.ocb - 1}_${j} = ${v}_keep(c${k.ocb - 1}_${j}, ${p.ocLanesLast});`),
          '}',
        ]
      : [];
  const lines = [
    `static __attribute__((noinline)) void ${k.name}(${MICROKERNEL_PARAMS}) {`,
    '  (void)iw0; (void)lastq; (void)bias; (void)res; (void)gate; (void)prm;',
    `  ${v}_t ${acc.join(', ')};`,
    '  if (first) {',
    ...each((i, j) => `    c${i}_${j} = ${v}_zero();`),
    '  } else {',
    ...each((i, j) => `    c${i}_${j} = ${v}_load(op + ${at(i, j)});`),
    '  }',
  ];
  // a single partial ic block (small-cin convs) never runs the full-block loop (nfull is 0)
  if (p.icBlocks > 1 || p.icLanesLast === p.vec) {
    lines.push('  for (int icb = 0; icb < nfull; ++icb)', ...reductionBlock(k, p.vec, 'icb').map((x) => '  ' + x));
  } else {
    lines.push('  (void)nfull;');
  }
  if (p.icLanesLast < p.vec) {
    lines.push('  if (tail)', ...reductionBlock(k, p.icLanesLast, 'nfull').map((x) => '  ' + x));
  }
  lines.push(
    '  if (last) {',
    ...each(
      (i, j) =>
        `    c${i}_${j} = ${k.epilogue}(c${i}_${j}, ${arg('bias', `bias + ${i * p.vec}`)}, ` +
        `${arg('residual_add', `res + ${at(i, j)}`)}, ${arg('channel_mul', `gate + ${i * p.vec}`)}, prm);`,
    ),
    ...keep.map((x) => '    ' + x),
    '  }',
    ...each((i, j) => `  ${v}_store(op + ${at(i, j)}, c${i}_${j});`),
    '}',
  );
  return lines.join('\n');
}
