/**
 * Checking a session's feeds against the model's inputs before anything reaches native code:
 * every input present, no unknown names, the right typed array for the dtype, the right shape
 * (or, for a bare array, the right element count). Each refusal is a BAD_INPUT that names the
 * input and says what was expected.
 */
import { userError, quoteForMessage } from '../errors.js';
import type { DType } from '../onnx/model.js';
import { arrayTypeFor, arrayTypeOf, elementsOf, type TensorData } from './host-tensor.js';

export interface TensorInfo {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/** A feed: a bare C-ordered typed array, or one with its shape (then the shape is checked too). */
export type Feed = TensorData | { readonly data: TensorData; readonly shape?: readonly number[]; readonly dtype?: DType };

export type Feeds = Readonly<Record<string, Feed>>;

const describe = (t: TensorInfo) => `${t.dtype} [${t.shape.join(', ')}]`;
const listInputs = (inputs: readonly TensorInfo[]) => inputs.map((t) => `${quoteForMessage(t.name)} (${describe(t)})`).join(', ');
const HINT = "see session.inputs (or `veltair run --help`) for each input's name, dtype and shape";

function feedParts(f: Feed): { data: unknown; shape: readonly number[] | undefined; dtype: DType | undefined } {
  if (ArrayBuffer.isView(f) || Array.isArray(f)) return { data: f, shape: undefined, dtype: undefined };
  const o = f as { data?: unknown; shape?: readonly number[]; dtype?: DType } | null;
  return { data: o?.data, shape: o?.shape, dtype: o?.dtype };
}

function checkOne(t: TensorInfo, f: Feed): TensorData {
  const { data, shape, dtype } = feedParts(f);
  const name = quoteForMessage(t.name);
  const want = arrayTypeFor(t.dtype);
  if (dtype !== undefined && dtype !== t.dtype) {
    throw userError('BAD_INPUT', `input ${name} is ${dtype}; expected ${describe(t)}`, HINT);
  }
  if (!ArrayBuffer.isView(data) || arrayTypeOf(data) !== want) {
    const got = arrayTypeOf(data);
    throw userError(
      'BAD_INPUT',
      `input ${name} is ${/^[A-Z]/.test(got) ? `a${/^[AEIOU]/.test(got) ? 'n' : ''} ` : ''}${got}; ` +
        `expected ${describe(t)} as a ${want ?? 'typed array'}`,
      HINT,
    );
  }
  const values = data as TensorData;
  if (shape !== undefined && (shape.length !== t.shape.length || shape.some((d, i) => d !== t.shape[i]))) {
    throw userError('BAD_INPUT', `input ${name} has shape [${shape.join(', ')}]; expected ${describe(t)}`, HINT);
  }
  if (values.length !== elementsOf(t.shape)) {
    throw userError(
      'BAD_INPUT',
      `input ${name} has ${values.length} elements; expected ${describe(t)} = ${elementsOf(t.shape)} elements`,
      HINT,
    );
  }
  return values;
}

/** The feeds as arrays in `inputs` order, after every check. */
export function orderFeeds(inputs: readonly TensorInfo[], feeds: Feeds): TensorData[] {
  if (feeds === null || typeof feeds !== 'object' || ArrayBuffer.isView(feeds)) {
    throw userError(
      'BAD_INPUT',
      `feeds must be an object mapping input names to arrays; the model's inputs are ${listInputs(inputs)}`,
      HINT,
    );
  }
  const known = new Set(inputs.map((t) => t.name));
  for (const name of Object.keys(feeds)) {
    if (!known.has(name)) {
      throw userError('BAD_INPUT', `the model has no input ${quoteForMessage(name)}; its inputs are ${listInputs(inputs)}`, HINT);
    }
  }
  return inputs.map((t) => {
    const f = Object.prototype.hasOwnProperty.call(feeds, t.name) ? feeds[t.name] : undefined;
    if (f === undefined) {
      throw userError(
        'BAD_INPUT',
        `input ${quoteForMessage(t.name)} (${describe(t)}) is missing; the model's inputs are ${listInputs(inputs)}`,
        HINT,
      );
    }
    return checkOne(t, f);
  });
}
