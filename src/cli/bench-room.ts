/**
 * The benchmark commands' code is loaded only when one of them runs: the benchmark room is the one
 * place that imports ONNX Runtime, a development dependency, so a production install
 * (`npm ci --omit=dev`) runs every other command, and a benchmark there says what to install.
 */
import { createRequire } from 'node:module';
import { isVeltairError, userError } from '../errors.js';

interface BenchRooms {
  'model-bench-command': typeof import('../bench/model-bench-command.js');
  'layer-bench-command': typeof import('../bench/layer-bench-command.js');
  'ort-backend': typeof import('../bench/ort-backend.js');
}

const loaders: { readonly [K in keyof BenchRooms]: () => Promise<BenchRooms[K]> } = {
  'model-bench-command': () => import('../bench/model-bench-command.js'),
  'layer-bench-command': () => import('../bench/layer-bench-command.js'),
  'ort-backend': () => import('../bench/ort-backend.js'),
};

/** Is `e` Node's "cannot find package onnxruntime-node"? */
export function isMissingOrt(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((e as Error).message).includes('onnxruntime-node');
}

const missingOrt = () => userError('MISSING_DEPENDENCY', 'this command times veltair against ONNX Runtime, and onnxruntime-node is not installed',
  'install it beside veltair (`npm install onnxruntime-node`; it is a development dependency, left out by `npm ci --omit=dev`)');

export async function loadBenchRoom<K extends keyof BenchRooms>(name: K): Promise<BenchRooms[K]> {
  // Some benchmarks load ONNX Runtime only in a child process: ask for it up front, here.
  try {
    createRequire(import.meta.url).resolve('onnxruntime-node');
  } catch {
    throw missingOrt();
  }
  try {
    return await loaders[name]();
  } catch (e) {
    if (!isVeltairError(e) && isMissingOrt(e)) throw missingOrt();
    throw e;
  }
}
