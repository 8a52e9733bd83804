/**
 * Depthwise sweep at MobileNet-V2's real shapes: output widths 56/28/14/7, strides 1 and 2,
 * channels 96..576, 3×3 and 5×5, with the exact schedules `veltair bench-layers --trials 6` sampled
 * for layers 7, 10, 13, 19, 22, 34, 40 (every one of them once died with SIGSEGV in the harness:
 * objects poisoned in the build cache, see headerSnapshot in src/toolchain/headers.ts), plus seeded
 * samples at two threads. Every candidate must be verified `ok` by the harness.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkloadShape } from '../src/ir/workload.js';
import { makeCandidate, type Candidate } from '../src/space/candidate.js';
import { seededRng } from '../src/random.js';
import { makeSchedule, repair, sampleSchedule, type Schedule } from '../src/space/knobs.js';
import { detectTarget } from '../src/toolchain/target.js';
import { measureCandidates } from '../src/measure/measure-candidates.js';
import { buildKernels } from '../src/measure/build.js';
import { measureJobs } from '../src/measure/run-candidate.js';
import { generateKernel } from '../src/codegen/kernel.js';

/** A k×k depthwise conv with "same" padding, as MobileNet-V2 has them (bias + ReLU6 as clip). */
const dw = (c: number, hw: number, s: number, k = 3): WorkloadShape => {
  const p = (k - 1) >> 1,
    o = Math.floor((hw + 2 * p - k) / s) + 1;
  return {
    op: 'conv2d',
    dtype: 'float32',
    n: 1,
    cin: c,
    h: hw,
    w: hw,
    cout: c,
    kh: k,
    kw: k,
    strideH: s,
    strideW: s,
    pads: [p, p, p, p],
    dilationH: 1,
    dilationW: 1,
    groups: c,
    oh: o,
    ow: o,
    epilogue: ['bias', 'clip'],
  };
};

/** regCols, tileOc, tileRows, tileCols, loopOrder (o/s), parallelAxis (o/s): as bench-layers sampled them. */
type Compact = [number, number, number, number, 'o' | 's', 'o' | 's'];
const sched = ([regCols, tileOc, tileRows, tileCols, lo, pa]: Compact, threads: number): Schedule =>
  makeSchedule({
    vec: 16,
    regOc: 1,
    regCols,
    tileIc: 1,
    tileOc,
    tileRows,
    tileCols,
    loopOrder: lo === 'o' ? 'oc_outer' : 'spatial_outer',
    parallelAxis: pa === 'o' ? 'oc' : 'spatial',
    unroll: 1,
    threads,
  });

const BENCH_SAMPLED: { layer: number; w: WorkloadShape; schedules: Compact[] }[] = [
  {
    layer: 7,
    w: dw(144, 56, 1),
    schedules: [
      [16, 1, 56, 4, 'o', 'o'],
      [16, 2, 56, 4, 'o', 'o'],
      [16, 1, 1, 2, 's', 's'],
      [16, 9, 2, 2, 's', 'o'],
      [16, 2, 2, 2, 'o', 'o'],
      [16, 4, 32, 1, 'o', 's'],
    ],
  },
  {
    layer: 10,
    w: dw(144, 56, 2),
    schedules: [
      [16, 2, 28, 2, 'o', 'o'],
      [16, 3, 28, 2, 'o', 'o'],
      [16, 1, 1, 2, 's', 's'],
      [16, 9, 2, 2, 's', 'o'],
      [16, 2, 1, 1, 'o', 'o'],
      [16, 4, 16, 1, 'o', 's'],
    ],
  },
  {
    layer: 13,
    w: dw(192, 28, 1),
    schedules: [
      [16, 3, 28, 2, 'o', 'o'],
      [16, 6, 28, 2, 'o', 'o'],
      [16, 1, 1, 2, 's', 's'],
      [16, 12, 2, 2, 's', 'o'],
      [16, 2, 1, 1, 'o', 'o'],
      [16, 4, 16, 1, 'o', 's'],
    ],
  },
  {
    layer: 19,
    w: dw(192, 28, 2),
    schedules: [
      [14, 3, 14, 1, 'o', 'o'],
      [14, 12, 14, 1, 'o', 'o'],
      [14, 1, 1, 1, 's', 's'],
      [14, 12, 2, 1, 's', 'o'],
      [14, 2, 1, 1, 'o', 'o'],
      [14, 4, 8, 1, 'o', 's'],
    ],
  },
  {
    layer: 22,
    w: dw(384, 14, 1),
    schedules: [
      [14, 6, 14, 1, 'o', 'o'],
      [14, 24, 14, 1, 'o', 'o'],
      [14, 1, 1, 1, 's', 's'],
      [14, 24, 2, 1, 's', 'o'],
      [14, 2, 1, 1, 'o', 'o'],
      [14, 8, 8, 1, 'o', 's'],
    ],
  },
  {
    layer: 34,
    w: dw(576, 14, 1),
    schedules: [
      [14, 9, 14, 1, 'o', 'o'],
      [14, 1, 1, 1, 's', 's'],
      [14, 16, 8, 1, 'o', 's'],
    ],
  },
  {
    layer: 40,
    w: dw(576, 14, 2),
    schedules: [
      [7, 9, 7, 1, 'o', 'o'],
      [7, 36, 7, 1, 'o', 'o'],
      [7, 1, 1, 1, 's', 's'],
      [7, 36, 2, 1, 's', 'o'],
      [7, 2, 1, 1, 'o', 'o'],
      [7, 16, 7, 1, 'o', 's'],
    ],
  },
];

/** Further depthwise shapes: the other widths/strides/channel counts, 5×5 taps, odd and tiny widths. */
const MORE: WorkloadShape[] = [
  dw(96, 112, 2),
  dw(96, 14, 2),
  dw(96, 7, 1),
  dw(144, 28, 1),
  dw(192, 14, 1),
  dw(384, 7, 2),
  dw(144, 28, 1, 5),
  dw(40, 28, 2, 5),
  dw(24, 9, 2),
  dw(20, 5, 1, 5),
];

test(
  'depthwise kernels at MobileNet-V2 shapes (incl. every schedule that once crashed) match the reference',
  { timeout: 600_000 },
  async () => {
    const target = await detectTarget();
    const rng = seededRng(3);
    const cands: Candidate[] = [];
    for (const { w, schedules } of BENCH_SAMPLED) {
      // exact on an AVX-512 machine; elsewhere repair() moves them to the nearest valid point
      for (const c of schedules) cands.push(makeCandidate(w, repair(sched(c, 1), w, target), target));
      cands.push(makeCandidate(w, repair({ ...sampleSchedule(w, target, rng), threads: 2 }, w, target), target));
    }
    for (const w of MORE) {
      for (let i = 0; i < 3; i++) cands.push(makeCandidate(w, sampleSchedule(w, target, rng), target));
    }
    const dir = await mkdtemp(join(tmpdir(), 'veltair-test-dw-'));
    try {
      const results = await measureCandidates(cands, { cacheDir: dir, minTimeMs: 0, minRepeats: 1, maxRepeats: 1, timeoutMs: 60_000 });
      const bad = results
        .filter((r) => r.measurement.status !== 'ok')
        .map(
          (r) =>
            `${JSON.stringify(r.candidate.workload)} ${JSON.stringify(r.candidate.schedule)} → ${r.measurement.status} ${r.measurement.message ?? ''}`,
        );
      assert.deepEqual(bad, []);
      assert.equal(results.length, cands.length);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);

test('a kernel whose descriptor disagrees with the ABI layout is a recorded crash, not a dead harness', { timeout: 300_000 }, async () => {
  const target = await detectTarget();
  const w = dw(32, 14, 1);
  const good = generateKernel(makeCandidate(w, sampleSchedule(w, target, seededRng(1)), target));
  // what a kernel compiled against another vt_desc layout looks like to the harness: sizes that do not add up
  const symbol = 'vt_k' + 'badd'.padEnd(16, '0');
  const bad = {
    symbol,
    source: good.source
      .split(good.symbol)
      .join(symbol)
      .replace(/\.output_floats = \d+/, '.output_floats = 7'),
  };
  assert.notEqual(bad.source, good.source.split(good.symbol).join(symbol));
  const dir = await mkdtemp(join(tmpdir(), 'veltair-test-desc-'));
  try {
    const built = await buildKernels([bad, good], { cacheDir: dir });
    const jobs = built.map((b) => {
      assert.equal(b.status, 'ok');
      return { soPath: (b as { soPath: string }).soPath, symbol: b.symbol, threads: 1 };
    });
    const [m1, m2] = await measureJobs(jobs, { cacheDir: dir, minTimeMs: 0, minRepeats: 1, maxRepeats: 1 });
    assert.equal(m1!.status, 'crash');
    assert.match(m1!.message ?? '', /descriptor inconsistent/);
    assert.equal(m2!.status, 'ok', 'the next job in the same harness is still measured');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
