/**
 * The model a compile reads: a path to an .onnx file, or its bytes. A path also gives the folder
 * beside it, where a trained sparse index (lsh-index.json) and `veltair train`'s training.json
 * are looked for; bytes have no folder, so those are built or generated instead.
 */
import { dirname } from 'node:path';
import { decodeModel, inferModel, readModelBytes } from '../onnx/load.js';
import type { InferredModel } from '../onnx/model.js';
import type { InputShapes } from '../onnx/symbolic.js';

/** What a compile is given: a path to an .onnx file, or the ONNX model's bytes. */
export type ModelInput = string | Uint8Array;

export interface ModelSource {
  /** The path given, or a name for bytes (`model.onnx`): the manifest records its basename, messages name it. */
  readonly path: string;
  /** The folder beside the model file; undefined for bytes. */
  readonly dir: string | undefined;
  readonly bytes: Uint8Array;
}

/** The name bytes are known by in messages and in the manifest. */
export const BYTES_MODEL_NAME = 'model.onnx';

export function modelSource(model: ModelInput): ModelSource {
  if (typeof model === 'string') return { path: model, dir: dirname(model), bytes: readModelBytes(model) };
  return { path: BYTES_MODEL_NAME, dir: undefined, bytes: model };
}

/** Decode and infer every shape (symbolic dimensions pinned by `inputShapes`). */
export function inferSource(source: ModelSource, inputShapes: InputShapes): InferredModel {
  return inferModel(decodeModel(source.bytes, source.path), { inputShapes });
}
