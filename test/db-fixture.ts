/**
 * Records for the tuning-database tests (and the child-process writer in fixtures/db-writer.mjs).
 * The latencies here are made-up test data, never measurements: they only need to be valid,
 * distinct and large enough (hundreds of repeats) that a line is longer than a pipe's atomic size.
 */
import type { WorkloadShape } from '../src/ir/workload.js';
import { makeRecord, type LevelLatencies, type TuningRecord } from '../src/db/record.js';
import { scheduleFeatures } from '../src/space/features.js';
import { makeSchedule } from '../src/space/knobs.js';
import { syntheticTarget, type Target } from '../src/toolchain/target.js';
import type { MeasureStatus } from '../src/measure/run-candidate.js';

export const DENSE: WorkloadShape = { op: 'dense', dtype: 'float32', m: 64, k: 256, n: 512, epilogue: ['bias', 'relu'] };
export const CONV: WorkloadShape = {
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin: 64,
  h: 56,
  w: 56,
  cout: 64,
  kh: 3,
  kw: 3,
  strideH: 1,
  strideW: 1,
  pads: [1, 1, 1, 1],
  dilationH: 1,
  dilationW: 1,
  groups: 1,
  oh: 56,
  ow: 56,
  epilogue: ['bias', 'relu'],
};
export const TARGET_A: Target = syntheticTarget({ avx512f: true, avx2: true, fma: true }, 2);
export const TARGET_B: Target = { ...TARGET_A, cpuModel: 'another CPU' };

export interface SampleOptions {
  readonly workload?: WorkloadShape;
  readonly target?: Target;
  readonly status?: MeasureStatus;
  /** level → median-ish latency; each level gets `repeats` values around it. */
  readonly levelMs?: Readonly<Record<string, number>>;
  readonly repeats?: number;
  readonly error?: string;
}

/** Record number `i` (distinct schedule per i) with deterministic pseudo-latencies. */
export function sampleRecord(i: number, o: SampleOptions = {}): TuningRecord {
  const workload = o.workload ?? DENSE;
  const schedule = makeSchedule({
    vec: 16,
    regOc: 2,
    regCols: 4,
    tileIc: 4,
    tileOc: 1 + (i % 7),
    tileRows: 1 + Math.floor(i / 7),
    tileCols: 2,
    loopOrder: 'oc_outer',
    parallelAxis: i % 2 ? 'spatial' : 'oc',
    unroll: 4,
    threads: 1 + (i % 2),
  });
  const status = o.status ?? 'ok';
  const repeats = o.repeats ?? 5;
  const levelMs = o.levelMs ?? { 0: 1 + i / 100, 2: 1.5 + i / 100 };
  const latencies: LevelLatencies =
    status === 'ok'
      ? Object.fromEntries(
          Object.entries(levelMs).map(([level, ms]) => [
            level,
            Array.from({ length: repeats }, (_, r) => Number((ms * (1 + (((r * 37 + i * 11) % 17) - 8) / 1000)).toFixed(6))),
          ]),
        )
      : {};
  return makeRecord({
    workload,
    target: o.target ?? TARGET_A,
    schedule,
    features: scheduleFeatures(workload, schedule),
    latencies,
    status,
    ...(o.error !== undefined ? { error: o.error } : status === 'ok' ? {} : { error: `${status} in test` }),
    timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, i % 60)),
  });
}
