/**
 * The direct problem's run function: the schedule's tile loops around the microkernels.
 * One OpenMP loop runs over all cache tiles (batch × group × oc tiles × row tiles × column tiles,
 * ordered by the parallel axis) with schedule(static), so each thread gets a contiguous range of
 * tiles; inside a tile the reduction passes (ic tiles) are outermost, then oc groups / rows /
 * column blocks in the schedule's loop order. batch_matmul with transposed B first packs every
 * (batch, oc group) B^T panel once into the caller's workspace (a parallel loop, then the tiles;
 * that packing is part of the timed work). A kernel never allocates: see directWorkspace.
 * Small-cin convs also export `<sym>_run_nchw`, the same run on a plain NCHW input (compactInput).
 */
import type { DirectProblem } from '../space/problem.js';
import { parallelOrder, tileCounts, type Schedule } from '../space/knobs.js';
import type { EpilogueKind } from '../ir/workload.js';
import { emitMicrokernel, tapOffset, type MicrokernelSpec } from './microkernel.js';
import { emitTeamEntry, kernelArgs, kernelParams } from './team-entry.js';

/** What special-block detection needs of a problem (direct or depthwise). */
export interface ColumnGeometry {
  readonly cols: number;
  readonly kw: number;
  readonly sw: number;
  readonly padL: number;
  readonly dw: number;
  readonly inW: number;
  readonly in: { readonly pix: number };
}

export interface DirectLayout {
  /**
   * Floats of packed weight per (group, oc group) slot; 0 for batch_matmul B. A slot holds
   * [ic block][kh][kw][lane][regOc vectors][V] where the last ic block keeps only its real lanes.
   */
  readonly slot: number;
  readonly weightFloats: number;
}

export function directWeightLayout(p: DirectProblem, s: Schedule): DirectLayout {
  const c = tileCounts(p, s);
  const slot = ((c.icBlocks - 1) * p.vec + p.icLanesLast) * p.kh * p.kw * s.regOc * p.vec;
  return { slot, weightFloats: p.weights === 'packed' ? p.groups * c.ocGroups * slot : 0 };
}

/** Column blocks handled by a special (compile-time column) kernel: padding taps or a short last block. */
export function specialBlocks(p: ColumnGeometry, regCols: number): { blk: number; ow0: number; width: number }[] {
  const out = [];
  const blocks = Math.ceil(p.cols / regCols);
  for (let blk = 0; blk < blocks; blk++) {
    const ow0 = blk * regCols,
      width = Math.min(regCols, p.cols - ow0);
    let clean = width === regCols;
    for (let j = 0; clean && j < width; j++) {
      for (let kw = 0; kw < p.kw; kw++) if (tapOffset(p, ow0 + j, kw) === undefined) clean = false;
    }
    if (!clean) out.push({ blk, ow0, width });
  }
  return out;
}

function variantSuffix(ocb: number) {
  return `q${ocb}`;
}

const align64 = (bytes: number) => Math.ceil(bytes / 64) * 64;

/**
 * The scratch a direct kernel needs, in bytes from the workspace pointer (veltair_kernel.h): the
 * small-cin stem's dense NCHW copy of its input at 0, batch_matmul's B^T panels after it. The
 * same for every thread count, so the runtime sizes its region once per plan.
 */
export interface DirectWorkspace {
  readonly compactBytes: number;
  readonly panelOffset: number;
  readonly panelBytes: number;
  readonly bytes: number;
}

export function directWorkspace(p: DirectProblem, s: Schedule): DirectWorkspace {
  const c = tileCounts(p, s);
  const compactBytes = p.inputLayout === 'nchw' ? align64(p.batch * p.icLanesLast * p.inH * p.inW * 4) : 0;
  const panelQ = c.icBlocks * p.vec * s.regOc * p.vec;
  const panelBytes = p.weights === 'b_transposed' ? align64(p.batch * c.ocGroups * panelQ * 4) : 0;
  return { compactBytes, panelOffset: compactBytes, panelBytes, bytes: compactBytes + panelBytes };
}

export function emitDirect(sym: string, p: DirectProblem, s: Schedule, steps: readonly EpilogueKind[], epilogue: string): string {
  const c = tileCounts(p, s);
  const layout = directWeightLayout(p, s);
  const tailOcb = p.ocVecs - (c.ocGroups - 1) * s.regOc;
  const variants = [...new Set([s.regOc, tailOcb])];
  const transposed = p.weights === 'b_transposed';
  const kpad = c.icBlocks * p.vec;
  const nPad = p.ocVecs * p.vec;
  const wstepOf = (ocb: number) => (p.weights === 'packed' ? ocb * p.vec : p.weights === 'b_rows' ? nPad : s.regOc * p.vec);
  const specials = specialBlocks(p, s.regCols);
  const parts: string[] = [];
  for (const ocb of variants) {
    const wstep = wstepOf(ocb);
    const base: Omit<MicrokernelSpec, 'name'> = {
      p,
      s,
      ocb,
      wstep,
      wBlock: p.kh * p.kw * p.vec * wstep,
      epilogue,
      steps,
    };
    const sfx = variantSuffix(ocb);
    const interiorUsed = specials.length < c.colBlocks;
    if (interiorUsed) parts.push(emitMicrokernel({ ...base, name: `${sym}_ukr_${sfx}` }));
    for (const sp of specials) parts.push(emitMicrokernel({ ...base, name: `${sym}_ukr_${sfx}_b${sp.blk}`, special: sp }));
    const call = (name: string) => `${name}(ip, wp, op, nfull, tail, ih0, iw0, kh0, kh1, first, last, lastq, bias, res, gate, prm)`;
    parts.push(
      [
        `static inline void ${sym}_block_${sfx}(int blk, const float* ip, const float* wp, float* op, int nfull, int tail, ` +
          'int ih0, int kh0, int kh1, int first, int last, int lastq, const float* bias, const float* res, const float* gate, const float* prm) {',
        `  int iw0 = blk * ${s.regCols * p.sw} - ${p.padL};`,
        `  op += (long)blk * ${s.regCols * p.out.pix};`,
        `  if (res) res += (long)blk * ${s.regCols * p.out.pix};`,
        '  switch (blk) {',
        ...specials.map((sp) => `    case ${sp.blk}: ${call(`${sym}_ukr_${sfx}_b${sp.blk}`)}; return;`),
        interiorUsed ? `    default: ${call(`${sym}_ukr_${sfx}`)}; return;` : '    default: (void)iw0; return;',
        '  }',
        '}',
      ].join('\n'),
    );
  }
  parts.push(emitRun(sym, p, s, layout, tailOcb, kpad, nPad, transposed));
  return parts.join('\n\n');
}

function decodeTile(p: DirectProblem, s: Schedule): string[] {
  const lines = ['long rest = t;'];
  for (const [name, n] of parallelOrder(p, s)) lines.push(`const int ${name} = (int)(rest % ${n}); rest /= ${n};`);
  lines.push('const int b = (int)rest;');
  return lines;
}

function emitRun(
  sym: string,
  p: DirectProblem,
  s: Schedule,
  layout: DirectLayout,
  tailOcb: number,
  kpad: number,
  nPad: number,
  transposed: boolean,
): string {
  const c = tileCounts(p, s);
  const panelQ = kpad * s.regOc * p.vec;
  const realN = (p.ocVecs - 1) * p.vec + p.ocLanesLast;
  const wBase =
    p.weights === 'packed'
      ? `w + (long)(g * ${c.ocGroups} + q) * ${layout.slot} + (long)icb0 * ${p.kh * p.kw * p.vec} ` +
        `* (q == ${c.ocGroups - 1} ? ${tailOcb * p.vec} : ${s.regOc * p.vec})`
      : p.weights === 'b_rows'
        ? `w + (long)b * ${p.reduction * nPad} + (long)icb0 * ${p.vec * nPad} + (long)q * ${s.regOc * p.vec}`
        : `panel + ((long)b * ${c.ocGroups} + q) * ${panelQ} + (long)icb0 * ${p.vec * s.regOc * p.vec}`;
  const call = (sfx: string) =>
    `${sym}_block_${sfx}(blk, ip, wq, oq, nfull, tail, ih0, kh0, kh1, first, last, lastq, ` + 'bq, rq, gq, prm)';
  const dispatch =
    tailOcb === s.regOc
      ? [`${call(variantSuffix(s.regOc))};`]
      : [`if (q == ${c.ocGroups - 1}) ${call(variantSuffix(tailOcb))}; else ${call(variantSuffix(s.regOc))};`];
  const rowSetup = [
    `const int ih0 = r * ${p.sh} - ${p.padT};`,
    `int kh0 = ih0 < 0 ? (-ih0 + ${p.dh - 1}) / ${p.dh} : 0;`,
    `int kh1 = ${p.inH - 1} - ih0 < 0 ? 0 : (${p.inH - 1} - ih0) / ${p.dh} + 1;`,
    `if (kh1 > ${p.kh}) kh1 = ${p.kh};`,
  ];
  const qSetup = [
    `const float* wq = ${wBase};`,
    `const long chan = (long)(g * ${p.ocVecs} + q * ${s.regOc}) * ${p.vec};`,
    `float* oq = out + (long)b * ${p.out.batch} + (long)g * ${p.out.group} + (long)q * ${s.regOc * p.out.block} + (long)r * ${p.out.row};`,
    `const float* bq = bias ? bias + chan : 0;`,
    `const float* rq = res ? res + (oq - out) : 0;`,
    `const float* gq = gate ? gate + (long)b * ${p.gateBatch} + chan : 0;`,
    `const int lastq = q == ${c.ocGroups - 1};`,
  ];
  const loops =
    s.loopOrder === 'oc_outer'
      ? [
          'for (int q = q0; q < q1; ++q)',
          'for (int r = r0; r < r1; ++r) {',
          ...rowSetup,
          'for (int blk = k0; blk < k1; ++blk) {',
          ...qSetup,
        ]
      : [
          'for (int r = r0; r < r1; ++r) {',
          ...rowSetup,
          'for (int blk = k0; blk < k1; ++blk)',
          'for (int q = q0; q < q1; ++q) {',
          ...qSetup,
        ];
  // Every (batch, oc group) panel once, [k][regOc·V] with zero columns past N and zero rows past K.
  const rv = s.regOc * p.vec;
  const packPanels = transposed
    ? [
        `#pragma omp for schedule(static)`,
        `for (long bq = 0; bq < ${p.batch * c.ocGroups}; ++bq) {`,
        `  const long b = bq / ${c.ocGroups}, q = bq % ${c.ocGroups};`,
        `  float* pq = panel + bq * ${panelQ};`,
        `  for (int i = 0; i < ${rv}; ++i) {`,
        `    const long n = q * ${rv} + i;`,
        `    const float* src = w + (b * ${realN} + n) * ${kpad};`,
        `    for (int k = 0; k < ${kpad}; ++k) pq[(long)k * ${rv} + i] = n < ${realN} && k < ${p.reduction} ? src[k] : 0.0f;`,
        '  }',
        '}',
      ]
    : [];
  const compact = p.inputLayout === 'nchw';
  const ws = directWorkspace(p, s);
  const tiles = [
    `static void ${sym}_tiles(${kernelParams('in')}) {`,
    ws.bytes === 0 ? '  (void)workspace;' : '',
    ...emitTiles(p, s, ws, transposed, packPanels, loops, dispatch),
    '}',
  ];
  if (!compact) return [...tiles, '', emitTeamEntry(`${sym}_run`, `${sym}_tiles`, 'in')].join('\n');
  // `<sym>_run_nchw`: the same tiles straight on the caller's plain NCHW input, which is exactly the
  // gathered copy `_run` builds (batch stride cin·H·W), so the graph plan can hand a stem its
  // natural-layout graph input: no reorder to NCHW[V]c before it and no gather back inside it.
  // `_run` keeps the gather in front of the tiles: tuning records measure it. A conv's workspace holds only that copy.
  return [
    ...tiles,
    '',
    ...compactInput(sym, p),
    '',
    emitTeamEntry(`${sym}_run`, `${sym}_compact`, 'in_blocked'),
    '',
    emitTeamEntry(`${sym}_run_nchw`, `${sym}_tiles`, 'in'),
  ].join('\n');
}

/** The run function's body after its prologue: one parallel loop over the cache tiles. */
function emitTiles(
  p: DirectProblem,
  s: Schedule,
  ws: DirectWorkspace,
  transposed: boolean,
  packPanels: readonly string[],
  loops: readonly string[],
  dispatch: readonly string[],
): string[] {
  const c = tileCounts(p, s);
  const lastBlockPartial = p.icLanesLast < p.vec;
  return [
    transposed ? `  float* panel = (float*)((char*)workspace + ${ws.panelOffset});` : '',
    '  {',
    ...packPanels.map((x) => '    ' + x),
    `    #pragma omp for schedule(static)`,
    `    for (long t = 0; t < ${c.chunks}; ++t) {`,
    ...decodeTile(p, s).map((x) => '      ' + x),
    `      const int q0 = ocT * ${s.tileOc}, q1 = q0 + ${s.tileOc} < ${c.ocGroups} ? q0 + ${s.tileOc} : ${c.ocGroups};`,
    `      const int r0 = rowT * ${s.tileRows}, r1 = r0 + ${s.tileRows} < ${p.rows} ? r0 + ${s.tileRows} : ${p.rows};`,
    `      const int k0 = colT * ${s.tileCols}, k1 = k0 + ${s.tileCols} < ${c.colBlocks} ? k0 + ${s.tileCols} : ${c.colBlocks};`,
    `      for (int it = 0; it < ${c.icTiles}; ++it) {`,
    `        const int icb0 = it * ${s.tileIc};`,
    `        const int nb = icb0 + ${s.tileIc} < ${c.icBlocks} ? ${s.tileIc} : ${c.icBlocks} - icb0;`,
    lastBlockPartial
      ? `        const int tail = icb0 + nb == ${c.icBlocks}; const int nfull = nb - tail;`
      : '        const int tail = 0; const int nfull = nb;',
    '        const int first = it == 0, last = it == ' + (c.icTiles - 1) + ';',
    `        const float* ip = in + (long)b * ${p.in.batch} + (long)g * ${p.in.group} + (long)icb0 * ${p.in.block};`,
    ...loops.map((x) => '        ' + x),
    ...dispatch.map((x) => '          ' + x),
    '        }',
    '        }',
    '      }',
    '    }',
    '  }',
  ];
}

/**
 * Small-cin convs (problem.ts smallCinInput) run on plain NCHW input, but `<sym>_run` takes the
 * ABI's NCHW[V]c (what the harness measures, and what a plan hands a stem whose input exists only
 * blocked): it first gathers the real channels into a dense NCHW copy in its workspace (timed with
 * the kernel; ~V/cin times less data for the reduction to walk than the blocked input it came
 * from), then runs the tiles on that copy. `<sym>_run_nchw` takes that copy from the caller.
 */
function compactInput(sym: string, p: DirectProblem): string[] {
  const cin = p.icLanesLast,
    plane = p.inH * p.inW,
    v = p.vec;
  return [
    `static void ${sym}_compact(${kernelParams('in_blocked')}) {`,
    '  float* in = (float*)workspace;',
    '  #pragma omp for schedule(static)',
    `  for (long i = 0; i < ${p.batch * cin}; ++i) {`,
    `    const float* src = in_blocked + (i / ${cin}) * ${plane * v} + (i % ${cin});`,
    `    float* dst = in + i * ${plane};`,
    `    for (long x = 0; x < ${plane}; ++x) dst[x] = src[x * ${v}];`,
    '  }',
    `  ${sym}_tiles(${kernelArgs('in')});`,
    '}',
  ];
}
