/**
 * Is ONNX Runtime installed? It is an optional peer of veltair: the reference and the baseline,
 * needed only by the commands that compare against it or serve through it. This module never
 * imports it, so every other command runs without it.
 */
import { createRequire } from 'node:module';
import { userError, type VeltairError } from '../errors.js';

export function ortInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('onnxruntime-node');
    return true;
  } catch {
    return false;
  }
}

/** Is `e` Node's "cannot find package onnxruntime-node"? */
export function isMissingOrt(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((e as Error).message).includes('onnxruntime-node');
}

export const missingOrt = (what: string): VeltairError =>
  userError(
    'MISSING_DEPENDENCY',
    `${what}, and onnxruntime-node is not installed`,
    'install it beside veltair: npm install onnxruntime-node',
  );
