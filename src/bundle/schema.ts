/**
 * The JSON Schema of manifest.json (format 2.x), checked by the writer before anything is renamed
 * into place and by the reader before anything is trusted. Paths are plain relative names
 * (`dir/file.ext`, no `..`, no leading `/`); read.ts additionally checks each stays inside the
 * bundle on disk. Objects inside layers allow no unknown fields, so a typo cannot slip through;
 * a 2.x minor version may add optional fields here.
 */
import { Ajv } from 'ajv';
import { userError } from '../errors.js';
import { FINGERPRINT_PATTERN } from '../db/target-fingerprint.js';
import { LAYOUT_PATTERN } from './layout.js';
import { MAX_LAYER_VERSIONS } from './manifest.js';

export const SEMVER_PATTERN = '^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$';
/** A relative path of plain segments: letters, digits, '.', '_', '-'; never '.' or '..' alone. */
export const BUNDLE_PATH_PATTERN = '^(?!.*(^|/)\\.{1,2}(/|$))[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$';

const int = { type: 'integer', minimum: 0 } as const;
const positiveInt = { type: 'integer', minimum: 1 } as const;
const nonNegative = { type: 'number', minimum: 0 } as const;
const sha256 = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const;
const path = { type: 'string', pattern: BUNDLE_PATH_PATTERN, maxLength: 200 } as const;
const dims = { type: 'array', items: int } as const;
const levelKey = { pattern: '^[0-4]$' } as const;
const latencyMap = { type: 'object', propertyNames: levelKey, additionalProperties: { type: 'number', exclusiveMinimum: 0 } } as const;
const dtype = {
  enum: [
    'float32',
    'float64',
    'float16',
    'bfloat16',
    'int8',
    'uint8',
    'int16',
    'uint16',
    'int32',
    'uint32',
    'int64',
    'uint64',
    'bool',
    'string',
  ],
} as const;
const tensorInfo = {
  type: 'object',
  required: ['name', 'dtype', 'shape'],
  additionalProperties: false,
  properties: { name: { type: 'string' }, dtype, shape: dims },
} as const;

const blobProps = { file: path, offset: int, length: int, sha256 } as const;
const blobRef = {
  type: 'object',
  required: ['file', 'offset', 'length', 'sha256'],
  additionalProperties: false,
  properties: blobProps,
} as const;
const paramRef = {
  type: 'object',
  required: ['file', 'offset', 'length', 'sha256', 'dtype', 'dims'],
  additionalProperties: false,
  properties: { ...blobProps, dtype, dims },
} as const;

/** An INT8 kernel's schedule (space/int8-knobs.ts). */
export const INT8_SCHEDULE_SCHEMA = {
  type: 'object',
  required: ['path', 'regOc', 'regCols', 'tileOc', 'tileCols'],
  additionalProperties: false,
  properties: {
    path: { enum: ['avx512vnni', 'avxvnni', 'avx2', 'scalar'] },
    regOc: { type: 'integer', minimum: 1 },
    regCols: { type: 'integer', minimum: 1 },
    tileOc: { type: 'integer', minimum: 1 },
    tileCols: { type: 'integer', minimum: 1 },
    ocOuter: { const: true },
  },
} as const;

const schedule = {
  type: 'object',
  required: ['vec', 'regOc', 'regCols', 'tileIc', 'tileOc', 'tileRows', 'tileCols', 'loopOrder', 'parallelAxis', 'unroll', 'threads'],
  additionalProperties: false,
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
} as const;

const features = {
  type: 'object',
  required: ['footprintBytes', 'parallelChunks', 'threads'],
  properties: {
    footprintBytes: {
      type: 'object',
      required: ['l1', 'l2', 'l3', 'total'],
      additionalProperties: false,
      properties: { l1: nonNegative, l2: nonNegative, l3: nonNegative, total: nonNegative },
    },
    parallelChunks: positiveInt,
    threads: positiveInt,
  },
  additionalProperties: { type: 'number' },
} as const;

const version = {
  type: 'object',
  required: ['id', 'symbol', 'schedule', 'threads', 'features', 'workspaceBytes', 'latencyMs', 'latencyByThreadsMs', 'inPlan'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: '^[0-9a-f]{16,64}$' },
    symbol: { type: 'string', pattern: '^vt_[kq][0-9a-f]{16}$' },
    schedule: { anyOf: [schedule, INT8_SCHEDULE_SCHEMA] },
    threads: positiveInt,
    features,
    workspaceBytes: { type: 'integer', minimum: 0 },
    latencyMs: { ...latencyMap, minProperties: 1 },
    latencyByThreadsMs: {
      type: 'object',
      propertyNames: { pattern: '^[1-9][0-9]{0,3}$' },
      additionalProperties: { type: 'number', exclusiveMinimum: 0 },
    },
    inPlan: { type: 'boolean' },
    packedWeight: blobRef,
    int8: {
      type: 'object',
      required: ['compOffset', 'multOffset'],
      additionalProperties: false,
      properties: { compOffset: { type: 'integer', minimum: 0 }, multOffset: { type: 'integer', minimum: 0 } },
    },
  },
} as const;

const activation = {
  type: 'object',
  required: ['fn'],
  additionalProperties: false,
  properties: {
    fn: { enum: ['relu', 'clip', 'leaky_relu', 'sigmoid', 'hard_sigmoid', 'hard_swish', 'silu', 'tanh', 'gelu', 'gelu_tanh'] },
    min: { type: 'number' },
    max: { type: 'number' },
    alpha: { type: 'number' },
    beta: { type: 'number' },
  },
} as const;

const epilogueStep = {
  oneOf: [
    { type: 'object', required: ['kind'], additionalProperties: false, properties: { kind: { const: 'bias' } } },
    {
      type: 'object',
      required: ['kind', 'activation'],
      additionalProperties: false,
      properties: { kind: { const: 'activation' }, activation },
    },
    {
      type: 'object',
      required: ['kind', 'value'],
      additionalProperties: false,
      properties: { kind: { enum: ['residual_add', 'channel_mul'] }, value: int },
    },
  ],
} as const;

const attrValue = { anyOf: [{ type: 'number' }, { type: 'string' }, { type: 'array', items: { type: 'number' } }] } as const;

const layer = {
  type: 'object',
  required: [
    'index',
    'name',
    'op',
    'tunable',
    'workload',
    'inputs',
    'outputs',
    'inputShapes',
    'outputShape',
    'dtype',
    'attrs',
    'epilogue',
    'epilogueParams',
    'params',
    'versions',
  ],
  additionalProperties: false,
  properties: {
    index: int,
    name: { type: 'string' },
    op: { type: 'string', pattern: '^[a-z0-9_]+$' },
    tunable: { type: 'boolean' },
    workload: { anyOf: [{ type: 'null' }, { type: 'string', pattern: '^(conv2d|dense|batch_matmul)-[0-9a-f]{16}$' }] },
    workloadSpec: {
      type: 'object',
      required: ['op', 'dtype', 'epilogue'],
      properties: { op: { enum: ['conv2d', 'dense', 'batch_matmul'] } },
    },
    inputs: { type: 'array', items: int },
    outputs: { type: 'array', items: int, minItems: 1 },
    inputShapes: { type: 'array', items: dims },
    outputShape: dims,
    dtype,
    attrs: { type: 'object', additionalProperties: attrValue },
    epilogue: { type: 'array', items: epilogueStep },
    epilogueParams: { type: 'array', items: { type: 'number' } },
    params: { type: 'object', propertyNames: { pattern: '^[A-Za-z0-9_]{1,64}$' }, additionalProperties: paramRef },
    versions: { type: 'array', items: version, maxItems: MAX_LAYER_VERSIONS },
    family: {
      type: 'object',
      required: ['regretPercent', 'bestMs', 'candidates', 'dominated'],
      additionalProperties: false,
      properties: {
        regretPercent: { type: 'object', propertyNames: levelKey, additionalProperties: { type: 'number' } },
        bestMs: latencyMap,
        candidates: int,
        dominated: int,
        byThreads: {
          type: 'object',
          propertyNames: { pattern: '^[1-9][0-9]{0,3}$' },
          additionalProperties: {
            type: 'object',
            required: ['count', 'regretPercent', 'bestMs', 'candidates', 'dominated'],
            additionalProperties: false,
            properties: {
              count: positiveInt,
              regretPercent: { type: 'object', propertyNames: levelKey, additionalProperties: { type: 'number' } },
              bestMs: latencyMap,
              candidates: int,
              dominated: int,
            },
          },
        },
      },
    },
  },
  if: { type: 'object', properties: { tunable: { const: true } } },
  then: { required: ['workloadSpec', 'family'], properties: { versions: { type: 'array', minItems: 1 }, workload: { type: 'string' } } },
} as const;

const layout = { type: 'string', pattern: LAYOUT_PATTERN } as const;
const ioBinding = {
  type: 'array',
  items: { type: 'object', required: ['name', 'value'], additionalProperties: false, properties: { name: { type: 'string' }, value: int } },
} as const;

const graphPlan = {
  type: 'object',
  required: ['vectorWidth', 'inputs', 'outputs', 'values', 'steps', 'arenaBytes'],
  additionalProperties: false,
  properties: {
    vectorWidth: { enum: [16, 8, 1] },
    inputs: ioBinding,
    outputs: ioBinding,
    values: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'shape', 'dtype', 'layout', 'bytes', 'offset'],
        additionalProperties: false,
        properties: {
          id: int,
          name: { type: 'string' },
          shape: dims,
          dtype,
          layout,
          bytes: int,
          offset: int,
          viewOf: {
            type: 'object',
            required: ['value', 'byteOffset'],
            additionalProperties: false,
            properties: { value: int, byteOffset: int },
          },
        },
        // A value of its own starts on a cache line (the kernels' aligned loads); a view is a slice of
        // another value and starts wherever its slice does.
        if: { not: { required: ['viewOf'] } },
        then: { properties: { offset: { type: 'integer', multipleOf: 64 } } },
      },
    },
    steps: {
      type: 'array',
      items: {
        oneOf: [
          {
            type: 'object',
            required: ['index', 'op', 'layer', 'layout', 'inputs', 'outputs'],
            additionalProperties: false,
            properties: {
              index: int,
              op: { const: 'layer' },
              layer: int,
              layout,
              inputs: { type: 'array', items: int },
              outputs: { type: 'array', items: int, minItems: 1 },
              versions: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: MAX_LAYER_VERSIONS },
              inPlace: { const: true },
            },
          },
          {
            type: 'object',
            required: ['index', 'op', 'from', 'to', 'inputs', 'outputs'],
            additionalProperties: false,
            properties: {
              index: int,
              op: { const: 'reorder' },
              from: layout,
              to: layout,
              inputs: { type: 'array', items: int, minItems: 1, maxItems: 1 },
              outputs: { type: 'array', items: int, minItems: 1, maxItems: 1 },
            },
          },
        ],
      },
    },
    arenaBytes: int,
  },
} as const;

const featureName = { enum: ['otherCoresBusy', 'psiCpuSome', 'psiMemorySome', 'latencyRatio', 'coRunnerMemGBps'] } as const;
const finite = { type: 'number' } as const;
const levelModel = {
  type: 'object',
  required: ['features', 'intercept', 'weights', 'r2', 'rmsError', 'accuracy'],
  additionalProperties: false,
  properties: {
    features: { type: 'array', items: featureName, minItems: 1, uniqueItems: true },
    intercept: finite,
    weights: { type: 'array', items: finite, minItems: 1 },
    r2: finite,
    rmsError: nonNegative,
    accuracy: { type: 'number', minimum: 0, maximum: 1 },
    heldOut: {
      type: 'object',
      required: ['folds', 'samples', 'r2', 'rmsError', 'accuracy'],
      additionalProperties: false,
      properties: {
        folds: positiveInt,
        samples: positiveInt,
        r2: finite,
        rmsError: nonNegative,
        accuracy: { type: 'number', minimum: 0, maximum: 1 },
      },
    },
  },
} as const;
/** Optional (a format 1.x minor addition, kept in 2.x): the interference proxy's fitted coefficients. */
const interferenceProxy = {
  type: 'object',
  required: ['levels', 'threads', 'kernelCores', 'noiseCores', 'refreshMs', 'ratioWindow', 'models', 'perLevel'],
  additionalProperties: false,
  properties: {
    levels: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 4 }, minItems: 2, uniqueItems: true },
    threads: positiveInt,
    kernelCores: positiveInt,
    noiseCores: positiveInt,
    refreshMs: nonNegative,
    ratioWindow: positiveInt,
    models: {
      type: 'object',
      required: ['system', 'tenant'],
      additionalProperties: false,
      properties: { system: levelModel, tenant: levelModel },
    },
    perLevel: {
      type: 'object',
      propertyNames: levelKey,
      additionalProperties: {
        type: 'object',
        required: ['samples', 'latencyRatio', 'otherCoresBusy', 'coRunnerMemGBps', 'predictedLevel'],
        additionalProperties: false,
        properties: {
          samples: positiveInt,
          latencyRatio: nonNegative,
          otherCoresBusy: finite,
          coRunnerMemGBps: nonNegative,
          predictedLevel: finite,
        },
      },
    },
  },
} as const;

export const MANIFEST_SCHEMA = {
  $id: 'https://veltair.dev/schemas/bundle-manifest-v1.json',
  type: 'object',
  required: ['formatVersion', 'compilerVersion', 'model', 'target', 'options', 'layers', 'graphPlan', 'files'],
  additionalProperties: false,
  properties: {
    formatVersion: { type: 'string', pattern: SEMVER_PATTERN },
    compilerVersion: {
      type: 'object',
      required: ['veltair', 'codegen', 'kernelAbi'],
      additionalProperties: false,
      properties: { veltair: { type: 'string', minLength: 1 }, codegen: int, kernelAbi: positiveInt },
    },
    model: {
      type: 'object',
      required: ['path', 'sha256', 'opset', 'inputs', 'outputs'],
      additionalProperties: false,
      properties: {
        // a basename only: where the model was on the build machine is none of the bundle's business
        path: { type: 'string', pattern: '^[^/\\\\]*$' },
        sha256,
        opset: int,
        inputs: { type: 'array', items: tensorInfo, minItems: 1 },
        outputs: { type: 'array', items: tensorInfo, minItems: 1 },
      },
    },
    target: {
      type: 'object',
      required: ['fingerprint', 'spec', 'requiredIsa'],
      additionalProperties: false,
      properties: {
        fingerprint: { type: 'string', pattern: FINGERPRINT_PATTERN },
        spec: {
          type: 'object',
          required: ['cpuModel', 'isa', 'cores', 'caches', 'cc', 'cflags'],
          additionalProperties: false,
          properties: {
            cpuModel: { type: 'string' },
            isa: {
              type: 'object',
              required: ['avx512f', 'avx2', 'fma'],
              additionalProperties: { type: 'boolean' },
              properties: { avx512f: { type: 'boolean' }, avx2: { type: 'boolean' }, fma: { type: 'boolean' } },
            },
            cores: positiveInt,
            caches: {
              type: 'object',
              required: ['l1d', 'l2', 'l3'],
              additionalProperties: false,
              properties: { l1d: nonNegative, l2: nonNegative, l3: nonNegative },
            },
            cc: { type: 'string' },
            cflags: { type: 'array', items: { type: 'string' } },
          },
        },
        requiredIsa: { type: 'array', items: { type: 'string', pattern: '^[a-z0-9_]+$' }, uniqueItems: true },
        probedIsa: { type: 'array', items: { type: 'string', pattern: '^[a-z0-9_]+$' }, uniqueItems: true },
      },
    },
    options: {
      type: 'object',
      required: ['trials', 'levels', 'maxVersions', 'threads', 'profileThreads', 'seed'],
      additionalProperties: false,
      properties: {
        trials: positiveInt,
        levels: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 4 }, minItems: 1, uniqueItems: true },
        maxVersions: { type: 'integer', minimum: 1, maximum: 5 },
        threads: { type: 'array', items: positiveInt, minItems: 1 },
        profileThreads: { type: 'array', items: positiveInt },
        seed: { type: 'integer' },
      },
    },
    layers: { type: 'array', items: layer },
    graphPlan,
    interferenceProxy,
    files: {
      type: 'object',
      propertyNames: path,
      additionalProperties: {
        type: 'object',
        required: ['sha256', 'bytes'],
        additionalProperties: false,
        properties: { sha256, bytes: int },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: false, strict: true, strictRequired: false, allowUnionTypes: true }).compile(MANIFEST_SCHEMA);

/** The first schema violation as `path message`, or undefined when the manifest is valid. */
export function manifestSchemaProblem(value: unknown): string | undefined {
  if (validate(value)) return undefined;
  const e = validate.errors?.[0];
  return e ? `${e.instancePath || '/'} ${e.message ?? 'is invalid'}` : 'is invalid';
}

/** Throws BAD_BUNDLE naming the first violation. `where`: the manifest's path, for the message. */
export function assertManifestSchema(value: unknown, where: string): void {
  const problem = manifestSchemaProblem(value);
  if (problem !== undefined) {
    throw userError(
      'BAD_BUNDLE',
      `${where} does not match the bundle schema: ${problem}`,
      'the bundle is corrupt or was edited by hand; recompile it with veltair compile',
    );
  }
}
