/**
 * The decoded ONNX model as plain data. Nothing here refers to protobuf types: decode.ts converts
 * once, and every later stage reads these.
 */
export type DType =
  | 'float32'
  | 'float64'
  | 'float16'
  | 'bfloat16'
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'bool'
  | 'string';

/**
 * Tensor payloads. int64/uint64 are stored as Float64Array: exact within ±2^53, and values beyond
 * (INT64_MAX as "to the end" in Slice) saturate to ±Number.MAX_SAFE_INTEGER, which every consumer
 * treats as "huge". float16/bfloat16 are widened to Float32Array on decode.
 */
export type TensorData =
  Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | string[];

export interface Tensor {
  readonly dtype: DType;
  readonly dims: readonly number[];
  readonly data: TensorData;
}

/** A dimension is a number once known; a string names a symbolic dimension ("batch_size"). */
export type Dim = number | string;

export interface ValueInfo {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly Dim[] | undefined;
}

export type AttributeValue =
  | { readonly kind: 'float'; readonly value: number }
  | { readonly kind: 'int'; readonly value: number }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'tensor'; readonly value: Tensor }
  | { readonly kind: 'floats'; readonly value: readonly number[] }
  | { readonly kind: 'ints'; readonly value: readonly number[] }
  | { readonly kind: 'strings'; readonly value: readonly string[] }
  | { readonly kind: 'graph'; readonly value: OnnxGraph }
  | { readonly kind: 'other'; readonly type: string };

export interface OnnxNode {
  /** Model-supplied: never put it in C, a path or a command without sanitising. */
  readonly name: string;
  readonly opType: string;
  readonly domain: string;
  /** '' marks an omitted optional input. */
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly attributes: ReadonlyMap<string, AttributeValue>;
}

export interface OnnxGraph {
  readonly name: string;
  readonly nodes: readonly OnnxNode[];
  readonly initializers: ReadonlyMap<string, Tensor>;
  /** Graph inputs that are not initializers: what a caller must feed. */
  readonly inputs: readonly ValueInfo[];
  readonly outputs: readonly ValueInfo[];
  readonly valueInfo: ReadonlyMap<string, ValueInfo>;
}

export interface OnnxModel {
  readonly path: string;
  readonly sha256: string;
  readonly irVersion: number;
  readonly producer: string;
  /** domain ('' = ai.onnx) → opset version */
  readonly opsetImports: ReadonlyMap<string, number>;
  readonly graph: OnnxGraph;
}

/** A value's static type after shape inference. */
export interface ValueType {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/**
 * The model after validation, shape inference and constant folding: every remaining node has
 * static shapes on all its inputs and outputs; every value that could be computed at compile time
 * is in `constants` and its producing nodes are gone.
 */
export interface InferredModel {
  readonly model: OnnxModel;
  /** Topologically ordered, constant sub-graphs removed, Identity/Dropout kept for ir/ to drop. */
  readonly nodes: readonly OnnxNode[];
  readonly types: ReadonlyMap<string, ValueType>;
  readonly constants: ReadonlyMap<string, Tensor>;
  readonly inputs: readonly (ValueType & { readonly name: string })[];
  readonly outputs: readonly (ValueType & { readonly name: string })[];
  /**
   * Constants folded from a DequantizeLinear of constants (a QDQ model's weights and biases), by
   * value name: the integer tensor and its quantization, which the IR needs to keep the layer integer.
   */
  readonly dequantized?: ReadonlyMap<string, DequantizedConstant>;
}

export interface DequantizedConstant {
  readonly quantized: Tensor;
  readonly scale: Tensor;
  readonly zero: Tensor | undefined;
  /** The DequantizeLinear's axis (normalised), meaningful for a per-channel scale. */
  readonly axis: number;
}
