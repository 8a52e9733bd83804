/**
 * The front end's entry point: read → decode → validate → infer shapes and fold constants.
 *
 * Symbolic dimensions: pin them with `inputShapes` (the CLI's `--input-shape NAME=1x3x224x224`).
 * When a model leaves only the batch (dim 0 of its inputs) symbolic and it is not pinned, the
 * batch is 1. Any other unpinned symbolic dimension is a SYMBOLIC_DIM error.
 */
import type { InferredModel } from './model.js';
import { decodeModel, readModelBytes } from './decode.js';
import { inferModel, type InferOptions } from './infer.js';

export type LoadOptions = InferOptions;

export async function loadModel(path: string, opts: LoadOptions = {}): Promise<InferredModel> {
  const bytes = readModelBytes(path);
  return inferModel(decodeModel(bytes, path), opts);
}

export { inferModel, type InferOptions } from './infer.js';
export { decodeModel, readModelBytes } from './decode.js';
export { parseInputShape, parseInputShapes, type InputShapes } from './symbolic.js';
export { supportedOperators } from './ops/registry.js';
