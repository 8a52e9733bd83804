/**
 * Property sweep for the GEMM-like kernels: dense with odd M/N/K (M = 1 and M > 1), and
 * batch_matmul with and without transposed B, every epilogue kind that applies, all widths.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EpilogueKind, WorkloadShape } from '../src/ir/workload.js';
import { makeCandidate, type Candidate } from '../src/space/candidate.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy } from '../src/space/presets.js';
import { seededRng } from '../src/random.js';
import { repair, sampleSchedule, widthsFor } from '../src/space/knobs.js';
import { detectTarget } from '../src/toolchain/target.js';
import { measureCandidates } from '../src/measure/measure-candidates.js';

const dense = (m: number, k: number, n: number, epilogue: EpilogueKind[]): WorkloadShape => ({
  op: 'dense',
  dtype: 'float32',
  m,
  k,
  n,
  epilogue,
});
const bmm = (batch: number, m: number, k: number, n: number, transB: boolean, epilogue: EpilogueKind[]): WorkloadShape => ({
  op: 'batch_matmul',
  dtype: 'float32',
  batch,
  m,
  k,
  n,
  transB,
  epilogue,
});

const WORKLOADS: WorkloadShape[] = [
  dense(1, 37, 53, ['bias', 'relu']),
  dense(5, 3, 1, ['bias', 'hard_sigmoid']),
  dense(7, 64, 48, ['bias', 'gelu']),
  dense(33, 19, 17, ['bias', 'residual_add']),
  dense(50, 100, 70, ['bias', 'tanh']),
  dense(29, 16, 96, ['bias', 'gelu_tanh', 'channel_mul']),
  bmm(3, 9, 13, 21, false, []),
  bmm(2, 17, 16, 40, true, ['residual_add']),
  bmm(4, 12, 7, 5, true, ['sigmoid']),
  bmm(2, 31, 40, 33, false, ['channel_mul', 'clip']),
];

test('generated dense and batch_matmul kernels match the reference', { timeout: 600_000 }, async () => {
  const target = await detectTarget();
  const rng = seededRng(7);
  const cands: Candidate[] = [];
  WORKLOADS.forEach((w, i) => {
    const widths = widthsFor(w, target);
    const schedules = [
      defaultTableRefresh(w, target),
      localityGreedy(w, target, 1),
      parallelHeavy(w, target),
      repair({ ...sampleSchedule(w, target, rng), vec: widths[i % widths.length]! }, w, target),
    ];
    for (const s of new Map(schedules.map((s) => [JSON.stringify(s), s])).values()) cands.push(makeCandidate(w, s, target));
  });
  const dir = await mkdtemp(join(tmpdir(), 'veltair-test-mm-'));
  try {
    const results = await measureCandidates(cands, { cacheDir: dir, minTimeMs: 0, minRepeats: 1, maxRepeats: 1 });
    const bad = results
      .filter((r) => r.measurement.status !== 'ok')
      .map(
        (r) =>
          `${JSON.stringify(r.candidate.workload)} ${JSON.stringify(r.candidate.schedule)} → ` +
          `${r.measurement.status} ${r.measurement.message ?? ''} err=${r.measurement.maxAbsErr}`,
      );
    assert.deepEqual(bad, []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
