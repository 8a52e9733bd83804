/** The schedule space: validity, sampling, mutation, both ends of the locality–parallelism trade-off. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkloadShape } from '../src/ir/workload.js';
import { scheduleFeatures } from '../src/space/features.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy, weightHeavy, weightStreaming } from '../src/space/presets.js';
import { problemOf } from '../src/space/problem.js';
import { seededRng } from '../src/random.js';
import {
  isValid,
  makeSchedule,
  mutate,
  registerTiles,
  sampleSchedules,
  threadSplit,
  whyInvalid,
  type Schedule,
} from '../src/space/knobs.js';
import { detectTarget, syntheticTarget } from '../src/toolchain/target.js';
import { parseCacheSize } from '../src/toolchain/caches.js';

const conv = (cin: number, hw: number, cout: number, k: number, stride = 1, groups = 1): WorkloadShape => {
  const pad = (k - 1) >> 1,
    o = Math.floor((hw + 2 * pad - k) / stride) + 1;
  return {
    op: 'conv2d',
    dtype: 'float32',
    n: 1,
    cin,
    h: hw,
    w: hw,
    cout,
    kh: k,
    kw: k,
    strideH: stride,
    strideW: stride,
    pads: [pad, pad, pad, pad],
    dilationH: 1,
    dilationW: 1,
    groups,
    oh: o,
    ow: o,
    epilogue: ['bias', 'relu'],
  };
};
const WORKLOADS: WorkloadShape[] = [
  conv(64, 56, 64, 3),
  conv(256, 56, 64, 1),
  conv(512, 7, 512, 3),
  conv(144, 56, 144, 3, 1, 144),
  conv(3, 224, 64, 7, 2),
  { op: 'dense', dtype: 'float32', m: 384, k: 768, n: 3072, epilogue: ['bias', 'gelu'] },
  { op: 'dense', dtype: 'float32', m: 1, k: 2048, n: 1000, epilogue: ['bias'] },
  { op: 'batch_matmul', dtype: 'float32', batch: 12, m: 384, k: 64, n: 384, transB: true, epilogue: [] },
];
const AVX512 = syntheticTarget({ avx512f: true, avx2: true, fma: true }, 16);
const AVX2 = syntheticTarget({ avx512f: false, avx2: true, fma: true }, 4);

test('sampled schedules are valid, deterministic per seed, and diverse', () => {
  for (const t of [AVX512, AVX2]) {
    for (const w of WORKLOADS) {
      const a = sampleSchedules(w, t, 30, seededRng(3));
      const b = sampleSchedules(w, t, 30, seededRng(3));
      assert.deepEqual(a, b);
      assert.ok(a.length >= 10, `only ${a.length} distinct schedules`);
      for (const s of a) assert.equal(whyInvalid(s, w, t), undefined, JSON.stringify(s));
    }
  }
});

test('mutation moves one step and stays valid', () => {
  const rng = seededRng(11);
  for (const w of WORKLOADS) {
    let s = defaultTableRefresh(w, AVX512);
    for (let i = 0; i < 50; i++) {
      const next = mutate(s, w, AVX512, rng);
      assert.notDeepEqual(next, s);
      assert.ok(isValid(next, w, AVX512), JSON.stringify(next));
      s = next;
    }
  }
});

test('the space reaches both ends: locality-greedy vs parallelism-heavy', () => {
  for (const w of WORKLOADS) {
    const loc = scheduleFeatures(w, localityGreedy(w, AVX512));
    const par = scheduleFeatures(w, parallelHeavy(w, AVX512));
    assert.ok(par.parallelChunks > loc.parallelChunks, `${w.op}: chunks ${par.parallelChunks} vs ${loc.parallelChunks}`);
    assert.ok(par.footprintBytes.l2 < loc.footprintBytes.l2, `${w.op}: l2 ${par.footprintBytes.l2} vs ${loc.footprintBytes.l2}`);
    assert.ok(par.threads === AVX512.cores);
  }
  // a big layer: the locality end fills L2 and makes only as many chunks as threads
  const big = WORKLOADS[0]!;
  const loc = scheduleFeatures(big, localityGreedy(big, AVX512, 4));
  assert.ok(loc.parallelChunks >= 4 && loc.parallelChunks <= 8);
  assert.ok(loc.footprintBytes.l2 > AVX512.caches.l2 / 4 && loc.footprintBytes.l2 <= AVX512.caches.l2);
});

test('validity rules: register file, ISA, group divisibility, tile bounds, threads', () => {
  const w = WORKLOADS[0]!;
  const s = defaultTableRefresh(w, AVX512);
  assert.match(whyInvalid({ ...s, regOc: 4, regCols: 8 }, w, AVX512) ?? '', /register/);
  assert.match(whyInvalid(s, w, AVX2) ?? '', /vector width 16/);
  assert.match(whyInvalid({ ...s, threads: 17 }, w, AVX512) ?? '', /threads/);
  assert.match(whyInvalid({ ...s, tileRows: 57 }, w, AVX512) ?? '', /tile/);
  const grouped = conv(12, 8, 8, 3, 1, 4);
  assert.match(whyInvalid({ ...defaultTableRefresh(grouped, AVX512), vec: 16 }, grouped, AVX512) ?? '', /group/);
  assert.equal(defaultTableRefresh(grouped, AVX512).vec, 1);
});

test('register tiles rank a tile that leaves gcc a spare register above one that takes them all', () => {
  const used = (r: { regOc: number; regCols: number }) => r.regOc * r.regCols + r.regOc + 1;
  for (const w of [WORKLOADS[0]!, WORKLOADS[1]!, WORKLOADS[5]!]) {
    const tiles = registerTiles(problemOf(w, 8), AVX2);
    assert.ok(used(tiles[0]!) < 16, `${JSON.stringify(tiles[0])} for ${JSON.stringify(w).slice(0, 60)} takes all 16 ymm`);
    // the full tiles stay in the space: the tuner may still measure them
    assert.ok(tiles.some((r) => used(r) === 16));
  }
  // 64→64 3×3 at 56×56: (2,6), 12 accumulators with weights in registers, leads on AVX2
  assert.deepEqual(registerTiles(problemOf(WORKLOADS[0]!, 8), AVX2)[0], { regOc: 2, regCols: 6 });
  // AVX-512 (32 zmm): the measured best tile (2,14) leaves one spare and still leads
  assert.deepEqual(registerTiles(problemOf(WORKLOADS[0]!, 16), AVX512)[0], { regOc: 2, regCols: 14 });
});

test('weight streaming: only for convs whose weights outweigh their activations; one ic block per pass, the cache tile in L1', () => {
  const late = conv(512, 7, 512, 3),
    early = conv(64, 56, 64, 3),
    depthwise = conv(512, 7, 512, 3, 1, 512);
  assert.ok(weightHeavy(late) && !weightHeavy(early) && !weightHeavy(depthwise));
  assert.equal(weightStreaming(early, AVX2, 1), undefined);
  assert.equal(weightStreaming(depthwise, AVX2, 1), undefined);
  for (const t of [AVX2, AVX512]) {
    for (const w of [late, conv(256, 14, 256, 3), conv(1024, 14, 256, 1), conv(512, 14, 512, 3, 2)]) {
      const s = weightStreaming(w, t, 2)!;
      assert.ok(isValid(s, w, t), whyInvalid(s, w, t) ?? '');
      assert.equal(s.tileIc, 1);
      assert.equal(s.loopOrder, 'oc_outer');
      assert.ok(scheduleFeatures(w, s).footprintBytes.l2 <= t.caches.l1d || s.tileRows === 1, JSON.stringify(s));
    }
  }
});

test('schedules serialise with a stable field order', () => {
  const s = defaultTableRefresh(WORKLOADS[0]!, AVX512);
  const shuffled = Object.fromEntries(Object.entries(s).reverse()) as unknown as Schedule;
  assert.equal(JSON.stringify(makeSchedule(shuffled)), JSON.stringify(s));
  assert.deepEqual(Object.keys(s), [
    'vec',
    'regOc',
    'regCols',
    'tileIc',
    'tileOc',
    'tileRows',
    'tileCols',
    'loopOrder',
    'parallelAxis',
    'unroll',
    'threads',
  ]);
});

test('problems flatten 1x1 convs and map dense to one row of M columns', () => {
  const p = problemOf(WORKLOADS[1]!, 16);
  assert.equal(p.rows, 1);
  assert.equal(p.cols, 56 * 56);
  const d = problemOf(WORKLOADS[5]!, 16);
  assert.equal(d.kind, 'direct');
  assert.equal(d.cols, 384);
  assert.equal(problemOf(WORKLOADS[3]!, 16).kind, 'depthwise');
});

test('detectTarget reads this machine', async () => {
  const t = await detectTarget();
  assert.ok(t.cores >= 1);
  assert.ok(t.caches.l1d > 0 && t.caches.l2 > t.caches.l1d);
  assert.match(t.cc, /\S/);
  assert.equal(parseCacheSize('48K'), 48 * 1024);
  assert.equal(parseCacheSize('32M'), 32 * 1024 * 1024);
});

test("threadSplit names the outermost tile index with more than one value, in the generated loop's order", () => {
  const s = (o: Partial<Schedule>): Schedule =>
    makeSchedule({
      vec: 16,
      regOc: 1,
      regCols: 8,
      tileIc: 4,
      tileOc: 4,
      tileRows: 56,
      tileCols: 7,
      loopOrder: 'oc_outer',
      parallelAxis: 'oc',
      unroll: 1,
      threads: 2,
      ...o,
    });
  const direct = problemOf(conv(64, 56, 64, 3), 16); // 4 oc vectors, 56 rows, 7 column blocks of 8
  assert.equal(threadSplit(direct, s({})), 'none', 'one chunk');
  assert.equal(threadSplit(direct, s({ tileOc: 2 })), 'channels');
  assert.equal(threadSplit(direct, s({ tileOc: 2, tileRows: 28 })), 'channels', 'oc tiles are outside row tiles');
  assert.equal(threadSplit(direct, s({ tileRows: 28 })), 'rows', 'one oc tile: the rows split');
  assert.equal(threadSplit(direct, s({ regOc: 4, tileOc: 1, tileRows: 14, tileCols: 1 })), 'rows');
  assert.equal(threadSplit(direct, s({ parallelAxis: 'spatial', tileOc: 2, tileRows: 28 })), 'rows', 'spatial: rows outermost');
  assert.equal(threadSplit(direct, s({ parallelAxis: 'spatial', tileOc: 2, tileCols: 1 })), 'columns');
  assert.equal(threadSplit(direct, s({ parallelAxis: 'spatial', tileOc: 2 })), 'channels', 'one row and column tile');
  const depthwise = problemOf(conv(144, 56, 144, 3, 1, 144), 16); // 9 channel vectors
  assert.equal(threadSplit(depthwise, s({ tileOc: 9, tileRows: 14 })), 'rows');
  assert.equal(threadSplit(depthwise, s({ tileOc: 3, tileRows: 14 })), 'channels');
  assert.equal(threadSplit(depthwise, s({ parallelAxis: 'spatial', tileOc: 3, tileRows: 14 })), 'rows');
  assert.equal(threadSplit(problemOf(conv(64, 56, 64, 3, 1, 2), 16), s({ regOc: 2, tileOc: 1 })), 'channels', 'two groups');
});
