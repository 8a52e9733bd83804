/**
 * Every failure veltair reports to a user is a VeltairError: a stable code, one clear message that
 * names the file/node/field at fault, and a hint saying what to do about it. The CLI prints
 * `error[CODE]: message` + `hint: …` and exits with `exitCode` (1 = bad input, 2 = internal).
 */
export type ErrorCode =
  | 'FILE_NOT_FOUND'
  | 'FILE_UNREADABLE'
  | 'FILE_UNWRITABLE'
  | 'DB_LOCKED'
  | 'NOT_ONNX'
  | 'UNSUPPORTED_OPS'
  | 'UNSUPPORTED_QUANTIZATION'
  | 'MISSING_INPUT'
  | 'CYCLIC_GRAPH'
  | 'SYMBOLIC_DIM'
  | 'SHAPE_MISMATCH'
  | 'DIM_OVERFLOW'
  | 'DYNAMIC_SHAPE'
  | 'EXTERNAL_DATA'
  | 'BAD_ATTRIBUTE'
  | 'BAD_ARGUMENT'
  | 'BAD_INPUT'
  | 'OUTPUT_EXISTS'
  | 'NO_COMPILER'
  | 'COMPILE_FAILED'
  | 'BAD_BUNDLE'
  | 'UNSIGNED_BUNDLE'
  | 'BAD_SIGNATURE'
  | 'BAD_KEY'
  | 'UNSUPPORTED_OPSET'
  | 'TOO_LARGE'
  | 'TARGET_MISMATCH'
  | 'MISSING_DEPENDENCY'
  | 'BAD_PROFILE'
  | 'BAD_SPEC'
  | 'BAD_DATA'
  | 'NOT_ENOUGH_MEMORY'
  | 'INTERNAL';

export class VeltairError extends Error {
  readonly code: ErrorCode;
  readonly hint: string;
  readonly exitCode: 1 | 2;

  constructor(code: ErrorCode, message: string, hint: string, exitCode: 1 | 2 = 1) {
    super(message);
    this.name = 'VeltairError';
    this.code = code;
    this.hint = hint;
    this.exitCode = exitCode;
  }
}

export function userError(code: ErrorCode, message: string, hint: string): VeltairError {
  return new VeltairError(code, message, hint, 1);
}

export function internalError(message: string, hint = 'this is a bug in veltair; please report it with --verbose output'): VeltairError {
  return new VeltairError('INTERNAL', message, hint, 2);
}

export function isVeltairError(e: unknown): e is VeltairError {
  return e instanceof VeltairError;
}

/** Quote a model-supplied string for an error message: bounded length, control characters escaped. */
export function quoteForMessage(s: string, max = 80): string {
  const cut = s.length > max ? s.slice(0, max) + '…' : s;
  return JSON.stringify(cut);
}
