/**
 * The scheduling profile: one documented, versioned JSON format (`veltair-profile` 1.x) that
 * `veltair profile` writes, `veltair simulate` and the server read, and that a user with another
 * machine can write there and simulate with. It holds, per model, per step in execution order
 * (tunable kernels and every other op, reorders included), per version, latency by core count and
 * interference level — and for every figure where it came from (`source`):
 *   measured  — timed by veltair on the machine named in `machine`;
 *   modelled  — predicted by the scaling model (scaling.ts), never written as measured;
 *   artifact  — taken from the VELTAIR authors' artifact (artifact-csv.ts), not our measurement.
 *
 * The shape is general on purpose: a version is any compiled variant of a step (a schedule, or a
 * schedule tuned for one core count), keyed by id and kernel symbol, with threads → level →
 * latency. Keys of `latencyUs` are core counts ("1", "2", …), then levels ("0".."4").
 *
 * Parsing checks the JSON Schema (ajv, strict: no unknown fields) and then what a schema cannot
 * say (step indices in order, a level-0 figure for every version); each error names the file and
 * the field. Pure: parse takes text, never a path to open.
 */
import { Ajv } from 'ajv';
import { userError } from '../errors.js';

export const PROFILE_FORMAT = 'veltair-profile';
/** 1.1: up to 64 versions per step (bundles ship one family per tuned thread count). */
export const PROFILE_FORMAT_VERSION = '1.1.0';
export const PROFILE_FORMAT_MAJOR = 1;

export type FigureSource = 'measured' | 'modelled' | 'artifact';

/** One latency figure (µs). Measured figures say how many timed runs their median is of, and their quartiles. */
export interface LatencyFigure {
  readonly us: number;
  readonly source: FigureSource;
  readonly repeats?: number;
  readonly q1Us?: number;
  readonly q3Us?: number;
}

export type StepKind = 'tunable' | 'op' | 'reorder';

export interface ProfileVersion {
  /** Tuning-record id of the schedule (tunable steps) or `op` / `reorder` for the single variant of another step. */
  readonly id: string;
  /** Kernel symbol in the bundle's kernels.so; null for non-kernel steps. */
  readonly symbol: string | null;
  /** Threads the version was tuned at (null: not a tuned kernel). */
  readonly tunedThreads: number | null;
  /** Parallel chunks of the schedule (caps useful cores); null when unknown. */
  readonly parallelChunks: number | null;
  /** cores → level → latency. */
  readonly latencyUs: Readonly<Record<string, Readonly<Record<string, LatencyFigure>>>>;
}

export interface ProfileStep {
  /** Position in execution order, 0..n-1. */
  readonly index: number;
  /** Display only (model-supplied node name). */
  readonly name: string;
  readonly op: string;
  readonly kind: StepKind;
  /** The bundle manifest's layer index (null for reorders and artifact rows without one). */
  readonly layer: number | null;
  /** Analytic features: floating-point operations, bytes moved (inputs + weights + outputs), working set. */
  readonly flops: number;
  readonly bytes: number;
  readonly footprintBytes: number;
  readonly versions: readonly ProfileVersion[];
}

export interface ProfileLevel {
  readonly level: number;
  /** What the co-runner of this level does (src/measure/noise.ts LEVELS). */
  readonly summary: string;
  /** The co-runner's own memory traffic (stream bytes + 64 B per random operation) per second, alone. */
  readonly coRunnerGBps: number | null;
  /** Its buffers (random + stream bytes). */
  readonly coRunnerBytes: number | null;
  readonly source: FigureSource;
}

export interface ProfileClaimCost {
  /** Cost of one block claim/release (changing a step's thread team), µs, at `threads`. */
  readonly us: number;
  readonly threads: number;
  readonly source: FigureSource;
  readonly repeats?: number;
}

export interface Profile {
  readonly format: typeof PROFILE_FORMAT;
  readonly formatVersion: string;
  readonly model: {
    readonly name: string;
    /** sha256 of the ONNX model the bundle was compiled from (null: not from a bundle). */
    readonly sha256: string | null;
    /** sha256 of the bundle's manifest.json at profiling time (null: not from a bundle). */
    readonly manifestSha256: string | null;
  };
  readonly machine: {
    readonly description: string;
    readonly cores: number;
    readonly l3Bytes: number | null;
    readonly source: FigureSource;
  };
  /** How the figures were taken (free text: command, rounds, statistic, date). */
  readonly method: string;
  readonly coreCounts: readonly number[];
  readonly levels: readonly ProfileLevel[];
  readonly claimCost: ProfileClaimCost | null;
  readonly steps: readonly ProfileStep[];
}

const nonNegative = { type: 'number', minimum: 0 } as const;
const positive = { type: 'number', exclusiveMinimum: 0 } as const;
const positiveInt = { type: 'integer', minimum: 1 } as const;
const source = { enum: ['measured', 'modelled', 'artifact'] } as const;
const sha = { anyOf: [{ type: 'string', pattern: '^[0-9a-f]{64}$' }, { type: 'null' }] } as const;
const figure = {
  type: 'object',
  required: ['us', 'source'],
  additionalProperties: false,
  properties: { us: positive, source, repeats: positiveInt, q1Us: nonNegative, q3Us: nonNegative },
} as const;
const byLevel = { type: 'object', propertyNames: { pattern: '^[0-4]$' }, minProperties: 1, additionalProperties: figure } as const;
const byCores = {
  type: 'object',
  propertyNames: { pattern: '^[1-9][0-9]{0,3}$' },
  minProperties: 1,
  additionalProperties: byLevel,
} as const;

export const PROFILE_SCHEMA = {
  type: 'object',
  required: ['format', 'formatVersion', 'model', 'machine', 'method', 'coreCounts', 'levels', 'claimCost', 'steps'],
  additionalProperties: false,
  properties: {
    format: { const: PROFILE_FORMAT },
    formatVersion: { type: 'string', pattern: '^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$' },
    model: {
      type: 'object',
      required: ['name', 'sha256', 'manifestSha256'],
      additionalProperties: false,
      properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, sha256: sha, manifestSha256: sha },
    },
    machine: {
      type: 'object',
      required: ['description', 'cores', 'l3Bytes', 'source'],
      additionalProperties: false,
      properties: { description: { type: 'string' }, cores: positiveInt, l3Bytes: { anyOf: [positiveInt, { type: 'null' }] }, source },
    },
    method: { type: 'string' },
    coreCounts: { type: 'array', items: positiveInt, minItems: 1, uniqueItems: true },
    levels: {
      type: 'array',
      items: {
        type: 'object',
        required: ['level', 'summary', 'coRunnerGBps', 'coRunnerBytes', 'source'],
        additionalProperties: false,
        properties: {
          level: { type: 'integer', minimum: 0, maximum: 4 },
          summary: { type: 'string' },
          coRunnerGBps: { anyOf: [nonNegative, { type: 'null' }] },
          coRunnerBytes: { anyOf: [nonNegative, { type: 'null' }] },
          source,
        },
      },
    },
    claimCost: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['us', 'threads', 'source'],
          additionalProperties: false,
          properties: { us: nonNegative, threads: positiveInt, source, repeats: positiveInt },
        },
      ],
    },
    steps: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['index', 'name', 'op', 'kind', 'layer', 'flops', 'bytes', 'footprintBytes', 'versions'],
        additionalProperties: false,
        properties: {
          index: { type: 'integer', minimum: 0 },
          name: { type: 'string' },
          op: { type: 'string', minLength: 1 },
          kind: { enum: ['tunable', 'op', 'reorder'] },
          layer: { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] },
          flops: nonNegative,
          bytes: nonNegative,
          footprintBytes: nonNegative,
          versions: {
            type: 'array',
            minItems: 1,
            maxItems: 64,
            items: {
              type: 'object',
              required: ['id', 'symbol', 'tunedThreads', 'parallelChunks', 'latencyUs'],
              additionalProperties: false,
              properties: {
                id: { type: 'string', minLength: 1, maxLength: 200 },
                symbol: { anyOf: [{ type: 'string', pattern: '^vt_[kq][0-9a-f]{16}$' }, { type: 'null' }] },
                tunedThreads: { anyOf: [positiveInt, { type: 'null' }] },
                parallelChunks: { anyOf: [positiveInt, { type: 'null' }] },
                latencyUs: byCores,
              },
            },
          },
        },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true }).compile(PROFILE_SCHEMA);

const badProfile = (where: string, problem: string) =>
  userError(
    'BAD_PROFILE',
    `${where}: ${problem}`,
    'write profiles with `veltair profile BUNDLE`; the format is described in the README (section "Scheduling")',
  );

/** Check a parsed value; `where` names the file for messages. Returns it typed. */
export function checkProfile(value: unknown, where: string): Profile {
  if (!validate(value)) {
    const e = validate.errors?.[0];
    const field = e?.instancePath || '/';
    const extra = e?.params && 'additionalProperty' in e.params ? ` (${JSON.stringify(e.params['additionalProperty'])})` : '';
    throw badProfile(where, `field ${field} ${e?.message ?? 'is invalid'}${extra}`);
  }
  const p = value as Profile;
  const [major] = p.formatVersion.split('.').map(Number);
  if (major !== PROFILE_FORMAT_MAJOR) {
    throw badProfile(where, `field /formatVersion is ${p.formatVersion}; this veltair reads ${PROFILE_FORMAT_MAJOR}.x`);
  }
  p.steps.forEach((s, i) => {
    if (s.index !== i) throw badProfile(where, `field /steps/${i}/index is ${s.index}; steps are listed in execution order from 0`);
    s.versions.forEach((v, j) => {
      const hasQuiet = Object.values(v.latencyUs).some((byLevel) => byLevel['0'] !== undefined);
      if (!hasQuiet) throw badProfile(where, `field /steps/${i}/versions/${j}/latencyUs has no level-0 figure at any core count`);
    });
  });
  return p;
}

/** Parse a profile file's text. */
export function parseProfile(text: string, where: string): Profile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw badProfile(where, `not valid JSON (${(e as Error).message.split('\n')[0]})`);
  }
  return checkProfile(value, where);
}

/** The file's bytes: 2-space JSON with a final newline (field order as built). */
export function profileText(p: Profile): string {
  return JSON.stringify(p, null, 2) + '\n';
}

/** Every figure of a profile counted by source (what printed output labels). */
export function countSources(p: Profile): Record<FigureSource, number> {
  const n: Record<FigureSource, number> = { measured: 0, modelled: 0, artifact: 0 };
  for (const s of p.steps)
    for (const v of s.versions) for (const byLevel of Object.values(v.latencyUs)) for (const f of Object.values(byLevel)) n[f.source]++;
  return n;
}
