/**
 * Winograd F(4×4, 3×3) kernels agree with the direct conv kernel of the same layer, run on the same
 * seeded operands (test/fixtures/conv-compare.c), across odd sizes (H, W not multiples of 4, outputs
 * smaller than one tile), channels that are not multiples of the vector width, padding 0, 1, 2 and
 * asymmetric, batch 2, with and without bias / ReLU / residual / other epilogues, register tiles
 * with tails in both directions, and every vector width the target has (scalar always).
 *
 * Bound: max |wino − direct| ≤ 1e-4 · max |direct| per layer. F(4×4, 3×3) in fp32 with the points
 * 0, ±1, ±2, ∞ loses a few bits to the transforms (Aᵀ's 8s, Bᵀ's 5s); on these shapes the error is
 * ~3e-6–1e-5 of the output's magnitude, the literature puts it at 1e-5–1e-4, and a wrong coefficient,
 * a misplaced tile or an unwritten workspace entry (NaN-filled) gives 1e-1 or worse.
 * The pre-timing check of the harness (|err| ≤ 1e-5 · √K · max(1, max|ref|)) holds for them too:
 * the last test runs them through it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { EpilogueKind, WorkloadShape } from '../src/ir/workload.js';
import { makeCandidate, type Candidate } from '../src/space/candidate.js';
import { parallelHeavy } from '../src/space/presets.js';
import { seededRng } from '../src/random.js';
import { repair, sampleSchedule, widthsFor, type Schedule } from '../src/space/knobs.js';
import { winogradEligible } from '../src/space/winograd.js';
import { detectTarget } from '../src/toolchain/target.js';
import type { Target } from '../src/toolchain/target.js';
import { generateKernel } from '../src/codegen/kernel.js';
import { buildKernels } from '../src/measure/build.js';
import { headerSnapshot, writeSources } from '../src/toolchain/headers.js';
import { runCompiler } from '../src/toolchain/compiler.js';
import { flagsFor, libsFor } from '../src/toolchain/flags.js';
import { measureCandidates } from '../src/measure/measure-candidates.js';

const REL_BOUND = 1e-4;

interface Spec {
  n?: number;
  cin: number;
  h: number;
  w: number;
  cout: number;
  pads: [number, number, number, number];
  epi: EpilogueKind[];
}

function conv(c: Spec): WorkloadShape {
  const [t, l, b, r] = c.pads;
  return {
    op: 'conv2d',
    dtype: 'float32',
    n: c.n ?? 1,
    cin: c.cin,
    h: c.h,
    w: c.w,
    cout: c.cout,
    kh: 3,
    kw: 3,
    strideH: 1,
    strideW: 1,
    pads: c.pads,
    dilationH: 1,
    dilationW: 1,
    groups: 1,
    oh: c.h + t + b - 2,
    ow: c.w + l + r - 2,
    epilogue: c.epi,
  };
}

const SHAPES: Spec[] = [
  { cin: 20, h: 9, w: 11, cout: 37, pads: [1, 1, 1, 1], epi: ['bias', 'relu'] },
  { cin: 17, h: 7, w: 10, cout: 9, pads: [0, 0, 0, 0], epi: [] },
  { n: 2, cin: 33, h: 13, w: 6, cout: 19, pads: [1, 1, 1, 1], epi: ['bias'] },
  { cin: 24, h: 5, w: 5, cout: 16, pads: [0, 0, 0, 0], epi: ['relu'] }, // a 3×3 output: one cropped tile
  { cin: 16, h: 14, w: 14, cout: 40, pads: [1, 1, 1, 1], epi: ['bias', 'residual_add', 'relu'] },
  { cin: 9, h: 6, w: 17, cout: 23, pads: [2, 2, 2, 2], epi: ['bias', 'clip'] },
  { cin: 12, h: 11, w: 8, cout: 8, pads: [1, 0, 0, 1], epi: ['bias', 'channel_mul', 'silu'] }, // asymmetric padding
  { cin: 64, h: 8, w: 8, cout: 64, pads: [1, 1, 1, 1], epi: ['bias', 'relu'] },
];

/** Winograd schedules for `w` at width `vec`: the parallel-heavy point and random draws turned Winograd (tails in oc and tiles). */
function winogradSchedules(w: WorkloadShape, t: Target, vec: 16 | 8 | 1, seed: number): Schedule[] {
  const rng = seededRng(seed);
  const draws = [parallelHeavy(w, t), sampleSchedule(w, t, rng), sampleSchedule(w, t, rng)];
  const out = new Map<string, Schedule>();
  for (const s of draws) {
    const wino = repair({ ...s, vec, algo: 'winograd' }, w, t);
    out.set(JSON.stringify(wino), wino);
  }
  return [...out.values()];
}

const run = promisify(execFile);

test('winograd kernels match the direct conv of the same layer within 1e-4 of the output magnitude', { timeout: 900_000 }, async (t) => {
  const target = await detectTarget();
  const pairs: { wino: Candidate; direct: Candidate }[] = [];
  SHAPES.forEach((spec, i) => {
    const w = conv(spec);
    assert.ok(winogradEligible(w), `eligible: ${JSON.stringify(spec)}`);
    for (const vec of widthsFor(w, target)) {
      const direct = makeCandidate(w, repair({ ...parallelHeavy(w, target), vec }, w, target), target);
      for (const s of winogradSchedules(w, target, vec, 100 + i)) pairs.push({ wino: makeCandidate(w, s, target), direct });
    }
  });
  assert.ok(
    pairs.some((p) => p.wino.schedule.vec === 1),
    'the scalar path runs on every host',
  );
  assert.ok(pairs.every((p) => p.wino.schedule.algo === 'winograd' && p.direct.schedule.algo === undefined));
  const dir = await mkdtemp(join(tmpdir(), 'veltair-test-winograd-'));
  try {
    const units = [...new Map(pairs.flatMap((p) => [p.wino, p.direct]).map((c) => [generateKernel(c).symbol, generateKernel(c)])).values()];
    const built = await buildKernels(units, { cacheDir: dir });
    const so = new Map<string, string>();
    for (const b of built) {
      assert.equal(b.status, 'ok', b.status === 'compile_error' ? b.message : '');
      if (b.status === 'ok') so.set(b.symbol, b.soPath);
    }
    await writeSources(dir, (await headerSnapshot()).files);
    const exe = join(dir, 'conv-compare');
    await runCompiler([...flagsFor('packer'), '-I', dir, resolve('test/fixtures/conv-compare.c'), '-o', exe, ...libsFor('packer'), '-lm']);
    const failures: string[] = [];
    let worst = 0;
    for (const { wino, direct } of pairs) {
      const [a, b] = [generateKernel(wino).symbol, generateKernel(direct).symbol];
      const threads = String(Math.min(2, target.cores));
      const { stdout } = await run(exe, [so.get(a)!, a, so.get(b)!, b, threads]);
      const r = JSON.parse(stdout) as { maxAbsErr: number; maxRef: number; nonFinite: boolean; padNonZero: number };
      const rel = r.maxAbsErr / r.maxRef;
      worst = Math.max(worst, rel);
      if (r.nonFinite || r.padNonZero !== 0 || !(rel <= REL_BOUND)) {
        failures.push(`${JSON.stringify(wino.workload)} ${JSON.stringify(wino.schedule)}: ${stdout.trim()} rel ${rel}`);
      }
    }
    assert.deepEqual(failures, []);
    t.diagnostic(`worst relative error ${worst.toExponential(2)} over ${pairs.length} winograd kernels`);
    assert.ok(worst > 0, 'the comparison saw the transforms round (a zero error would mean both ran the same code)');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('winograd candidates pass the pre-timing reference check of the harness', { timeout: 600_000 }, async () => {
  const target = await detectTarget();
  const cands: Candidate[] = [];
  SHAPES.forEach((spec, i) => {
    const w = conv(spec);
    const widths = widthsFor(w, target);
    cands.push(makeCandidate(w, winogradSchedules(w, target, widths[i % widths.length]!, 200 + i)[0]!, target));
  });
  const dir = await mkdtemp(join(tmpdir(), 'veltair-test-winograd-harness-'));
  try {
    const results = await measureCandidates(cands, { cacheDir: dir, minTimeMs: 0, minRepeats: 1, maxRepeats: 1, timeoutMs: 60_000 });
    const bad = results
      .filter((r) => r.measurement.status !== 'ok')
      .map(
        (r) =>
          `${JSON.stringify(r.candidate.schedule)} → ${r.measurement.status} ` +
          `${r.measurement.message ?? ''} err=${r.measurement.maxAbsErr}`,
      );
    assert.deepEqual(bad, []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
