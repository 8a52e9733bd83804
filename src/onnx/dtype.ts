/** ONNX TensorProto.DataType numbers ↔ veltair dtype names, and element sizes. */
import type { DType } from './model.js';

const CODE_TO_DTYPE: ReadonlyMap<number, DType> = new Map<number, DType>([
  [1, 'float32'],
  [2, 'uint8'],
  [3, 'int8'],
  [4, 'uint16'],
  [5, 'int16'],
  [6, 'int32'],
  [7, 'int64'],
  [8, 'string'],
  [9, 'bool'],
  [10, 'float16'],
  [11, 'float64'],
  [12, 'uint32'],
  [13, 'uint64'],
  [16, 'bfloat16'],
]);

const DTYPE_TO_CODE: ReadonlyMap<DType, number> = new Map([...CODE_TO_DTYPE].map(([c, d]) => [d, c]));

export function dtypeFromCode(code: number): DType | undefined {
  return CODE_TO_DTYPE.get(code);
}

export function dtypeCode(dtype: DType): number {
  const code = DTYPE_TO_CODE.get(dtype);
  if (code === undefined) throw new Error(`no ONNX code for dtype ${dtype}`);
  return code;
}

/** Bytes per element in ONNX raw_data. */
export function dtypeByteSize(dtype: DType): number {
  switch (dtype) {
    case 'float64':
    case 'int64':
    case 'uint64':
      return 8;
    case 'float32':
    case 'int32':
    case 'uint32':
      return 4;
    case 'float16':
    case 'bfloat16':
    case 'int16':
    case 'uint16':
      return 2;
    case 'int8':
    case 'uint8':
    case 'bool':
      return 1;
    case 'string':
      return 0;
  }
}
