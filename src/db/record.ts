/**
 * A tuning record: one measured candidate, one JSON line. It is self-describing (the workload and
 * target it was measured for travel with it), keeps every repeat at every interference level (a
 * mean would hide the spread the tuner and the paired comparisons need), and failures are records
 * too (status ≠ ok), so a rerun never measures a crashing candidate again.
 */
import { createHash } from 'node:crypto';
import { Ajv } from 'ajv';
import { CODEGEN_VERSION } from '../codegen/kernel.js';
import { workloadKey, type WorkloadShape } from '../ir/workload.js';
import type { ScheduleFeatures } from '../space/features.js';
import type { Schedule } from '../space/knobs.js';
import type { Target } from '../toolchain/target.js';
import type { MeasureStatus } from '../measure/run-candidate.js';
import { VERSION } from '../version.js';
import { canonicalJson, FINGERPRINT_PATTERN, targetFingerprint } from './target-fingerprint.js';

export const RECORD_FORMAT_VERSION = 1;
export const MEASURE_STATUSES: readonly MeasureStatus[] = ['ok', 'wrong', 'crash', 'timeout', 'compile_error'];
const MAX_ERROR_CHARS = 300;

/** How far a record was measured (TuningRecord.stage). */
export type RecordStage = 'race';

/** Interference level ("0".."4") → every repeat's per-call latency in ms, in the order taken. */
export type LevelLatencies = Readonly<Record<string, readonly number[]>>;

export interface TuningRecord {
  readonly v: 1;
  /** Workload key (ir/workload.ts); must equal workloadKey(workloadSpec). */
  readonly workload: string;
  readonly workloadSpec: WorkloadShape;
  /** Target fingerprint; must equal targetFingerprint(targetSpec). */
  readonly target: string;
  readonly targetSpec: Target;
  readonly schedule: Schedule;
  readonly features: ScheduleFeatures;
  /** Threads the candidate ran with. */
  readonly threads: number;
  readonly latencies: LevelLatencies;
  readonly status: MeasureStatus;
  readonly error?: string;
  /**
   * 'race': measured in a racing search's first round only (level 0, a short window) and dropped
   * there (tune/race.ts): a verdict that it cannot reach the family, not a measurement of it at
   * every level with a full window. Never a family member, a best or a seed for another target;
   * an exhaustive search measures it again. Absent: the record is complete.
   */
  readonly stage?: RecordStage;
  readonly tool: { readonly veltair: string; readonly codegen: number };
  /** ISO 8601, UTC. */
  readonly timestamp: string;
}

const positiveInt = { type: 'integer', minimum: 1 } as const;
const nonNegative = { type: 'number', minimum: 0 } as const;

/** The record contract. Nested objects allow extra fields so newer writers stay readable. */
export const TUNING_RECORD_SCHEMA = {
  $id: 'https://veltair.dev/schemas/tuning-record-v1.json',
  type: 'object',
  required: [
    'v',
    'workload',
    'workloadSpec',
    'target',
    'targetSpec',
    'schedule',
    'features',
    'threads',
    'latencies',
    'status',
    'tool',
    'timestamp',
  ],
  additionalProperties: false,
  properties: {
    v: { const: RECORD_FORMAT_VERSION },
    workload: { type: 'string', pattern: '^(conv2d|dense|batch_matmul)-[0-9a-f]{16}$' },
    workloadSpec: {
      type: 'object',
      required: ['op', 'dtype', 'epilogue'],
      properties: {
        op: { enum: ['conv2d', 'dense', 'batch_matmul'] },
        dtype: { const: 'float32' },
        epilogue: { type: 'array', items: { type: 'string' } },
      },
    },
    target: { type: 'string', pattern: FINGERPRINT_PATTERN },
    targetSpec: {
      type: 'object',
      required: ['cpuModel', 'isa', 'cores', 'caches', 'cc', 'cflags'],
      properties: {
        cpuModel: { type: 'string' },
        isa: { type: 'object', additionalProperties: { type: 'boolean' } },
        cores: positiveInt,
        caches: { type: 'object', required: ['l1d', 'l2', 'l3'], properties: { l1d: nonNegative, l2: nonNegative, l3: nonNegative } },
        cc: { type: 'string' },
        cflags: { type: 'array', items: { type: 'string' } },
      },
    },
    schedule: {
      type: 'object',
      required: ['vec', 'regOc', 'regCols', 'tileIc', 'tileOc', 'tileRows', 'tileCols', 'loopOrder', 'parallelAxis', 'unroll', 'threads'],
      properties: {
        vec: { enum: [16, 8, 1] },
        regOc: positiveInt,
        regCols: positiveInt,
        tileIc: positiveInt,
        tileOc: positiveInt,
        tileRows: positiveInt,
        tileCols: positiveInt,
        unroll: positiveInt,
        threads: positiveInt,
        loopOrder: { enum: ['oc_outer', 'spatial_outer'] },
        parallelAxis: { enum: ['oc', 'spatial'] },
        algo: { enum: ['direct', 'winograd'] },
      },
      additionalProperties: { type: ['number', 'string', 'boolean'] },
    },
    features: {
      type: 'object',
      required: ['footprintBytes', 'parallelChunks', 'threads'],
      properties: {
        footprintBytes: {
          type: 'object',
          required: ['l1', 'l2', 'l3', 'total'],
          properties: { l1: nonNegative, l2: nonNegative, l3: nonNegative, total: nonNegative },
        },
        parallelChunks: positiveInt,
        threads: positiveInt,
      },
    },
    threads: positiveInt,
    latencies: {
      type: 'object',
      propertyNames: { pattern: '^(0|[1-9][0-9]{0,2})$' },
      additionalProperties: { type: 'array', items: { type: 'number', exclusiveMinimum: 0 } },
    },
    status: { enum: MEASURE_STATUSES },
    error: { type: 'string', maxLength: MAX_ERROR_CHARS },
    stage: { const: 'race' },
    tool: {
      type: 'object',
      required: ['veltair', 'codegen'],
      additionalProperties: false,
      properties: { veltair: { type: 'string', minLength: 1 }, codegen: { type: 'integer', minimum: 0 } },
    },
    timestamp: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$' },
  },
  // An ok record has at least one level and at least one repeat at every level it names.
  if: { type: 'object', properties: { status: { const: 'ok' } } },
  then: { properties: { latencies: { type: 'object', minProperties: 1, additionalProperties: { type: 'array', minItems: 1 } } } },
} as const;

const validateRecordSchema = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true }).compile(TUNING_RECORD_SCHEMA);

export type ParsedLine = { readonly record: TuningRecord } | { readonly problem: string };

/** Why `value` is not a usable record (schema, or a key/fingerprint that does not match its spec). */
export function recordProblem(value: unknown): string | undefined {
  if (!validateRecordSchema(value)) {
    const e = validateRecordSchema.errors?.[0];
    return `schema: ${e ? `${e.instancePath || '/'} ${e.message ?? 'invalid'}` : 'invalid'}`;
  }
  const r = value as unknown as TuningRecord;
  // A hand-edited key or fingerprint would apply a record to the wrong layer or machine.
  if (workloadKey(r.workloadSpec) !== r.workload) return 'workload key does not match workloadSpec';
  if (targetFingerprint(r.targetSpec) !== r.target) return 'target fingerprint does not match targetSpec';
  return undefined;
}

/** One line of a records file: a record, or why it is corrupt (never throws). */
export function parseRecordLine(line: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { problem: 'not JSON' };
  }
  const problem = recordProblem(value);
  return problem ? { problem } : { record: value as TuningRecord };
}

/** Identity of a measurement: same workload, target, schedule, threads and code generator. */
export function recordId(r: Pick<TuningRecord, 'workload' | 'target' | 'schedule' | 'threads' | 'tool'>): string {
  return recordIdOf(r.workload, r.target, r.schedule, r.threads, r.tool.codegen);
}

export function recordIdOf(
  workload: string,
  target: string,
  schedule: Schedule,
  threads: number,
  codegen: number = CODEGEN_VERSION,
): string {
  return createHash('sha256')
    .update(JSON.stringify([workload, target, canonicalJson(schedule), threads, codegen]))
    .digest('hex');
}

export interface RecordInput {
  readonly workload: WorkloadShape;
  readonly target: Target;
  readonly schedule: Schedule;
  readonly features: ScheduleFeatures;
  readonly threads?: number;
  readonly latencies: LevelLatencies;
  readonly status: MeasureStatus;
  readonly error?: string;
  readonly stage?: RecordStage;
  readonly timestamp?: Date;
}

/** Strip the `key` a Workload carries and any other field outside the shape's canonical form. */
function workloadSpecOf(w: WorkloadShape): WorkloadShape {
  const { key: _key, ...shape } = w as WorkloadShape & { key?: string };
  return shape as WorkloadShape;
}

/** A record in canonical field order, stamped with this veltair and codegen version. */
export function makeRecord(i: RecordInput): TuningRecord {
  const spec = workloadSpecOf(i.workload);
  const error = i.error === undefined ? undefined : i.error.replace(/\s+/g, ' ').trim().slice(0, MAX_ERROR_CHARS);
  return {
    v: RECORD_FORMAT_VERSION,
    workload: workloadKey(spec),
    workloadSpec: spec,
    target: targetFingerprint(i.target),
    targetSpec: i.target,
    schedule: i.schedule,
    features: i.features,
    threads: i.threads ?? i.schedule.threads,
    latencies: Object.fromEntries(Object.entries(i.latencies).map(([level, ms]) => [level, [...ms]])),
    status: i.status,
    ...(error !== undefined ? { error } : {}),
    ...(i.stage !== undefined ? { stage: i.stage } : {}),
    tool: { veltair: VERSION, codegen: CODEGEN_VERSION },
    timestamp: (i.timestamp ?? new Date()).toISOString(),
  };
}

/** The record as one JSON line ('\n'-terminated); throws if it would not read back as valid. */
export function recordLine(r: TuningRecord): string {
  const problem = recordProblem(JSON.parse(JSON.stringify(r)));
  if (problem) throw new Error(`refusing to write an invalid tuning record (${problem})`);
  return JSON.stringify(r) + '\n';
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Median latency at a level, or undefined when the level was not measured (or the record failed). */
export function medianMs(r: TuningRecord, level: number | string): number | undefined {
  const xs = r.latencies[String(level)];
  return r.status === 'ok' && xs && xs.length > 0 ? median(xs) : undefined;
}

/** Levels a record has repeats for, ascending. */
export function levelsOf(r: TuningRecord): number[] {
  return Object.keys(r.latencies)
    .filter((l) => (r.latencies[l]?.length ?? 0) > 0)
    .map(Number)
    .sort((a, b) => a - b);
}

/** Measured at every level it could be, with a full window (not dropped by a racing round). */
export function isComplete(r: Pick<TuningRecord, 'stage'>): boolean {
  return r.stage === undefined;
}

export function totalRepeats(r: TuningRecord): number {
  return Object.values(r.latencies).reduce((n, xs) => n + xs.length, 0);
}

/**
 * Which of two records with the same id to keep. The choice must not depend on file or line order
 * (merging shards in any order gives the same database): ok beats a failure, then a complete
 * record beats a raced one (a later full measurement supersedes the verdict), then more repeats
 * (more evidence), then the earlier measurement, then the smaller JSON text as a last tie-break.
 */
export function preferRecord(a: TuningRecord, b: TuningRecord): TuningRecord {
  const ok = Number(b.status === 'ok') - Number(a.status === 'ok');
  if (ok !== 0) return ok < 0 ? a : b;
  const complete = Number(isComplete(b)) - Number(isComplete(a));
  if (complete !== 0) return complete < 0 ? a : b;
  const reps = totalRepeats(b) - totalRepeats(a);
  if (reps !== 0) return reps < 0 ? a : b;
  if (a.timestamp !== b.timestamp) return a.timestamp < b.timestamp ? a : b;
  return JSON.stringify(a) <= JSON.stringify(b) ? a : b;
}
