/**
 * The TS↔C contract, once: every code that crosses from TypeScript into veltair's C (kernel ops and
 * epilogue steps in vt_desc, the runtime's op and function codes, element kinds, the plan blob's
 * magic) is defined in the tables below. The C side never spells a number: it includes vt_abi.h,
 * which abiHeader() generates from these tables into every build (see headers.ts), and the runtime
 * addon reports the digest of the header it was built with, which the loader compares with
 * ABI_DIGEST before it runs anything.
 */
import { createHash } from 'node:crypto';

/**
 * Bump on any change to vt_desc or the kernel entry points (veltair_kernel.h).
 * 2: vt_desc.workspace_bytes and a workspace pointer in <sym>_run (no allocation inside a kernel).
 */
export const KERNEL_ABI_VERSION = 2;
/** Epilogue steps a vt_desc can hold. */
export const MAX_EPILOGUE_STEPS = 8;
/** The native plan blob's first two words (native-kernels/runtime/executor.c). */
export const PLAN_MAGIC = 0x7674;
/** 2: every step operand is (ref, bytes), so the executor checks offset + size, not the offset alone. */
export const PLAN_FORMAT = 2;

/** One C enum: TS names in code order; the C enumerator is `prefix + NAME` unless given. */
interface AbiEnum<N extends string> {
  readonly cName: string;
  readonly prefix: string;
  readonly names: readonly N[];
  /** C enumerator names where `prefix + NAME.toUpperCase()` does not fit. */
  readonly cNames?: Readonly<Partial<Record<N, string>>>;
  /** A trailing `<count>` enumerator, when the C side bounds-checks codes. */
  readonly count?: string;
}

const abiEnum = <const N extends string>(e: AbiEnum<N>): AbiEnum<N> => e;

export const KERNEL_OP_ENUM = abiEnum({ cName: 'vt_op', prefix: 'VT_OP_', names: ['conv2d', 'dense', 'batch_matmul'] });

export const EPILOGUE_ENUM = abiEnum({
  cName: 'vt_epi',
  prefix: 'VT_EPI_',
  names: [
    'bias',
    'relu',
    'clip',
    'leaky_relu',
    'sigmoid',
    'hard_sigmoid',
    'hard_swish',
    'silu',
    'tanh',
    'gelu',
    'residual_add',
    'channel_mul',
    'gelu_tanh',
  ],
});

export const RUNTIME_OP_ENUM = abiEnum({
  cName: 'vt_rt_op',
  prefix: 'VT_RT_',
  count: 'VT_RT_OP_COUNT',
  names: [
    'kernel',
    'copy',
    'reorder',
    'pool',
    'global_pool',
    'unary',
    'binary',
    'binary_channel',
    'where',
    'softmax',
    'layernorm',
    'channel_affine',
    'strided_copy',
    'gather',
    'reduce',
    'cast',
    'topk',
    'channel_gather',
    'elementwise_chain',
    'resize',
    'quantize',
    'dequantize',
    'qadd',
    'qmaxpool',
    'qglobal_avgpool',
    'qkernel',
    'qconcat',
    'qlut',
    'qgate',
    'qavgpool',
  ],
});

/** ELEMENTWISE_CHAIN's step kinds (ops_chain.c). */
export const CHAIN_STEP_ENUM = abiEnum({ cName: 'vt_chain_step', prefix: 'CH_', count: 'CH_COUNT', names: ['affine', 'unary', 'binary'] });

/** How an ELEMENTWISE_CHAIN binary step's operand broadcasts against the data. */
export const OPERAND_ENUM = abiEnum({
  cName: 'vt_operand_kind',
  prefix: 'OPND_',
  count: 'OPND_COUNT',
  names: ['full', 'channel', 'channel_batch', 'scalar'],
});

export const UNARY_ENUM = abiEnum({
  cName: 'vt_unary_fn',
  prefix: 'U_',
  count: 'U_COUNT',
  names: [
    'relu',
    'clip',
    'leaky_relu',
    'sigmoid',
    'hard_sigmoid',
    'hard_swish',
    'silu',
    'tanh',
    'gelu',
    'gelu_tanh',
    'erf',
    'exp',
    'log',
    'sqrt',
    'neg',
    'abs',
    'reciprocal',
    'floor',
    'ceil',
    'round',
    'sin',
    'cos',
    'softplus',
    'elu',
    'selu',
    'sign',
  ],
});

/** Codes from `equal` on write bool (FIRST_COMPARISON). */
export const BINARY_ENUM = abiEnum({
  cName: 'vt_binary_fn',
  prefix: 'B_',
  count: 'B_COUNT',
  names: ['add', 'sub', 'mul', 'div', 'pow', 'max', 'min', 'mod', 'prelu', 'equal', 'less', 'greater', 'less_or_equal', 'greater_or_equal'],
});

export const REDUCE_ENUM = abiEnum({
  cName: 'vt_reduce_fn',
  prefix: 'R_',
  count: 'R_COUNT',
  names: ['sum', 'mean', 'max', 'min', 'prod', 'sum_square', 'l1', 'l2'],
});

/** Element kinds for CAST and STRIDED_COPY's fill (also the translator's dtype codes). */
export const KIND_ENUM = abiEnum({
  cName: 'vt_kind',
  prefix: 'VT_',
  names: ['float32', 'float64', 'int32', 'int64', 'int8', 'uint8', 'bool', 'int16', 'uint16'],
  cNames: {
    float32: 'VT_F32',
    float64: 'VT_F64',
    int32: 'VT_I32',
    int64: 'VT_I64',
    int8: 'VT_I8',
    uint8: 'VT_U8',
    bool: 'VT_BOOL',
    int16: 'VT_I16',
    uint16: 'VT_U16',
  },
});

/** REORDER's layout kinds. */
export const LAYOUT_ENUM = abiEnum({ cName: 'vt_layout_kind', prefix: 'VT_LAYOUT_', names: ['natural', 'blocked', 'rows'] });

/** POOL / GLOBAL_POOL kinds. */
export const POOL_ENUM = abiEnum({ cName: 'vt_pool_kind', prefix: 'VT_POOL_', names: ['max', 'average'] });

const ENUMS = [
  KERNEL_OP_ENUM,
  EPILOGUE_ENUM,
  RUNTIME_OP_ENUM,
  UNARY_ENUM,
  BINARY_ENUM,
  REDUCE_ENUM,
  KIND_ENUM,
  LAYOUT_ENUM,
  POOL_ENUM,
  CHAIN_STEP_ENUM,
  OPERAND_ENUM,
] as const;

/** name → code of an enum. */
export function codesOf<N extends string>(e: AbiEnum<N>): Readonly<Record<N, number>> {
  return Object.fromEntries(e.names.map((n, i) => [n, i])) as Record<N, number>;
}

export function cEnumerator<N extends string>(e: AbiEnum<N>, name: N): string {
  return e.cNames?.[name] ?? `${e.prefix}${name.toUpperCase()}`;
}

function enumText<N extends string>(e: AbiEnum<N>): string {
  const items = e.names.map((n, i) => `${cEnumerator(e, n)} = ${i}`);
  if (e.count) items.push(`${e.count} = ${e.names.length}`);
  return `enum ${e.cName} {\n  ${items.join(',\n  ')}\n};`;
}

function body(): string {
  return [
    `#define VT_ABI_VERSION ${KERNEL_ABI_VERSION}`,
    `#define VT_MAX_EPI ${MAX_EPILOGUE_STEPS}`,
    `#define VT_PLAN_MAGIC 0x${PLAN_MAGIC.toString(16)}`,
    `#define VT_PLAN_FORMAT ${PLAN_FORMAT}`,
    '',
    ...ENUMS.map(enumText),
  ].join('\n');
}

/** sha256 (16 hex) of the contract: what the addon reports and the loader checks. */
export const ABI_DIGEST = createHash('sha256').update(body()).digest('hex').slice(0, 16);

/** The generated header's file name (included by veltair_kernel.h and vt_rt.h). */
export const ABI_HEADER = 'vt_abi.h';

/** vt_abi.h: written into every native build from the tables above; never edited by hand. */
export function abiHeader(): string {
  return [
    '/* vt_abi.h: GENERATED from src/toolchain/abi.ts into every build; do not edit, do not commit. */',
    '#ifndef VT_ABI_H',
    '#define VT_ABI_H',
    '',
    body(),
    '',
    `#define VT_ABI_DIGEST "${ABI_DIGEST}"`,
    '',
    '#endif',
    '',
  ].join('\n');
}
