/**
 * Quantized layers built directly (seeded operands, chosen scales and zero points) and a driver that
 * runs generated INT8 kernels on them: one executable per path holds every case's kernel, packs
 * nothing itself (the operands come packed from int8-pack.ts, in files) and writes each output back.
 */
import { execa } from 'execa';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Layer } from '../src/ir/layer.js';
import type { Tensor } from '../src/onnx/model.js';
import { quantRange, type QuantDType } from '../src/onnx/quant-math.js';
import { seededRng, type Rng } from '../src/random.js';
import { runCompiler } from '../src/toolchain/compiler.js';
import { int8OutType, type Int8KernelSource } from '../src/codegen/int8-kernel.js';
import type { Int8Packed } from '../src/codegen/int8-pack.js';
import type { Int8Problem } from '../src/space/int8-problem.js';

export interface QLayerSpec {
  /** conv: [n, cin, h, w]; matmul: [..., rows, k] */
  readonly input: readonly number[];
  readonly cout: number;
  readonly k?: [number, number];
  readonly s?: [number, number];
  readonly pads?: [number, number, number, number];
  readonly d?: [number, number];
  readonly groups?: number;
  readonly matmul?: boolean;
  readonly xZero?: number;
  readonly yZero?: number;
  /** 'int32': an integer-output layer (no requantization). */
  readonly out?: QuantDType;
  readonly relu?: boolean;
  readonly bias?: boolean;
  readonly perChannel?: boolean;
  /** Operand values: random in their full range, or these constants (worst cases), or a small range around the zero point. */
  readonly xFill?: number | 'small';
  readonly wFill?: number | 'small';
  /** Fixed scales (x, w, y) instead of ones that spread the outputs over the range. */
  readonly scales?: [number, number, number];
  readonly weightDType?: 'int8' | 'uint8';
  readonly weightZero?: number;
}

const prod = (a: readonly number[]) => a.reduce((p, d) => p * d, 1);

function fill(n: number, rng: Rng, f: number | 'small' | undefined, lo: number, hi: number, centre: number): number[] {
  if (typeof f === 'number') return new Array<number>(n).fill(f);
  if (f === 'small') return Array.from({ length: n }, () => Math.min(hi, Math.max(lo, centre + rng.int(-3, 3))));
  return Array.from({ length: n }, () => rng.int(lo, hi));
}

/** A qconv2d / qmatmul layer and its input (NCHW, or row-major for matmul). */
export function quantLayer(spec: QLayerSpec, seed: number): { layer: Layer; x: Tensor } {
  const rng = seededRng(seed);
  const xZero = spec.xZero ?? rng.int(0, 255);
  const out = spec.out ?? 'uint8';
  const [omin, omax] = quantRange(out);
  const yZero = out === 'int32' ? 0 : (spec.yZero ?? rng.int(omin, omax));
  const groups = spec.groups ?? 1;
  const [kh, kw] = spec.k ?? [1, 1];
  let inputShape = [...spec.input];
  let outputShape: number[];
  let weightDims: number[];
  let reduction: number;
  const attrs: Record<string, number | string | readonly number[]> = {};
  if (spec.matmul) {
    const k = inputShape[inputShape.length - 1]!;
    outputShape = [...inputShape.slice(0, -1), spec.cout];
    weightDims = [k, spec.cout];
    reduction = k;
  } else {
    const [n, cin, h, w] = inputShape as [number, number, number, number];
    const [sh, sw] = spec.s ?? [1, 1];
    const [dh, dw] = spec.d ?? [1, 1];
    const pads = spec.pads ?? [0, 0, 0, 0];
    const oh = Math.floor((h + pads[0] + pads[2] - ((kh - 1) * dh + 1)) / sh) + 1;
    const ow = Math.floor((w + pads[1] + pads[3] - ((kw - 1) * dw + 1)) / sw) + 1;
    outputShape = [n, spec.cout, oh, ow];
    weightDims = [spec.cout, cin / groups, kh, kw];
    reduction = (cin / groups) * kh * kw;
    Object.assign(attrs, { groups, kernel: [kh, kw], strides: [sh, sw], pads, dilations: [dh, dw] });
    inputShape = [n, cin, h, w];
  }
  const wdt = spec.weightDType ?? 'int8';
  const [wlo, whi] = quantRange(wdt);
  const weight = fill(prod(weightDims), rng, spec.wFill, wlo, whi, 0);
  const x = fill(prod(inputShape), rng, spec.xFill, 0, 255, xZero);
  const cout = spec.cout;
  const wScale = Array.from({ length: cout }, () => (spec.perChannel === false ? 0.004 : 0.001 + rng.next() * 0.01));
  const xScale = spec.scales?.[0] ?? 0.02;
  const ws = spec.scales ? new Array<number>(cout).fill(spec.scales[1]) : wScale;
  // spread Σ (x − x_zero)·w (≈ √K · 74 · 74 for uniform operands) over about ±100 output steps
  const yScale = out === 'int32' ? 0 : (spec.scales?.[2] ?? (xScale * 0.006 * Math.sqrt(reduction) * 5500) / 100);
  const clamp = out === 'int32' ? [...quantRange('int32')] : [spec.relu ? Math.max(omin, yZero) : omin, omax];
  Object.assign(attrs, { x_scale: xScale, x_zero: xZero, y_scale: yScale, y_zero: yZero, out_dtype: out, clamp });
  const params: Record<string, Tensor> = {
    weight: { dtype: wdt, dims: weightDims, data: wdt === 'int8' ? Int8Array.from(weight) : Uint8Array.from(weight) },
    weight_scale: { dtype: 'float32', dims: [cout], data: Float32Array.from(ws) },
    weight_zero: { dtype: 'int32', dims: [cout], data: new Int32Array(cout).fill(spec.weightZero ?? 0) },
  };
  if (spec.bias !== false)
    params.bias = { dtype: 'int32', dims: [cout], data: Int32Array.from({ length: cout }, () => rng.int(-20000, 20000)) };
  const layer: Layer = {
    index: 0,
    name: 'q',
    op: spec.matmul ? 'qmatmul' : 'qconv2d',
    inputs: ['x'],
    outputs: ['y'],
    inputShapes: [inputShape],
    outputShape,
    dtype: out,
    attrs,
    params,
    epilogue: [],
    macs: prod(outputShape) * reduction,
    tunable: false,
    workload: undefined,
  };
  return { layer, x: { dtype: 'uint8', dims: inputShape, data: Uint8Array.from(x) } };
}

/** NCHW → NHWC (a matmul's rows × K is already channels-last). */
export function toNhwc(l: Layer, x: Tensor): Uint8Array {
  const d = x.data as Uint8Array;
  if (l.op === 'qmatmul') return d;
  const [n, c, h, w] = x.dims as [number, number, number, number];
  const out = new Uint8Array(d.length);
  for (let b = 0; b < n; b++)
    for (let ch = 0; ch < c; ch++) for (let p = 0; p < h * w; p++) out[(b * h * w + p) * c + ch] = d[(b * c + ch) * h * w + p]!;
  return out;
}

/** NHWC kernel output → the reference's NCHW order (identity for matmul). */
export function fromNhwc(l: Layer, y: ArrayLike<number>): number[] {
  if (l.op === 'qmatmul') return Array.from(y);
  const [n, c, h, w] = l.outputShape as [number, number, number, number];
  const out = new Array<number>(y.length);
  for (let b = 0; b < n; b++)
    for (let ch = 0; ch < c; ch++) for (let p = 0; p < h * w; p++) out[(b * c + ch) * h * w + p] = y[(b * h * w + p) * c + ch]!;
  return out;
}

export interface DriverCase {
  readonly problem: Int8Problem;
  readonly kernel: Int8KernelSource;
  readonly packed: Int8Packed;
  readonly input: Uint8Array;
  readonly outputs: number;
}

/**
 * Compile every case's kernel into one program: `drv INDEX DIR THREADS` runs case INDEX on
 * DIR/{in,w,comp,mult}.bin and writes DIR/out.bin. Built at the plain x86-64 baseline: each kernel's
 * own `#pragma GCC target` must be all its path needs.
 */
export async function buildDriver(dir: string, cases: readonly DriverCase[]): Promise<string> {
  const seen = new Set<string>();
  const sources: string[] = [];
  for (const c of cases) {
    if (seen.has(c.kernel.symbol)) continue;
    seen.add(c.kernel.symbol);
    sources.push(c.kernel.source);
  }
  const calls = cases.map(
    (c, i) =>
      `    case ${i}: ${c.kernel.symbol}_run(in, w, comp, mult, (${int8OutType(c.problem)}*)out, ws, threads); ` +
      `bytes = ${c.outputs * (c.problem.outDtype === 'int32' ? 4 : 1)}; break;`,
  );
  const maxWs = Math.max(64, ...cases.map((c) => c.kernel.workspaceBytes));
  const maxOut = Math.max(...cases.map((c) => c.outputs * 4));
  const main = [
    '#include <stdio.h>',
    '#include <stdlib.h>',
    'static void* slurp(const char* dir, const char* name) {',
    '  char path[4096]; snprintf(path, sizeof path, "%s/%s", dir, name);',
    '  FILE* f = fopen(path, "rb"); if (!f) { perror(path); exit(3); }',
    '  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);',
    '  void* p = malloc(n > 0 ? n : 1); if (n > 0 && fread(p, 1, n, f) != (size_t)n) exit(4); fclose(f); return p;',
    '}',
    'int main(int argc, char** argv) {',
    '  if (argc != 4) return 2;',
    '  const int idx = atoi(argv[1]), threads = atoi(argv[3]); const char* dir = argv[2];',
    '  const uint8_t* in = slurp(dir, "in.bin"); const int8_t* w = slurp(dir, "w.bin");',
    '  const int32_t* comp = slurp(dir, "comp.bin"); const float* mult = slurp(dir, "mult.bin");',
    `  void* out = calloc(1, ${maxOut}); void* ws = aligned_alloc(64, ${maxWs}); long bytes = 0;`,
    '  switch (idx) {',
    ...calls,
    '    default: return 2;',
    '  }',
    '  char path[4096]; snprintf(path, sizeof path, "%s/out.bin", dir);',
    '  FILE* f = fopen(path, "wb"); if (!f || fwrite(out, 1, bytes, f) != (size_t)bytes) return 5; fclose(f);',
    '  return 0;',
    '}',
  ];
  const src = join(dir, 'driver.c');
  const exe = join(dir, 'driver');
  await writeFile(src, [...sources, ...main].join('\n'));
  await runCompiler(['-O2', '-march=x86-64', '-fopenmp', '-std=gnu11', '-Wall', '-Wextra', '-Werror', '-o', exe, src, '-lm']);
  return exe;
}

/** Run case `index` of a driver; its output as numbers in the kernel's (NHWC) order. */
export async function runDriver(exe: string, dir: string, index: number, c: DriverCase, threads: number): Promise<number[]> {
  await writeFile(join(dir, 'in.bin'), c.input);
  await writeFile(join(dir, 'w.bin'), c.packed.w);
  await writeFile(join(dir, 'comp.bin'), new Uint8Array(c.packed.comp.buffer));
  await writeFile(join(dir, 'mult.bin'), new Uint8Array(c.packed.mult.buffer));
  await execa(exe, [String(index), dir, String(threads)]);
  const b = await readFile(join(dir, 'out.bin'));
  const buf = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  const view =
    c.problem.outDtype === 'uint8' ? new Uint8Array(buf) : c.problem.outDtype === 'int8' ? new Int8Array(buf) : new Int32Array(buf);
  return Array.from(view);
}
