/**
 * NumPy .npy files (format versions 1.0, 2.0 and 3.0) ↔ HostTensor. Only what a model input can be:
 * little-endian numeric dtypes in C order. Anything else (big-endian, complex, strings, objects,
 * structured records, Fortran order) is refused with a message naming the file and saying what is
 * supported, never guessed at. Written files are version 1.0 (2.0 when the header needs it), with
 * the header padded to 64 bytes as numpy does.
 */
import { userError, quoteForMessage } from '../errors.js';
import type { DType } from '../onnx/model.js';
import { elementsOf, type HostTensor, type TensorData } from './host-tensor.js';

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

interface NpyType {
  readonly dtype: DType;
  readonly size: number;
  readonly make: (b: ArrayBuffer, n: number) => TensorData;
}

/** descr without its byte-order character → dtype. */
const TYPES: Readonly<Record<string, NpyType>> = {
  f4: { dtype: 'float32', size: 4, make: (b, n) => new Float32Array(b, 0, n) },
  f8: { dtype: 'float64', size: 8, make: (b, n) => new Float64Array(b, 0, n) },
  i4: { dtype: 'int32', size: 4, make: (b, n) => new Int32Array(b, 0, n) },
  i8: { dtype: 'int64', size: 8, make: (b, n) => new BigInt64Array(b, 0, n) },
  i2: { dtype: 'int16', size: 2, make: (b, n) => new Int16Array(b, 0, n) },
  u2: { dtype: 'uint16', size: 2, make: (b, n) => new Uint16Array(b, 0, n) },
  i1: { dtype: 'int8', size: 1, make: (b, n) => new Int8Array(b, 0, n) },
  u1: { dtype: 'uint8', size: 1, make: (b, n) => new Uint8Array(b, 0, n) },
  b1: { dtype: 'bool', size: 1, make: (b, n) => new Uint8Array(b, 0, n) },
};

const DESCR_OF: Readonly<Partial<Record<DType, string>>> = Object.fromEntries(
  Object.entries(TYPES).map(([k, t]) => [t.dtype, (t.size === 1 ? '|' : '<') + k]),
);

export const NPY_SUPPORTED = 'little-endian float32, float64, int64, int32, int16, uint16, int8, uint8 or bool, in C order';

const badNpy = (
  file: string,
  what: string,
  hint = `save the array with numpy.save as ${NPY_SUPPORTED} (e.g. np.save(f, np.ascontiguousarray(a, dtype=np.float32)))`,
) => userError('BAD_INPUT', `${file}: ${what}`, hint);

interface Header {
  readonly descr: string;
  readonly fortran: boolean;
  readonly shape: number[];
}

function parseHeader(file: string, text: string): Header {
  const field = (key: string, value: string) => new RegExp(`['"]${key}['"]\\s*:\\s*${value}`).exec(text);
  const descr = field('descr', `(?:'([^']*)'|"([^"]*)"|(\\[))`);
  if (!descr) throw badNpy(file, 'the .npy header has no descr (not a .npy file?)');
  if (descr[3] !== undefined) throw badNpy(file, `structured (record) dtypes are not supported; only ${NPY_SUPPORTED}`);
  const fortran = field('fortran_order', '(True|False)');
  const shape = field('shape', '\\(([^)]*)\\)');
  if (!fortran || !shape) throw badNpy(file, 'the .npy header lacks fortran_order or shape (not a .npy file?)');
  const dims = shape[1]!
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (!dims.every((d) => /^\d+L?$/.test(d))) throw badNpy(file, `the .npy shape (${quoteForMessage(shape[1]!)}) is not a tuple of sizes`);
  return { descr: descr[1] ?? descr[2]!, fortran: fortran[1] === 'True', shape: dims.map((d) => Number.parseInt(d, 10)) };
}

function typeOf(file: string, descr: string): NpyType {
  const order = descr[0]!,
    code = descr.slice(1);
  const t = TYPES[code];
  if (t !== undefined && (order === '<' || order === '=' || (order === '|' && t.size === 1))) return t;
  if (t !== undefined && order === '>') {
    throw badNpy(
      file,
      `big-endian data (${quoteForMessage(descr)}) is not supported; only ${NPY_SUPPORTED}`,
      `convert it first, e.g. np.save(f, a.astype(a.dtype.newbyteorder('<')))`,
    );
  }
  throw badNpy(file, `dtype ${quoteForMessage(descr)} is not supported; only ${NPY_SUPPORTED}`);
}

/** Decode a whole .npy file; `file` names it in messages. */
export function decodeNpy(bytes: Uint8Array, file: string): HostTensor {
  if (bytes.length < 10 || !MAGIC.every((b, i) => bytes[i] === b)) throw badNpy(file, 'is not a .npy file (no \\x93NUMPY magic)');
  const major = bytes[6]!;
  if (major < 1 || major > 3) throw badNpy(file, `.npy format version ${major}.${bytes[7]} is not supported (1.0, 2.0 and 3.0 are)`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lenBytes = major === 1 ? 2 : 4;
  if (bytes.length < 8 + lenBytes) throw badNpy(file, 'the .npy header is truncated');
  const headerLen = major === 1 ? dv.getUint16(8, true) : dv.getUint32(8, true);
  const start = 8 + lenBytes + headerLen;
  if (start > bytes.length) throw badNpy(file, 'the .npy header is truncated');
  const text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(8 + lenBytes, start));
  const h = parseHeader(file, text);
  const t = typeOf(file, h.descr);
  if (h.fortran && h.shape.filter((d) => d > 1).length > 1) {
    throw badNpy(
      file,
      `the array is in Fortran (column-major) order; only ${NPY_SUPPORTED}`,
      'save a C-ordered copy: np.save(f, np.ascontiguousarray(a))',
    );
  }
  const count = elementsOf(h.shape);
  const want = count * t.size;
  const have = bytes.length - start;
  if (have !== want) {
    throw badNpy(
      file,
      `holds ${have} bytes of data, but shape (${h.shape.join(', ')}) of ${t.dtype} needs ${want} (truncated or not a .npy file)`,
    );
  }
  // Copy: the data need not be aligned for the typed array in the file's buffer.
  const copy = Uint8Array.prototype.slice.call(bytes, start, start + want) as Uint8Array;
  return { dtype: t.dtype, shape: h.shape, data: t.make(copy.buffer as ArrayBuffer, count) };
}

/** numpy's header for a C-ordered array: a Python dict literal padded with spaces to 64 bytes. */
function headerText(descr: string, shape: readonly number[]): string {
  const dims = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  return `{'descr': '${descr}', 'fortran_order': False, 'shape': ${dims}, }`;
}

/** Encode a tensor as .npy bytes (C order, little-endian). */
export function encodeNpy(t: HostTensor): Uint8Array {
  const descr = DESCR_OF[t.dtype];
  if (descr === undefined) throw userError('BAD_INPUT', `cannot write a ${t.dtype} tensor as .npy`, `veltair writes ${NPY_SUPPORTED}`);
  const dict = headerText(descr, t.shape);
  const major = dict.length + 12 > 65535 ? 2 : 1;
  const prefix = major === 1 ? 10 : 12;
  const padded = dict + ' '.repeat((64 - ((prefix + dict.length + 1) % 64)) % 64) + '\n';
  const out = new Uint8Array(prefix + padded.length + t.data.byteLength);
  out.set(MAGIC, 0);
  out[6] = major;
  out[7] = 0;
  const dv = new DataView(out.buffer);
  if (major === 1) dv.setUint16(8, padded.length, true);
  else dv.setUint32(8, padded.length, true);
  for (let i = 0; i < padded.length; i++) out[prefix + i] = padded.charCodeAt(i);
  out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), prefix + padded.length);
  return out;
}
