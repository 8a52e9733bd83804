/**
 * Depthwise conv (groups = cin = cout): channels live in the vector, so there is no cross-channel
 * reduction to block. The register tile is regCols output pixels of one channel vector; each tap
 * loads its weight vector once and feeds regCols FMAs with contiguous input vectors (the whole
 * reduction is kh × kw taps, straight from L1). Column blocks touching padding are special
 * kernels with their valid taps fixed at generation time, as in the direct problem.
 */
import { emitTeamEntry, kernelParams } from './team-entry.js';
import type { DepthwiseProblem } from '../space/problem.js';
import { parallelOrder, tileCounts, type Schedule } from '../space/knobs.js';
import type { EpilogueKind } from '../ir/workload.js';
import { tapOffset } from './microkernel.js';
import { specialBlocks } from './direct.js';

const PARAMS =
  'const float* restrict ip, const float* restrict wp, float* restrict op, int ih0, int iw0, int kh0, int kh1, ' +
  'int lastc, const float* bias, const float* res, const float* gate, const float* prm';

function emitKernel(
  name: string,
  p: DepthwiseProblem,
  steps: readonly EpilogueKind[],
  epilogue: string,
  width: number,
  special?: { ow0: number },
): string {
  const v = `vt${p.vec}`;
  const js = Array.from({ length: width }, (_, j) => j);
  // Narrow blocks would be one serial FMA chain per pixel (latency-bound): split the kw taps over
  // independent partial accumulators, summed before the epilogue.
  const chains = Math.max(1, Math.min(p.kw, Math.ceil(8 / width)));
  const acc = (j: number, kw: number) => (chains === 1 ? `c${j}` : `c${j}_${kw % chains}`);
  const taps: string[] = [];
  for (let kw = 0; kw < p.kw; kw++) {
    const fmas: string[] = [];
    for (const j of js) {
      const off = special ? tapOffset(p, special.ow0 + j, kw) : (j * p.sw + kw * p.dw) * p.vec;
      if (off !== undefined) fmas.push(`${acc(j, kw)} = ${v}_fma(${v}_load(ipr + ${off}), wv, ${acc(j, kw)});`);
    }
    if (fmas.length) taps.push(`{ const ${v}_t wv = ${v}_load(wpr + ${kw * p.vec}); ${fmas.join(' ')} }`);
  }
  const partials = js.flatMap((j) => Array.from({ length: chains }, (_, k) => (chains === 1 ? `c${j}` : `c${j}_${k}`)));
  const sums =
    chains === 1
      ? []
      : js.map(
          (j) => `  ${v}_t c${j} = ${Array.from({ length: chains }, (_, k) => `c${j}_${k}`).reduce((a, b) => `${v}_add(${a}, ${b})`)};`,
        );
  const arg = (kind: EpilogueKind, ptr: string) => (steps.includes(kind) ? ptr : '0');
  const keep =
    p.chanLanesLast < p.vec ? [`  if (lastc) { ${js.map((j) => `c${j} = ${v}_keep(c${j}, ${p.chanLanesLast});`).join(' ')} }`] : [];
  return [
    `static __attribute__((noinline)) void ${name}(${PARAMS}) {`,
    '  (void)iw0; (void)lastc; (void)bias; (void)res; (void)gate; (void)prm;',
    `  ${v}_t ${partials.map((c) => `${c} = ${v}_zero()`).join(', ')};`,
    '  for (int kh = kh0; kh < kh1; ++kh) {',
    `    const float* ipr = ip + (long)(ih0 + kh * ${p.dh}) * ${p.in.row}${special ? '' : ` + (long)iw0 * ${p.vec}`};`,
    `    const float* wpr = wp + kh * ${p.kw * p.vec};`,
    ...taps.map((x) => '    ' + x),
    '  }',
    ...sums,
    ...js.map(
      (j) =>
        `  c${j} = ${epilogue}(c${j}, ${arg('bias', 'bias')}, ${arg('residual_add', `res + ${j * p.vec}`)}, ${arg('channel_mul', 'gate')}, prm);`,
    ),
    ...keep,
    ...js.map((j) => `  ${v}_store(op + ${j * p.vec}, c${j});`),
    '}',
  ].join('\n');
}

export function depthwiseWeightFloats(p: DepthwiseProblem): number {
  return p.chanVecs * p.kh * p.kw * p.vec;
}

export function emitDepthwise(sym: string, p: DepthwiseProblem, s: Schedule, steps: readonly EpilogueKind[], epilogue: string): string {
  const c = tileCounts(p, s);
  const specials = specialBlocks(p, s.regCols);
  const parts: string[] = [];
  const interiorUsed = specials.length < c.colBlocks;
  if (interiorUsed) parts.push(emitKernel(`${sym}_dw`, p, steps, epilogue, s.regCols));
  for (const sp of specials) parts.push(emitKernel(`${sym}_dw_b${sp.blk}`, p, steps, epilogue, sp.width, sp));
  const call = (name: string) => `${name}(ip, wp, o, ih0, blk * ${s.regCols * p.sw} - ${p.padL}, kh0, kh1, lastc, bq, rq, gq, prm)`;
  const tileLoops =
    s.loopOrder === 'oc_outer'
      ? ['for (int cb = c0; cb < c1; ++cb)', 'for (int r = r0; r < r1; ++r)', 'for (int blk = k0; blk < k1; ++blk) {']
      : ['for (int r = r0; r < r1; ++r)', 'for (int blk = k0; blk < k1; ++blk)', 'for (int cb = c0; cb < c1; ++cb) {'];
  parts.push(
    [
      `static void ${sym}_tiles(${kernelParams('in')}) {`,
      '  (void)workspace; /* depthwise needs no scratch: desc workspace_bytes = 0 */',
      `  #pragma omp for schedule(static)`,
      `  for (long t = 0; t < ${c.chunks}; ++t) {`,
      '    long rest = t;',
      ...parallelOrder(p, s).map(([name, n]) => `    const int ${name} = (int)(rest % ${n}); rest /= ${n};`),
      '    const int b = (int)rest;',
      `    const int c0 = ocT * ${s.tileOc}, c1 = c0 + ${s.tileOc} < ${p.chanVecs} ? c0 + ${s.tileOc} : ${p.chanVecs};`,
      `    const int r0 = rowT * ${s.tileRows}, r1 = r0 + ${s.tileRows} < ${p.rows} ? r0 + ${s.tileRows} : ${p.rows};`,
      `    const int k0 = colT * ${s.tileCols}, k1 = k0 + ${s.tileCols} < ${c.colBlocks} ? k0 + ${s.tileCols} : ${c.colBlocks};`,
      ...tileLoops.map((x) => '    ' + x),
      `      const int ih0 = r * ${p.sh} - ${p.padT};`,
      `      int kh0 = ih0 < 0 ? (-ih0 + ${p.dh - 1}) / ${p.dh} : 0;`,
      `      int kh1 = ${p.inH - 1} - ih0 < 0 ? 0 : (${p.inH - 1} - ih0) / ${p.dh} + 1;`,
      `      if (kh1 > ${p.kh}) kh1 = ${p.kh};`,
      `      const float* ip = in + (long)b * ${p.in.batch} + (long)cb * ${p.in.block};`,
      `      const float* wp = w + (long)cb * ${p.kh * p.kw * p.vec};`,
      `      float* o = out + (long)b * ${p.out.batch} + (long)cb * ${p.out.block} + (long)r * ${p.out.row} + (long)blk * ${s.regCols * p.out.pix};`,
      `      const float* bq = bias ? bias + (long)cb * ${p.vec} : 0;`,
      `      const float* rq = res ? res + (o - out) : 0;`,
      `      const float* gq = gate ? gate + (long)b * ${p.gateBatch} + (long)cb * ${p.vec} : 0;`,
      `      const int lastc = cb == ${p.chanVecs - 1};`,
      '      switch (blk) {',
      ...specials.map((sp) => `        case ${sp.blk}: ${call(`${sym}_dw_b${sp.blk}`)}; break;`),
      interiorUsed ? `        default: ${call(`${sym}_dw`)}; break;` : '        default: break;',
      '      }',
      '    }',
      '  }',
      '}',
    ].join('\n'),
  );
  parts.push(emitTeamEntry(`${sym}_run`, `${sym}_tiles`, 'in'));
  return parts.join('\n\n');
}
