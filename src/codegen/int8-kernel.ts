/**
 * C source of one INT8 candidate (a quantized conv / matmul, one schedule, one path): a
 * self-contained translation unit exporting
 *
 *   void <sym>_run(const uint8_t* in, const int8_t* w, const int32_t* comp, const float* mult,
 *                  OUT* out, void* workspace, int nthreads);
 *
 * in: NHWC u8 activations; out: NHWC (u8, s8 or s32); w, comp, mult: what int8-pack.ts packs
 * (a depthwise kernel's w holds int32 weights);
 * workspace: int8WorkspaceBytes of scratch (the padded input copy). Like the FP32 kernels it
 * work-shares over a calling OpenMP team, or opens its own. The path's extensions are named in a
 * `#pragma GCC target`, so the unit compiles under any -march; the symbol comes from the content,
 * never from anything a model named.
 *
 * It also exports `const int64_t* <sym>_qdesc(void)`: {INT8_DESC_VERSION, input bytes, output bytes,
 * w bytes, comp/mult channels, workspace bytes}, so the runtime refuses a kernel built for another
 * problem at load instead of letting it read past a buffer (native-kernels/runtime/executor.c).
 */
import { createHash } from 'node:crypto';
import { INT8_PATH_TARGET } from '../toolchain/isa.js';
import { int8Dims, int8WorkspaceBytes, type Int8Dims, type Int8Problem } from '../space/int8-problem.js';
import { int8TileCounts, int8Vec, type Int8Schedule } from '../space/int8-knobs.js';
import { internalError } from '../errors.js';
import { depthwiseMicrokernel, depthwiseVnniMicrokernel } from './int8-depthwise.js';
import { int8Ops, type Int8Ops } from './int8-isa.js';
import { int8PackedSizes } from './int8-pack.js';

/** Bump when the generated INT8 code changes (part of every symbol). 2: `<sym>_qdesc`; 3: inline `vpdpbusd`, task order; 4: comp-started accumulators. */
export const INT8_CODEGEN_VERSION = 4;
/** The first word of `<sym>_qdesc` (executor.c checks it). */
export const INT8_DESC_VERSION = 1;

export interface Int8KernelSource {
  readonly symbol: string;
  readonly source: string;
  readonly workspaceBytes: number;
}

export function int8Symbol(p: Int8Problem, s: Int8Schedule): string {
  const h = createHash('sha256')
    .update(`int8\0${INT8_CODEGEN_VERSION}\0${JSON.stringify(p)}\0${JSON.stringify(s)}`)
    .digest('hex');
  return `vt_q${h.slice(0, 16)}`;
}

/** The `<sym>_qdesc` words of a problem and schedule (see the header). */
export function int8DescWords(p: Int8Problem, s: Int8Schedule): number[] {
  const sizes = int8PackedSizes(p, s);
  const outBytes = p.outDtype === 'int32' ? 4 : 1;
  const ws = int8WorkspaceBytes(p, int8Dims(p, int8Vec(s.path)));
  return [INT8_DESC_VERSION, p.n * p.h * p.w * p.cin, p.n * p.oh * p.ow * p.cout * outBytes, sizes.wBytes, sizes.channels, ws];
}

export function int8OutType(p: Int8Problem): string {
  return p.outDtype === 'uint8' ? 'uint8_t' : p.outDtype === 'int8' ? 'int8_t' : 'int32_t';
}

const PARAMS = (outT: string) =>
  `const uint8_t* restrict in, const int8_t* restrict w, const int32_t* restrict comp, const float* restrict mult, ${outT}* restrict out, void* workspace`;
const ARGS = 'in, w, comp, mult, out, workspace';

/** One register block: ocb output vectors × width columns of one output row, over every tap and channel. */
function microkernel(name: string, p: Int8Problem, d: Int8Dims, ops: Int8Ops, ocb: number, width: number): string {
  const v = d.vec;
  const outT = int8OutType(p);
  const acc: string[] = [];
  for (let i = 0; i < ocb; i++) for (let j = 0; j < width; j++) acc.push(`c${i}_${j} = ${ops.init(i)}`);
  const columns = Array.from({ length: width }, (_, j) => ops.column(`ic + ${j * p.sw * d.cp}`, j, ocb));
  const finish: string[] = [];
  for (let i = 0; i < ocb; i++)
    for (let j = 0; j < width; j++)
      finish.push(...ops.finish(`c${i}_${j}`, i, `op + ${j * p.cout + i * v}`, i === ocb - 1 ? 'lanes' : `${v}`));
  return [
    `static __attribute__((noinline)) void ${name}(const uint8_t* restrict ip, const int8_t* restrict wp, ` +
      `const int32_t* restrict comp, const float* restrict mult, ${outT}* restrict op, int lanes) {`,
    '  (void)mult; (void)lanes;',
    ...ops.constants.map((x) => '  ' + x),
    `  ${ops.accType} ${acc.join(', ')};`,
    `  for (int ky = 0; ky < ${p.kh}; ++ky)`,
    `  #pragma GCC unroll ${p.kw}`,
    `  for (int kx = 0; kx < ${p.kw}; ++kx) {`,
    `    const uint8_t* ik = ip + ((long)ky * ${p.dh * d.wp} + (long)kx * ${p.dw}) * ${d.cp};`,
    `    for (int c = 0; c < ${d.cinGP / 4}; ++c) {`,
    '      const uint8_t* ic = ik + 4 * c;',
    ...ops.loadWeights('wp', ocb).map((x) => '      ' + x),
    ...columns.map((x) => '      ' + x),
    `      wp += ${ocb * v * 4};`,
    '    }',
    '  }',
    ...finish.map((x) => '  ' + x),
    '}',
  ].join('\n');
}

/**
 * A task's output row r, group g and oc tile ot. Rows outermost: a thread's tasks share input rows
 * and stream every weight once per row. oc tiles outermost: a thread keeps one tile's weight slab hot
 * in its cache across every row, and reads the input once per tile (layers whose weights outgrow L2).
 */
function taskIndices(p: Int8Problem, d: Int8Dims, c: { readonly ocTiles: number }, ocOuter: boolean): string[] {
  const rowsLast = [
    `    const int ot = (int)(rest % ${c.ocTiles}); rest /= ${c.ocTiles};`,
    `    const int g = (int)(rest % ${d.taskGroups}); rest /= ${d.taskGroups};`,
    `    const long r = rest, b = r / ${p.oh}, oy = r % ${p.oh};`,
  ];
  const ocLast = [
    `    const long r = rest % ${d.rows}; rest /= ${d.rows};`,
    `    const long b = r / ${p.oh}, oy = r % ${p.oh};`,
    `    const int g = (int)(rest % ${d.taskGroups}); rest /= ${d.taskGroups};`,
    '    const int ot = (int)rest;',
  ];
  return ocOuter ? ocLast : rowsLast;
}

/** The padded NHWC copy: border pixels and padding channels hold x_zero. */
function copyInput(p: Int8Problem, d: Int8Dims): string[] {
  if (!d.copy) return ['  (void)workspace;'];
  const [pt, pl] = p.pads;
  return [
    '  uint8_t* pad = (uint8_t*)workspace;',
    '  #pragma omp for schedule(static)',
    `  for (long r = 0; r < ${p.n * d.hp}; ++r) {`,
    `    const long b = r / ${d.hp}; const int y = (int)(r % ${d.hp}) - ${pt};`,
    `    uint8_t* dr = pad + r * ${d.wp * d.cp};`,
    `    for (int x = 0; x < ${d.wp}; ++x) {`,
    `      const int ix = x - ${pl};`,
    `      uint8_t* dp = dr + (long)x * ${d.cp};`,
    `      if (y < 0 || y >= ${p.h} || ix < 0 || ix >= ${p.w}) { memset(dp, ${p.xZero}, ${d.cp}); continue; }`,
    `      const uint8_t* sp = in + ((b * ${p.h} + y) * ${p.w} + ix) * ${p.cin};`,
    ...(d.cp === p.cin
      ? [`      memcpy(dp, sp, ${p.cin});`]
      : [
          `      for (int g = 0; g < ${p.groups}; ++g) {`,
          `        memcpy(dp + g * ${d.cinGP}, sp + g * ${d.cinG}, ${d.cinG});`,
          `        memset(dp + g * ${d.cinGP} + ${d.cinG}, ${p.xZero}, ${d.cinGP - d.cinG});`,
          '      }',
        ]),
    '    }',
    '  }',
    '  src = pad;',
  ].filter((x) => x !== '');
}

export function generateInt8Kernel(p: Int8Problem, s: Int8Schedule): Int8KernelSource {
  const sym = int8Symbol(p, s);
  if (!/^vt_q[0-9a-f]{16}$/.test(sym)) throw internalError(`bad kernel symbol ${sym}`);
  const v = int8Vec(s.path);
  const d = int8Dims(p, v);
  const c = int8TileCounts(p, s);
  const ops = int8Ops(s.path, p);
  const outT = int8OutType(p);
  const tailOcb = d.ocVecs - (c.ocGroups - 1) * s.regOc;
  const tailW = d.cols - (c.colBlocks - 1) * s.regCols;
  const name = (ocb: number, width: number) => `${sym}_u${ocb}x${width}`;
  const kernels: string[] = [];
  for (const ocb of new Set([s.regOc, tailOcb]))
    for (const width of new Set([s.regCols, tailW]))
      kernels.push(
        p.depthwise
          ? s.path === 'avx512vnni'
            ? depthwiseVnniMicrokernel(name(ocb, width), p, d, outT, ocb, width)
            : depthwiseMicrokernel(name(ocb, width), p, d, ops, outT, ocb, width)
          : microkernel(name(ocb, width), p, d, ops, ocb, width),
      );
  const call = (ocb: number, width: number) => `${name(ocb, width)}(ip, wq, cq, mq, oq, lanes);`;
  const byWidth = (ocb: number) =>
    tailW === s.regCols ? call(ocb, s.regCols) : `if (blk == ${c.colBlocks - 1}) ${call(ocb, tailW)} else ${call(ocb, s.regCols)}`;
  const dispatch =
    tailOcb === s.regOc ? byWidth(s.regOc) : `if (q == ${c.ocGroups - 1}) { ${byWidth(tailOcb)} } else { ${byWidth(s.regOc)} }`;
  const slot = d.k4 * 4;
  const body = [
    `static void ${sym}_body(${PARAMS(outT)}) {`,
    '  const uint8_t* src = in;',
    ...copyInput(p, d),
    '  #pragma omp for schedule(static)',
    `  for (long t = 0; t < ${c.tasks}; ++t) {`,
    '    long rest = t;',
    `    const int ct = (int)(rest % ${c.colTiles}); rest /= ${c.colTiles};`,
    ...taskIndices(p, d, c, s.ocOuter === true),
    `    const uint8_t* irow = src + ((b * ${d.hp} + oy * ${p.sh}) * ${d.wp}) * ${d.cp} + (long)g * ${d.cinGP};`,
    `    ${outT}* orow = out + r * ${p.ow * p.cout} + (long)g * ${d.coutG};`,
    `    const int q0 = ot * ${s.tileOc}, q1 = q0 + ${s.tileOc} < ${c.ocGroups} ? q0 + ${s.tileOc} : ${c.ocGroups};`,
    `    const int k0 = ct * ${s.tileCols}, k1 = k0 + ${s.tileCols} < ${c.colBlocks} ? k0 + ${s.tileCols} : ${c.colBlocks};`,
    '    for (int q = q0; q < q1; ++q) {',
    `      const long ch = (long)g * ${d.ocVecs * v} + (long)q * ${s.regOc * v};`,
    p.depthwise ? `      const int32_t* wq = (const int32_t*)w + ch * ${d.k4};` : `      const int8_t* wq = w + ch * ${slot};`,
    '      const int32_t* cq = comp + ch;',
    '      const float* mq = mult + ch;',
    `      const int lanes = q == ${c.ocGroups - 1} ? ${d.ocLast} : ${v};`,
    '      for (int blk = k0; blk < k1; ++blk) {',
    // a depthwise block's input channels are its output channels; a conv block reads all its group's channels
    `        const uint8_t* ip = irow + (long)blk * ${s.regCols * p.sw * d.cp}${p.depthwise ? ' + ch' : ''};`,
    `        ${outT}* oq = orow + (long)blk * ${s.regCols * p.cout} + (long)q * ${s.regOc * v};`,
    `        ${dispatch}`,
    '      }',
    '    }',
    '  }',
    '}',
  ];
  const entry = [
    `void ${sym}_run(${PARAMS(outT)}, int nthreads) {`,
    `  if (omp_in_parallel()) { ${sym}_body(${ARGS}); return; }`,
    '  #pragma omp parallel num_threads(nthreads)',
    `  ${sym}_body(${ARGS});`,
    '}',
    `const int64_t* ${sym}_qdesc(void) {`,
    `  static const int64_t d[] = { ${int8DescWords(p, s).join(', ')} };`,
    '  return d;',
    '}',
  ];
  const target = INT8_PATH_TARGET[s.path];
  const source = [
    `/* veltair INT8 candidate ${sym}: generated, do not edit. schedule ${JSON.stringify(s)} */`,
    '#include <stdint.h>',
    '#include <string.h>',
    '#include <math.h>',
    '#include <omp.h>',
    '#include <immintrin.h>',
    '#pragma GCC push_options',
    target === '' ? '' : `#pragma GCC target("${target}")`,
    '',
    kernels.join('\n\n'),
    '',
    body.join('\n'),
    '',
    entry.join('\n'),
    '#pragma GCC pop_options',
    '',
  ].join('\n');
  return { symbol: sym, source, workspaceBytes: int8WorkspaceBytes(p, d) };
}
