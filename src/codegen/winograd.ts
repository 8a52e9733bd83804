/**
 * Winograd F(4×4, 3×3) conv kernels (space/winograd.ts says which convs and what the knobs mean).
 * The weight transform U = G g Gᵀ runs once, in `<sym>_pack_weight` (double precision, rounded
 * once to float). `<sym>_run` then runs three work-shared loops in the caller's team, separated by
 * their implicit barriers, with V and M in the caller's workspace (ABI 2):
 *  1. input transform: per (image, ic block, tile) V = Bᵀ d B of the 6×6 input tile (zero outside
 *     the image: that is the padding), scattered to V[b][ξ][tile][ic], a vector of V channels each;
 *  2. 36 GEMMs: per chunk of (image, ξ, oc tile, tile block) register-blocked microkernels
 *     accumulate regOc oc vectors × regCols tiles over all input channels, broadcasting V and
 *     loading U[ξ][oc group][ic][regOc][V], into M[b][ξ][oc vector][tile][V];
 *  3. output transform: per (image, oc vector, tile) Y = Aᵀ m A, the fused epilogue on each of the
 *     4×4 output vectors, edge tiles cropped to the image.
 * The GEMMs hold 4× fewer multiply-adds than the direct conv's (36 per 16 outputs instead of 144),
 * paid for by the transforms' passes over memory; tuning measures which wins.
 */
import type { EpilogueKind, WorkloadShape } from '../ir/workload.js';
import type { Schedule } from '../space/knobs.js';
import { WINO_M, WINO_POINTS, WINO_T, winogradCounts, winogradProblem, type WinogradProblem } from '../space/winograd.js';
import { emitTeamEntry, kernelParams } from './team-entry.js';
import { emitTransform2d, gMatrixLiteral, WINO_AT, WINO_BT } from './winograd-transforms.js';

const align64 = (bytes: number) => Math.ceil(bytes / 64) * 64;

/** The caller's scratch: transformed input V at 0, GEMM output M after it. */
export interface WinogradWorkspace {
  readonly mOffset: number;
  readonly bytes: number;
}

export function winogradWorkspace(p: WinogradProblem): WinogradWorkspace {
  const vBytes = align64(p.batch * WINO_POINTS * p.tiles * p.cinPad * 4);
  const mBytes = align64(p.batch * WINO_POINTS * p.ocVecs * p.tiles * p.vec * 4);
  return { mOffset: vBytes, bytes: vBytes + mBytes };
}

/** Floats of one (ξ, oc group) slot of U: [ic][regOc vectors][V] (the last group uses only its own vectors), and of all of U. */
export function winogradWeightLayout(p: WinogradProblem, s: Schedule): { slot: number; weightFloats: number } {
  const slot = p.cin * s.regOc * p.vec;
  return { slot, weightFloats: WINO_POINTS * winogradCounts(p, s).ocGroups * slot };
}

/** `<name>(OIHW weights, U)`: the pack-time weight transform U = G g Gᵀ per (oc, ic), padded oc lanes zero. */
export function emitWinogradPackWeight(name: string, w: WorkloadShape, s: Schedule): string {
  const p = winogradProblem(w, s.vec);
  const c = winogradCounts(p, s);
  const { slot, weightFloats } = winogradWeightLayout(p, s);
  const v = p.vec;
  const tailOcb = p.ocVecs - (c.ocGroups - 1) * s.regOc;
  return [
    `void ${name}(const float* src, float* dst) {`,
    `  static const double G[${WINO_T}][3] = ${gMatrixLiteral()};`,
    `  for (long i = 0; i < ${weightFloats}; ++i) dst[i] = 0.0f;`,
    `  for (int q = 0; q < ${c.ocGroups}; ++q) {`,
    `    const int ocb = q == ${c.ocGroups - 1} ? ${tailOcb} : ${s.regOc};`,
    `    for (int ic = 0; ic < ${p.cin}; ++ic) for (int i = 0; i < ocb; ++i) for (int lane = 0; lane < ${v}; ++lane) {`,
    `      const int oc = (q * ${s.regOc} + i) * ${v} + lane;`,
    `      if (oc >= ${p.cout}) continue;`,
    `      const float* g = src + ((long)oc * ${p.cin} + ic) * 9;`,
    `      double t[${WINO_T}][3], u;`,
    `      for (int r = 0; r < ${WINO_T}; ++r) for (int k = 0; k < 3; ++k)`,
    '        t[r][k] = G[r][0] * g[k] + G[r][1] * g[3 + k] + G[r][2] * g[6 + k];',
    `      for (int r = 0; r < ${WINO_T}; ++r) for (int x = 0; x < ${WINO_T}; ++x) {`,
    '        u = t[r][0] * G[x][0] + t[r][1] * G[x][1] + t[r][2] * G[x][2];',
    `        dst[((long)(r * ${WINO_T} + x) * ${c.ocGroups} + q) * ${slot} + ((long)ic * ocb + i) * ${v} + lane] = (float)u;`,
    '      }',
    '    }',
    '  }',
    '}',
  ].join('\n');
}

const tileName = (prefix: string) => (i: number, j: number) => `${prefix}${i}_${j}`;

function grid(n: number, m: number, f: (i: number, j: number) => string): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) for (let j = 0; j < m; j++) out.push(f(i, j));
  return out;
}

/** Phase 1: one (image, ic block, tile) per iteration. */
function inputTransform(p: WinogradProblem): string[] {
  const v = `vt${p.vec}`,
    V = p.vec,
    T = WINO_T;
  const d = tileName('d');
  const at = (r: number, c: number) => `src + ((long)(ih0 + ${r}) * ${p.w} + iw0 + ${c}) * ${V}`;
  return [
    '#pragma omp for schedule(static)',
    `for (long t = 0; t < ${p.batch * p.icBlocks * p.tiles}; ++t) {`,
    `  const int tile = (int)(t % ${p.tiles}), icb = (int)(t / ${p.tiles} % ${p.icBlocks}), b = (int)(t / ${p.tiles * p.icBlocks});`,
    `  const int ih0 = tile / ${p.tilesW} * ${WINO_M} - ${p.padT}, iw0 = tile % ${p.tilesW} * ${WINO_M} - ${p.padL};`,
    `  const float* src = in + (long)(b * ${p.icBlocks} + icb) * ${p.h * p.w * V};`,
    `  ${v}_t ${grid(T, T, d).join(', ')};`,
    `  if (ih0 >= 0 && iw0 >= 0 && ih0 + ${T} <= ${p.h} && iw0 + ${T} <= ${p.w}) {`,
    ...grid(T, T, (r, c) => `    ${d(r, c)} = ${v}_load(${at(r, c)});`),
    '  } else {',
    ...grid(
      T,
      T,
      (r, c) =>
        `    ${d(r, c)} = (unsigned)(ih0 + ${r}) < ${p.h}u && (unsigned)(iw0 + ${c}) < ${p.w}u ? ${v}_load(${at(r, c)}) : ${v}_zero();`,
    ),
    '  }',
    ...emitTransform2d(p.vec, WINO_BT, 'd', 'v').map((x) => '  ' + x),
    `  float* dst = vt + ((long)b * ${WINO_POINTS * p.tiles} + tile) * ${p.cinPad} + (long)icb * ${V};`,
    ...grid(T, T, (i, j) => `  ${v}_store(dst + ${(i * T + j) * p.tiles * p.cinPad}, v${i}_${j});`),
    '}',
  ];
}

/** One GEMM microkernel: ocb oc vectors × width tiles at one ξ, over all input channels. */
function gemmMicrokernel(name: string, p: WinogradProblem, s: Schedule, ocb: number, width: number): string {
  const v = `vt${p.vec}`,
    V = p.vec;
  const acc = grid(ocb, width, (i, j) => `c${i}_${j}`);
  const fmas = (j: number) => Array.from({ length: ocb }, (_, i) => `c${i}_${j} = ${v}_fma(x, w${i}, c${i}_${j});`).join(' ');
  return [
    `static __attribute__((noinline)) void ${name}(const float* restrict vp, const float* restrict up, float* restrict mp) {`,
    `  ${v}_t ${acc.map((a) => `${a} = ${v}_zero()`).join(', ')};`,
    `  #pragma GCC unroll ${Math.max(1, Math.min(s.unroll, p.cin))}`,
    `  for (int ic = 0; ic < ${p.cin}; ++ic) {`,
    `    const float* wl = up + (long)ic * ${ocb * V};`,
    '    ' + Array.from({ length: ocb }, (_, i) => `const ${v}_t w${i} = ${v}_load(wl + ${i * V});`).join(' '),
    ...Array.from({ length: width }, (_, j) => `    { const ${v}_t x = ${v}_set1(vp[${j * p.cinPad} + ic]); ${fmas(j)} }`),
    '  }',
    ...grid(ocb, width, (i, j) => `  ${v}_store(mp + ${i * p.tiles * V + j * V}, c${i}_${j});`),
    '}',
  ].join('\n');
}

/** The GEMM chunk index's axes, least significant first (the image is the most significant, after them). */
function gemmOrder(s: Schedule, ocTiles: number, colTiles: number): [string, number][] {
  return s.parallelAxis === 'oc'
    ? [
        ['colT', colTiles],
        ['ocT', ocTiles],
        ['xi', WINO_POINTS],
      ]
    : [
        ['ocT', ocTiles],
        ['xi', WINO_POINTS],
        ['colT', colTiles],
      ];
}

/** Phase 2: the 36 GEMMs, one chunk of (image, ξ, oc tile, tile block) per iteration. */
function gemms(sym: string, p: WinogradProblem, s: Schedule): { kernels: string[]; loop: string[] } {
  const c = winogradCounts(p, s);
  const { slot } = winogradWeightLayout(p, s);
  const tailOcb = p.ocVecs - (c.ocGroups - 1) * s.regOc;
  const tailCols = p.tiles - (c.colBlocks - 1) * s.regCols;
  const ocbs = [...new Set([s.regOc, tailOcb])],
    widths = [...new Set([s.regCols, tailCols])];
  const name = (ocb: number, width: number) => `${sym}_wg_q${ocb}_c${width}`;
  const kernels = ocbs.flatMap((ocb) => widths.map((width) => gemmMicrokernel(name(ocb, width), p, s, ocb, width)));
  const call = (ocb: number, width: number) => `${name(ocb, width)}(vp, up, mp);`;
  const byWidth = (ocb: number) =>
    widths.length === 1 ? call(ocb, s.regCols) : `if (blk == ${c.colBlocks - 1}) ${call(ocb, tailCols)} else ${call(ocb, s.regCols)}`;
  const dispatch =
    ocbs.length === 1 ? byWidth(s.regOc) : `if (q == ${c.ocGroups - 1}) { ${byWidth(tailOcb)} } else { ${byWidth(s.regOc)} }`;
  const body = [
    `const float* vp = vt + ((long)(b * ${WINO_POINTS} + xi) * ${p.tiles} + (long)blk * ${s.regCols}) * ${p.cinPad};`,
    `const float* up = w + ((long)xi * ${c.ocGroups} + q) * ${slot};`,
    `float* mp = mt + (((long)(b * ${WINO_POINTS} + xi) * ${p.ocVecs} + (long)q * ${s.regOc}) * ${p.tiles} ` +
      `+ (long)blk * ${s.regCols}) * ${p.vec};`,
    dispatch,
  ];
  const qLoop = 'for (int q = q0; q < q1; ++q)',
    kLoop = 'for (int blk = k0; blk < k1; ++blk)';
  const loops = s.loopOrder === 'oc_outer' ? [qLoop, kLoop] : [kLoop, qLoop];
  const loop = [
    '#pragma omp for schedule(static)',
    `for (long t = 0; t < ${c.chunks}; ++t) {`,
    '  long rest = t;',
    ...gemmOrder(s, c.ocTiles, c.colTiles).map(([axis, n]) => `  const int ${axis} = (int)(rest % ${n}); rest /= ${n};`),
    '  const int b = (int)rest;',
    `  const int q0 = ocT * ${s.tileOc}, q1 = q0 + ${s.tileOc} < ${c.ocGroups} ? q0 + ${s.tileOc} : ${c.ocGroups};`,
    `  const int k0 = colT * ${s.tileCols}, k1 = k0 + ${s.tileCols} < ${c.colBlocks} ? k0 + ${s.tileCols} : ${c.colBlocks};`,
    ...loops.map((l) => '  ' + l),
    '  {',
    ...body.map((x) => '    ' + x),
    '  }',
    '}',
  ];
  return { kernels, loop };
}

/** Phase 3: one (image, oc vector, tile) per iteration; the epilogue runs on each cropped output vector. */
function outputTransform(p: WinogradProblem, steps: readonly EpilogueKind[], epilogue: string): string[] {
  const v = `vt${p.vec}`,
    V = p.vec,
    T = WINO_T;
  const has = (k: EpilogueKind) => steps.includes(k);
  const pointStride = p.ocVecs * p.tiles * V;
  const lines = [
    '#pragma omp for schedule(static)',
    `for (long t = 0; t < ${p.batch * p.ocVecs * p.tiles}; ++t) {`,
    `  const int tile = (int)(t % ${p.tiles}), o = (int)(t / ${p.tiles} % ${p.ocVecs}), b = (int)(t / ${p.tiles * p.ocVecs});`,
    `  const int oh0 = tile / ${p.tilesW} * ${WINO_M}, ow0 = tile % ${p.tilesW} * ${WINO_M};`,
    `  const float* ms = mt + (((long)b * ${WINO_POINTS * p.ocVecs} + o) * ${p.tiles} + tile) * ${V};`,
    ...grid(T, T, (i, j) => `  const ${v}_t m${i}_${j} = ${v}_load(ms + ${(i * T + j) * pointStride});`),
    ...emitTransform2d(p.vec, WINO_AT, 'm', 'y').map((x) => '  ' + x),
    `  float* op = out + (long)(b * ${p.ocVecs} + o) * ${p.oh * p.ow * V};`,
    `  const float* rp = ${has('residual_add') ? `res + (op - out)` : '0'};`,
    `  const float* bq = ${has('bias') ? `bias + (long)o * ${V}` : '0'};`,
    `  const float* gq = ${has('channel_mul') ? `gate + (long)b * ${p.ocVecs * V} + (long)o * ${V}` : '0'};`,
    '  (void)rp; (void)bq; (void)gq;',
  ];
  for (let i = 0; i < WINO_M; i++) {
    for (let j = 0; j < WINO_M; j++) {
      const keep = p.ocLanesLast < V ? ` if (o == ${p.ocVecs - 1}) x = ${v}_keep(x, ${p.ocLanesLast});` : '';
      lines.push(
        `  if (oh0 + ${i} < ${p.oh} && ow0 + ${j} < ${p.ow}) {`,
        `    const long at = ((long)(oh0 + ${i}) * ${p.ow} + ow0 + ${j}) * ${V};`,
        `    ${v}_t x = ${epilogue}(y${i}_${j}, bq, rp ? rp + at : 0, gq, prm);${keep}`,
        `    ${v}_store(op + at, x);`,
        '  }',
      );
    }
  }
  lines.push('}');
  return lines;
}

/** The Winograd candidate's microkernels and `<sym>_run` (its transforms and GEMMs in the caller's team). */
export function emitWinograd(sym: string, w: WorkloadShape, s: Schedule, steps: readonly EpilogueKind[], epilogue: string): string {
  const p = winogradProblem(w, s.vec);
  const ws = winogradWorkspace(p);
  const g = gemms(sym, p, s);
  const body = [
    `static void ${sym}_tiles(${kernelParams('in')}) {`,
    '  (void)bias; (void)res; (void)gate; (void)prm;',
    '  float* vt = (float*)workspace;',
    `  float* mt = (float*)((char*)workspace + ${ws.mOffset});`,
    ...inputTransform(p).map((x) => '  ' + x),
    ...g.loop.map((x) => '  ' + x),
    ...outputTransform(p, steps, epilogue).map((x) => '  ' + x),
    '}',
  ];
  return [...g.kernels, '', body.join('\n'), '', emitTeamEntry(`${sym}_run`, `${sym}_tiles`, 'in')].join('\n');
}
