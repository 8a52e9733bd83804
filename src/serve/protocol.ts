/**
 * The KServe v2 / Triton inference request as it arrives: a JSON header, optionally followed by
 * binary tensor data (the header's length in `Inference-Header-Content-Length`). The header is
 * schema-checked (ajv) before anything reads it; the binary tail is cut into the inputs that
 * declared a `binary_data_size`, in order, and must be used up exactly.
 */
import { Ajv } from 'ajv';
import { badRequest } from './errors.js';
import type { WireInput } from './tensors.js';

export interface InferRequest {
  readonly id?: string;
  readonly parameters?: Readonly<Record<string, unknown>>;
  readonly inputs: readonly WireInput[];
  readonly outputs?: readonly { readonly name: string; readonly parameters?: Readonly<Record<string, unknown>> }[];
}

const name = { type: 'string', minLength: 1, maxLength: 256 } as const;
const parameters = { type: 'object', maxProperties: 64 } as const;

const REQUEST_SCHEMA = {
  type: 'object',
  required: ['inputs'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', maxLength: 256 },
    parameters,
    inputs: {
      type: 'array',
      minItems: 1,
      maxItems: 256,
      items: {
        type: 'object',
        required: ['name', 'shape', 'datatype'],
        additionalProperties: false,
        properties: {
          name,
          datatype: { type: 'string', maxLength: 16 },
          parameters,
          shape: { type: 'array', maxItems: 16, items: { type: 'integer', minimum: 0, maximum: 2 ** 40 } },
          data: {},
        },
      },
    },
    outputs: {
      type: 'array',
      maxItems: 256,
      items: { type: 'object', required: ['name'], additionalProperties: false, properties: { name, parameters } },
    },
  },
} as const;

const validate = new Ajv({ allErrors: false, strict: true }).compile(REQUEST_SCHEMA);

/** The request in `body`; binaries[i] holds input i's bytes when it used the binary extension. */
export interface ParsedRequest {
  readonly request: InferRequest;
  readonly binaries: readonly (Uint8Array | undefined)[];
  /** Whether output `name` is to be returned as binary data (per output, or all by binary_data_output). */
  binaryOutput(name: string): boolean;
}

export function parseInferRequest(body: Uint8Array, headerLength: string | undefined): ParsedRequest {
  let jsonBytes = body.byteLength;
  if (headerLength !== undefined) {
    if (!/^\d{1,12}$/.test(headerLength) || Number(headerLength) > body.byteLength) {
      throw badRequest(
        `Inference-Header-Content-Length ${JSON.stringify(headerLength.slice(0, 20))} is not a length within the ${body.byteLength}-byte body`,
      );
    }
    jsonBytes = Number(headerLength);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, jsonBytes).toString('utf8'));
  } catch (e) {
    throw badRequest(`the request body is not valid JSON: ${(e as Error).message.slice(0, 120)}`);
  }
  if (!validate(parsed)) {
    const err = validate.errors?.[0];
    throw badRequest(
      `the inference request ${err ? `${err.instancePath || '(root)'} ${err.message}` : 'is malformed'}` +
        ' (KServe v2: {"inputs": [{"name", "shape", "datatype", "data"}], "outputs"?: [{"name"}]})',
    );
  }
  const request = parsed as InferRequest;
  const names = new Set<string>();
  for (const i of request.inputs) {
    if (names.has(i.name)) throw badRequest(`input ${JSON.stringify(i.name)} is given twice`);
    names.add(i.name);
  }
  let at = jsonBytes;
  const binaries = request.inputs.map((input) => {
    const size = input.parameters?.['binary_data_size'];
    if (size === undefined) return undefined;
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
      throw badRequest(`input ${JSON.stringify(input.name)}: binary_data_size must be a byte count`);
    }
    if (input.data !== undefined) throw badRequest(`input ${JSON.stringify(input.name)} has both "data" and binary_data_size`);
    if (at + size > body.byteLength) throw badRequest(`input ${JSON.stringify(input.name)}: the body ends before its ${size} binary bytes`);
    const bytes = body.subarray(at, at + size);
    at += size;
    return bytes;
  });
  if (at !== body.byteLength)
    throw badRequest(`the body has ${body.byteLength - at} bytes after the JSON header and the inputs' binary data`);
  const all = request.parameters?.['binary_data_output'] === true;
  const asked = new Map((request.outputs ?? []).map((o) => [o.name, o.parameters?.['binary_data'] === true]));
  return { request, binaries, binaryOutput: (n) => asked.get(n) ?? all };
}
