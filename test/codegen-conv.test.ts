/**
 * Property sweep: generated conv kernels agree with the plain C reference (checked inside the
 * harness, tolerance scaled to the reduction length) across odd sizes, strides, padding (incl.
 * rows with no valid taps), dilation, groups, depthwise, channel/width tails that do not divide
 * the tiles, every epilogue, and all three vector widths; grouped convs narrower than the vector
 * with their groups merged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EpilogueKind, WorkloadShape } from '../src/ir/workload.js';
import { makeCandidate, type Candidate } from '../src/space/candidate.js';
import { localityGreedy, parallelHeavy } from '../src/space/presets.js';
import { seededRng } from '../src/random.js';
import { repair, sampleSchedule, widthsFor } from '../src/space/knobs.js';
import { groupMerge } from '../src/space/problem.js';
import { detectTarget } from '../src/toolchain/target.js';
import { measureCandidates } from '../src/measure/measure-candidates.js';

interface ConvSpec {
  n?: number;
  cin: number;
  h: number;
  w: number;
  cout: number;
  k: [number, number];
  s?: [number, number];
  pads?: [number, number, number, number];
  d?: [number, number];
  groups?: number;
  epi?: EpilogueKind[];
}

export function conv(c: ConvSpec): WorkloadShape {
  const [kh, kw] = c.k,
    [sh, sw] = c.s ?? [1, 1],
    [dh, dw] = c.d ?? [1, 1];
  const pads = c.pads ?? [0, 0, 0, 0];
  return {
    op: 'conv2d',
    dtype: 'float32',
    n: c.n ?? 1,
    cin: c.cin,
    h: c.h,
    w: c.w,
    cout: c.cout,
    kh,
    kw,
    strideH: sh,
    strideW: sw,
    pads,
    dilationH: dh,
    dilationW: dw,
    groups: c.groups ?? 1,
    oh: Math.floor((c.h + pads[0] + pads[2] - ((kh - 1) * dh + 1)) / sh) + 1,
    ow: Math.floor((c.w + pads[1] + pads[3] - ((kw - 1) * dw + 1)) / sw) + 1,
    epilogue: c.epi ?? ['bias', 'relu'],
  };
}

const SHAPES: ConvSpec[] = [
  { cin: 20, h: 9, w: 11, cout: 37, k: [3, 3], pads: [1, 1, 1, 1] },
  { cin: 16, h: 15, w: 15, cout: 32, k: [3, 3], s: [2, 2], pads: [1, 1, 1, 1], epi: ['bias', 'residual_add', 'relu'] },
  { cin: 24, h: 7, w: 5, cout: 40, k: [1, 1], epi: ['bias'] },
  { cin: 17, h: 9, w: 9, cout: 33, k: [1, 1], s: [2, 2], epi: ['clip'] },
  { cin: 8, h: 13, w: 12, cout: 16, k: [5, 5], pads: [4, 4, 4, 4], d: [2, 2], epi: ['bias', 'leaky_relu'] },
  { cin: 5, h: 10, w: 9, cout: 7, k: [3, 1], s: [2, 1], pads: [1, 0, 0, 2], epi: ['sigmoid'] },
  { cin: 32, h: 8, w: 7, cout: 64, k: [3, 3], pads: [1, 1, 1, 1], groups: 2, epi: ['bias', 'hard_swish'] },
  { cin: 12, h: 6, w: 6, cout: 8, k: [3, 3], pads: [1, 1, 1, 1], groups: 4, epi: ['bias', 'silu'] },
  { cin: 40, h: 10, w: 9, cout: 40, k: [3, 3], pads: [1, 1, 1, 1], groups: 40, epi: ['bias', 'clip'] },
  { cin: 16, h: 11, w: 11, cout: 16, k: [3, 3], s: [2, 2], pads: [1, 1, 1, 1], groups: 16, epi: ['tanh'] },
  { cin: 24, h: 12, w: 13, cout: 24, k: [5, 5], pads: [2, 2, 2, 2], groups: 24, epi: ['bias', 'residual_add'] },
  { cin: 24, h: 9, w: 9, cout: 24, k: [3, 3], pads: [2, 2, 2, 2], d: [2, 2], groups: 24, epi: ['gelu'] },
  { cin: 8, h: 7, w: 7, cout: 16, k: [3, 3], pads: [1, 1, 1, 1], groups: 8, epi: ['bias', 'channel_mul'] },
  { n: 2, cin: 3, h: 19, w: 19, cout: 16, k: [7, 7], s: [2, 2], pads: [3, 3, 3, 3], epi: ['bias', 'relu'] },
  { cin: 16, h: 6, w: 6, cout: 16, k: [3, 3], epi: ['gelu_tanh'] },
  { cin: 4, h: 4, w: 4, cout: 20, k: [3, 3], pads: [3, 3, 3, 3], epi: ['bias', 'hard_sigmoid'] },
  { n: 2, cin: 33, h: 5, w: 31, cout: 18, k: [1, 3], pads: [0, 1, 0, 1], epi: ['bias', 'channel_mul', 'relu'] },
  { cin: 48, h: 14, w: 14, cout: 48, k: [3, 3], s: [2, 2], pads: [0, 0, 1, 1], groups: 48, epi: [] },
  { cin: 10, h: 13, w: 14, cout: 21, k: [3, 3], s: [2, 2], pads: [2, 2, 2, 2], d: [2, 2], epi: ['bias', 'relu'] },
  { cin: 64, h: 1, w: 1, cout: 16, k: [1, 1], epi: ['bias', 'relu'] },
  { cin: 1, h: 12, w: 10, cout: 17, k: [3, 3], pads: [1, 1, 1, 1], epi: ['bias'] },
  // small-cin convs read plain NCHW input (problem.ts smallCinInput): stems, odd widths, 1×1 (flat), dilation
  { cin: 3, h: 30, w: 27, cout: 64, k: [7, 7], s: [2, 2], pads: [3, 3, 3, 3], epi: ['bias', 'relu'] },
  { cin: 1, h: 17, w: 23, cout: 32, k: [7, 7], s: [2, 2], pads: [3, 3, 3, 3], epi: ['bias'] },
  { cin: 4, h: 15, w: 13, cout: 24, k: [7, 7], s: [2, 2], pads: [3, 2, 1, 3], epi: ['relu'] },
  { n: 2, cin: 3, h: 11, w: 14, cout: 32, k: [3, 3], pads: [1, 1, 1, 1], epi: ['bias', 'clip'] },
  { cin: 4, h: 16, w: 15, cout: 16, k: [3, 3], s: [2, 2], pads: [1, 1, 1, 1], epi: ['bias', 'residual_add'] },
  { cin: 3, h: 9, w: 10, cout: 40, k: [3, 3], s: [2, 2], pads: [0, 0, 1, 1], epi: ['bias', 'channel_mul'] },
  { cin: 2, h: 7, w: 9, cout: 20, k: [1, 1], epi: ['bias'] },
  { cin: 3, h: 13, w: 12, cout: 16, k: [3, 3], pads: [2, 2, 2, 2], d: [2, 2], epi: ['bias'] },
];

test('generated conv kernels match the reference across the shape sweep', { timeout: 600_000 }, async () => {
  const target = await detectTarget();
  const rng = seededRng(42);
  const cands: Candidate[] = [];
  SHAPES.forEach((spec, i) => {
    const w = conv(spec);
    const schedules = [parallelHeavy(w, target), localityGreedy(w, target, 1), sampleSchedule(w, target, rng)];
    // every width the workload allows, round-robin over the shapes, so AVX2 and scalar paths run too
    const widths = widthsFor(w, target);
    const vec = widths[i % widths.length]!;
    schedules.push(repair({ ...sampleSchedule(w, target, rng), vec }, w, target));
    for (const s of schedules) cands.push(makeCandidate(w, s, target));
  });
  assert.ok(cands.some((c) => c.schedule.vec === 8) && cands.some((c) => c.schedule.vec === 1));
  const dir = await mkdtemp(join(tmpdir(), 'veltair-test-conv-'));
  try {
    const results = await measureCandidates(cands, { cacheDir: dir, minTimeMs: 0, minRepeats: 1, maxRepeats: 1, timeoutMs: 60_000 });
    const bad = results
      .filter((r) => r.measurement.status !== 'ok')
      .map(
        (r) =>
          `${JSON.stringify(r.candidate.workload)} ${JSON.stringify(r.candidate.schedule)} → ` +
          `${r.measurement.status} ${r.measurement.message ?? ''} err=${r.measurement.maxAbsErr}`,
      );
    assert.deepEqual(bad, []);
    for (const r of results) assert.ok(r.measurement.maxAbsErr! <= r.measurement.tolerance!);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test(
  'grouped convs narrower than the vector run with merged groups (block-diagonal weights) and match the reference',
  { timeout: 600_000 },
  async () => {
    const target = await detectTarget();
    const rng = seededRng(7);
    const narrow: ConvSpec[] = [
      { cin: 48, h: 9, w: 10, cout: 48, k: [3, 3], pads: [1, 1, 1, 1], groups: 6, epi: ['bias', 'relu'] }, // RegNetY: 8 per group
      { n: 2, cin: 48, h: 11, w: 9, cout: 48, k: [3, 3], s: [2, 2], pads: [1, 1, 1, 1], groups: 6, epi: ['bias', 'channel_mul'] },
      { cin: 64, h: 7, w: 7, cout: 64, k: [3, 3], pads: [1, 1, 1, 1], groups: 16, epi: ['bias', 'residual_add', 'relu'] }, // ResNeXt: 4
      { cin: 32, h: 6, w: 5, cout: 64, k: [3, 3], pads: [1, 1, 1, 1], groups: 4, epi: ['bias'] }, // 8 in, 16 out per group
      { cin: 16, h: 5, w: 6, cout: 16, k: [1, 1], groups: 4, epi: ['bias', 'relu'] }, // 1x1, flattened
      // a group count the merge does not divide (RegNetY's 13): the last kernel group is half padding
      { cin: 104, h: 6, w: 7, cout: 104, k: [3, 3], pads: [1, 1, 1, 1], groups: 13, epi: ['bias', 'relu'] },
      { n: 2, cin: 40, h: 9, w: 8, cout: 40, k: [3, 3], s: [2, 2], pads: [1, 1, 1, 1], groups: 5, epi: ['bias', 'residual_add', 'silu'] },
      { cin: 20, h: 7, w: 6, cout: 20, k: [3, 3], pads: [1, 1, 1, 1], groups: 5, epi: ['bias', 'channel_mul'] }, // ragged at V = 8 too
    ];
    const cands: Candidate[] = [];
    for (const spec of narrow) {
      const w = conv(spec);
      for (const vec of widthsFor(w, target).filter((v) => groupMerge(w, v) > 1)) {
        for (const s of [
          parallelHeavy(w, target),
          localityGreedy(w, target, 1),
          sampleSchedule(w, target, rng),
          sampleSchedule(w, target, rng),
        ]) {
          cands.push(makeCandidate(w, repair({ ...s, vec }, w, target), target));
        }
      }
    }
    const merges = new Set(cands.map((c) => groupMerge(c.workload, c.schedule.vec)));
    assert.ok(merges.has(2), 'merged pairs of groups are exercised');
    if (target.isa.avx512f) assert.ok(merges.has(4) && cands.some((c) => c.schedule.vec === 16), 'and at V = 16, merged fours');
    assert.ok(
      cands.some((c) => c.workload.op === 'conv2d' && c.workload.groups % groupMerge(c.workload, c.schedule.vec) !== 0),
      'and a ragged merge (the last kernel group part padding)',
    );
    const dir = await mkdtemp(join(tmpdir(), 'veltair-test-conv-merge-'));
    try {
      const results = await measureCandidates(cands, { cacheDir: dir, minTimeMs: 0, minRepeats: 1, maxRepeats: 1, timeoutMs: 60_000 });
      const bad = results
        .filter((r) => r.measurement.status !== 'ok')
        .map((r) => `${JSON.stringify(r.candidate.workload)} ${JSON.stringify(r.candidate.schedule)} → ${r.measurement.status}`);
      assert.deepEqual(bad, []);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
