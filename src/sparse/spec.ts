/**
 * The network spec of `veltair train`: a small JSON file such as
 *   {"input": 5000, "layers": [{"dim": 128, "activation": "relu"},
 *                              {"dim": 2000, "activation": "softmax", "sparsity": 0.05}]}
 * checked with a JSON Schema (ajv), then for what a schema cannot say: the last layer is the
 * output (softmax or sigmoid), the others are hidden (relu, tanh or linear), and the first layer,
 * which reads the raw sparse features, is dense.
 */
import { readFile } from 'node:fs/promises';
import { Ajv, type ErrorObject } from 'ajv';
import { userError } from '../errors.js';

export type HiddenActivation = 'relu' | 'tanh' | 'linear';
export type OutputActivation = 'softmax' | 'sigmoid';
export type Activation = HiddenActivation | OutputActivation;

export interface LayerSpec {
  readonly dim: number;
  readonly activation: Activation;
  readonly sparsity?: number;
}

export interface NetworkSpec {
  readonly input: number;
  readonly layers: readonly LayerSpec[];
}

/** Layers the native code supports (VS_MAX_LAYERS in native-kernels/sparse/vs.h). */
export const MAX_LAYERS = 8;
/** Widths are int32 in the native code, and a row of weights must be addressable. */
export const MAX_DIM = 2 ** 31 - 1;

export const NETWORK_SPEC_SCHEMA = {
  $id: 'https://veltair.dev/schemas/train-spec-1.json',
  type: 'object',
  additionalProperties: false,
  required: ['input', 'layers'],
  properties: {
    input: { type: 'integer', minimum: 1, maximum: MAX_DIM },
    layers: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_LAYERS,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['dim', 'activation'],
        properties: {
          dim: { type: 'integer', minimum: 1, maximum: MAX_DIM },
          activation: { enum: ['relu', 'tanh', 'linear', 'softmax', 'sigmoid'] },
          sparsity: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
        },
      },
    },
  },
} as const;

const ajv = new Ajv({ allErrors: false });
const validateSchema = ajv.compile(NETWORK_SPEC_SCHEMA);

function jsonPath(instancePath: string): string {
  return (
    instancePath
      .split('/')
      .filter(Boolean)
      .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
      .join('')
      .replace(/^\./, '') || '(top level)'
  );
}

function describe(e: ErrorObject, data: unknown): string {
  const where = jsonPath(e.instancePath);
  const value = e.instancePath
    .split('/')
    .filter(Boolean)
    .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], data);
  switch (e.keyword) {
    case 'required':
      return `${where === '(top level)' ? '' : `${where}: `}"${String(e.params['missingProperty'])}" is missing`;
    case 'additionalProperties':
      return `${where === '(top level)' ? '' : `${where}: `}unknown field "${String(e.params['additionalProperty'])}"`;
    case 'exclusiveMinimum':
    case 'maximum':
    case 'minimum':
      if (where.endsWith('.sparsity')) return `${where} is ${JSON.stringify(value)}; a sparsity must be in (0, 1]`;
      return `${where} is ${JSON.stringify(value)}; it ${e.message ?? 'is out of range'}`;
    case 'enum':
      return `${where} is ${JSON.stringify(value)}; it must be one of ${(e.params['allowedValues'] as string[]).join(', ')}`;
    default:
      return `${where} ${e.message ?? 'is invalid'}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}`;
  }
}

const SPEC_HINT =
  'e.g. {"input": 5000, "layers": [{"dim": 128, "activation": "relu"}, {"dim": 2000, "activation": "softmax"}]}; ' +
  'hidden layers use relu, tanh or linear, the last layer softmax or sigmoid, and "sparsity" is in (0, 1]';

/** Validate a parsed spec; `source` names it in errors. */
export function checkNetworkSpec(data: unknown, source: string): NetworkSpec {
  if (!validateSchema(data)) {
    const first = validateSchema.errors?.[0];
    throw userError('BAD_SPEC', `${source}: ${first ? describe(first, data) : 'not a network spec'}`, SPEC_HINT);
  }
  const spec = data as unknown as NetworkSpec;
  spec.layers.forEach((l, i) => {
    const last = i === spec.layers.length - 1;
    if (last && l.activation !== 'softmax' && l.activation !== 'sigmoid') {
      throw userError(
        'BAD_SPEC',
        `${source}: layers[${i}] is the output layer, so its activation must be softmax or sigmoid, not ${l.activation}`,
        SPEC_HINT,
      );
    }
    if (!last && (l.activation === 'softmax' || l.activation === 'sigmoid')) {
      throw userError(
        'BAD_SPEC',
        `${source}: layers[${i}] is a hidden layer; ${l.activation} is only supported on the output layer`,
        SPEC_HINT,
      );
    }
  });
  const first = spec.layers[0]!;
  if (first.sparsity !== undefined && first.sparsity < 1) {
    throw userError(
      'BAD_SPEC',
      `${source}: layers[0].sparsity is ${first.sparsity}, but the first layer reads the raw sparse features and is always dense`,
      'put a dense hidden layer first and give the sparsity to a later layer, as BOLT models do (e.g. input → 128 relu → N softmax with sparsity)',
    );
  }
  return spec;
}

export async function readNetworkSpec(path: string): Promise<NetworkSpec> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw userError(
      code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE',
      `cannot read the spec ${path} (${code ?? String(e)})`,
      'pass the path of a JSON network spec',
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw userError('BAD_SPEC', `${path} is not valid JSON: ${(e as Error).message}`, SPEC_HINT);
  }
  return checkNetworkSpec(data, path);
}
