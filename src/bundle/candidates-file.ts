/**
 * profiles/candidates.json: every measured candidate of every tunable workload of the bundle (the
 * points a Pareto plot needs), next to the manifest rather than in it, so the runtime never parses
 * it. Listed in the manifest's `files` with its sha256 like every other file, deterministic (sorted,
 * no timestamps) so a compile from a complete database reproduces it byte for byte. Optional: a
 * bundle without it (format 1.0 before this file existed) still loads and plots its kept versions.
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { userError } from '../errors.js';
import type { WorkloadProfile } from '../tune/candidate-points.js';
import type { LoadedBundle } from './read.js';

export const PROFILES_FILE = 'profiles/candidates.json';
export const PROFILES_FORMAT = 1;

export interface BundleProfiles {
  readonly format: 1;
  /** Sorted by workload key. */
  readonly workloads: readonly WorkloadProfile[];
}

const nonNegative = { type: 'number', minimum: 0 } as const;
const levelMap = (value: object) => ({ type: 'object', propertyNames: { pattern: '^[0-4]$' }, additionalProperties: value }) as const;

export const PROFILES_SCHEMA = {
  $id: 'https://veltair.dev/schemas/bundle-profiles-v1.json',
  type: 'object',
  required: ['format', 'workloads'],
  additionalProperties: false,
  properties: {
    format: { const: PROFILES_FORMAT },
    workloads: {
      type: 'array',
      items: {
        type: 'object',
        required: ['workload', 'candidates', 'timedSeconds'],
        additionalProperties: false,
        properties: {
          workload: { type: 'string', pattern: '^(conv2d|dense|batch_matmul)-[0-9a-f]{16}$' },
          timedSeconds: nonNegative,
          candidates: {
            type: 'array',
            items: {
              type: 'object',
              required: [
                'id',
                'status',
                'schedule',
                'threads',
                'footprintBytes',
                'parallelChunks',
                'latencyMs',
                'repeats',
                'kept',
                'dominated',
              ],
              additionalProperties: false,
              properties: {
                id: { type: 'string', pattern: '^[0-9a-f]{16,64}$' },
                status: { enum: ['ok', 'wrong', 'crash', 'timeout', 'compile_error'] },
                schedule: { type: 'object' },
                threads: { type: 'integer', minimum: 1 },
                footprintBytes: {
                  type: 'object',
                  required: ['l1', 'l2', 'l3', 'total'],
                  additionalProperties: false,
                  properties: { l1: nonNegative, l2: nonNegative, l3: nonNegative, total: nonNegative },
                },
                parallelChunks: { type: 'integer', minimum: 1 },
                latencyMs: levelMap({ type: 'number', exclusiveMinimum: 0 }),
                repeats: levelMap({ type: 'integer', minimum: 1 }),
                kept: { type: 'boolean' },
                dominated: { type: 'boolean' },
              },
            },
          },
        },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true }).compile(PROFILES_SCHEMA);

/** The file's bytes: one workload per line-block, fixed field order from the tuner, final newline. */
export function profilesText(workloads: readonly WorkloadProfile[]): string {
  const sorted = [...workloads].sort((a, b) => (a.workload < b.workload ? -1 : a.workload > b.workload ? 1 : 0));
  return JSON.stringify({ format: PROFILES_FORMAT, workloads: sorted } satisfies BundleProfiles) + '\n';
}

/**
 * The bundle's candidate profiles (checked against the schema), or undefined when the bundle has
 * none. The file's sha256 was already checked by readBundle.
 */
export function readBundleProfiles(bundle: LoadedBundle): BundleProfiles | undefined {
  if (!(PROFILES_FILE in bundle.manifest.files)) return undefined;
  const path = `${bundle.paths.dir}/${PROFILES_FILE}`;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw userError(
      'BAD_BUNDLE',
      `${path} is not valid JSON (${(e as Error).message.split('\n')[0]})`,
      'recompile the bundle with veltair compile',
    );
  }
  if (!validate(value)) {
    const e = validate.errors?.[0];
    throw userError(
      'BAD_BUNDLE',
      `${path} does not match the profiles schema: ${e?.instancePath || '/'} ${e?.message ?? 'is invalid'}`,
      'recompile the bundle with veltair compile',
    );
  }
  return value as BundleProfiles;
}
