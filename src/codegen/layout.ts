/**
 * Layout transforms of a candidate (natural ↔ blocked) and its self-description (vt_desc). These
 * run once per weight set or at the graph's layout boundaries, never inside the timed call.
 */
import type { WorkloadShape } from '../ir/workload.js';
import type { Problem } from '../space/problem.js';
import { roundUp } from '../space/problem.js';
import { isWinograd, tileCounts, type Schedule } from '../space/knobs.js';
import { winogradProblem } from '../space/winograd.js';
import { directWeightLayout, directWorkspace } from './direct.js';
import { depthwiseWeightFloats } from './depthwise.js';
import { EPILOGUE_CODES, epilogueParamCount } from './epilogue.js';
import { emitWinogradPackWeight, winogradWeightLayout, winogradWorkspace } from './winograd.js';

export interface BufferSizes {
  readonly input: number;
  readonly weight: number;
  readonly output: number;
  readonly bias: number;
  readonly gate: number;
}

/** Bytes of caller-provided scratch the candidate's run function needs (vt_desc.workspace_bytes). */
export function workspaceBytesOf(w: WorkloadShape, p: Problem, s: Schedule): number {
  if (isWinograd(s)) return winogradWorkspace(winogradProblem(w, s.vec)).bytes;
  return p.kind === 'depthwise' ? 0 : directWorkspace(p, s).bytes;
}

function convWeightFloats(w: WorkloadShape, p: Problem, s: Schedule): number {
  if (isWinograd(s)) return winogradWeightLayout(winogradProblem(w, s.vec), s).weightFloats;
  return p.kind === 'depthwise' ? depthwiseWeightFloats(p) : directWeightLayout(p, s).weightFloats;
}

export function bufferSizes(w: WorkloadShape, p: Problem, s: Schedule): BufferSizes {
  const v = p.vec;
  if (w.op === 'conv2d') {
    const cinP = roundUp(w.cin, v),
      coutP = roundUp(w.cout, v);
    const weight = convWeightFloats(w, p, s);
    return { input: w.n * cinP * w.h * w.w, weight, output: w.n * coutP * w.oh * w.ow, bias: coutP, gate: w.n * coutP };
  }
  const batch = w.op === 'batch_matmul' ? w.batch : 1;
  const kp = roundUp(w.k, v),
    np = roundUp(w.n, v);
  const weight =
    w.op === 'dense'
      ? directWeightLayout(p as Extract<Problem, { kind: 'direct' }>, s).weightFloats
      : batch * (w.transB ? w.n * kp : w.k * np);
  return { input: batch * w.m * kp, weight, output: batch * w.m * np, bias: np, gate: batch * np };
}

/** NCHW ↔ NCHW[V]c for a C×H×W activation of n images; padded channels written as zero. */
function blockedNchw(name: string, n: number, c: number, hw: number, v: number, unpack: boolean): string {
  const cb = Math.ceil(c / v);
  const blocked = `(((long)i * ${cb} + ch / ${v}) * ${hw} + x) * ${v} + ch % ${v}`;
  const natural = `((long)i * ${c} + ch) * ${hw} + x`;
  const body = unpack
    ? `for (int ch = 0; ch < ${c}; ++ch) for (int x = 0; x < ${hw}; ++x) dst[${natural}] = src[${blocked}];`
    : `for (int ch = 0; ch < ${cb * v}; ++ch) for (int x = 0; x < ${hw}; ++x) dst[${blocked}] = ch < ${c} ? src[${natural}] : 0.0f;`;
  return `void ${name}(const float* src, float* dst) {\n  for (int i = 0; i < ${n}; ++i)\n    ${body}\n}`;
}

/** Row-major rows × cols ↔ rows × roundUp(cols, V); padded columns written as zero. */
function paddedRows(name: string, rows: number, cols: number, v: number, unpack: boolean): string {
  const cp = roundUp(cols, v);
  const body = unpack
    ? `for (int j = 0; j < ${cols}; ++j) dst[(long)r * ${cols} + j] = src[(long)r * ${cp} + j];`
    : `for (int j = 0; j < ${cp}; ++j) dst[(long)r * ${cp} + j] = j < ${cols} ? src[(long)r * ${cols} + j] : 0.0f;`;
  return `void ${name}(const float* src, float* dst) {\n  for (long r = 0; r < ${rows}; ++r)\n    ${body}\n}`;
}

/** Packed weights of the direct problem: [g][oc group][ic block][kh][kw][lane][regOc vectors][V] (see DirectLayout). */
function packDirectWeight(name: string, w: WorkloadShape, p: Extract<Problem, { kind: 'direct' }>, s: Schedule): string {
  const c = tileCounts(p, s);
  const { slot } = directWeightLayout(p, s);
  const v = p.vec;
  const coutg = (p.ocVecs - 1) * v + p.ocLanesLast,
    cing = (p.icBlocks - 1) * v + p.icLanesLast;
  const tailOcb = p.ocVecs - (c.ocGroups - 1) * s.regOc;
  // natural index of weight (oc within group, ic within group, kh, kw); merged groups: block-diagonal, zero across the original groups
  const m = p.groupMerge,
    natCoutg = coutg / m,
    natCing = cing / m;
  const src =
    w.op !== 'conv2d'
      ? `src[(long)ic * ${coutg} + oc]`
      : m === 1
        ? `src[((((long)g * ${coutg} + oc) * ${cing} + ic) * ${p.kh} + y) * ${p.kw} + x]`
        : `(oc / ${natCoutg} == ic / ${natCing} && g * ${m} + oc / ${natCoutg} < ${w.groups} ` +
          `? src[((((long)g * ${m} + oc / ${natCoutg}) * ${natCoutg} + oc % ${natCoutg}) * ${natCing} ` +
          `+ ic % ${natCing}) * ${p.kh * p.kw} + (long)y * ${p.kw} + x] : 0.0f)`;
  return [
    `void ${name}(const float* src, float* dst) {`,
    `  for (int g = 0; g < ${p.groups}; ++g)`,
    `  for (int q = 0; q < ${c.ocGroups}; ++q) {`,
    `    const int ocb = q == ${c.ocGroups - 1} ? ${tailOcb} : ${s.regOc};`,
    `    float* slot = dst + (long)(g * ${c.ocGroups} + q) * ${slot};`,
    `    for (int icb = 0; icb < ${p.icBlocks}; ++icb) for (int y = 0; y < ${p.kh}; ++y) for (int x = 0; x < ${p.kw}; ++x)`,
    `    for (int l = 0; l < (icb == ${p.icBlocks - 1} ? ${p.icLanesLast} : ${v}); ++l)`,
    `    for (int i = 0; i < ocb; ++i) for (int lane = 0; lane < ${v}; ++lane) {`,
    `      const int oc = (q * ${s.regOc} + i) * ${v} + lane, ic = icb * ${v} + l;`,
    `      const int lanes = icb == ${p.icBlocks - 1} ? ${p.icLanesLast} : ${v};`,
    `      slot[(long)icb * ${p.kh * p.kw * v} * ocb * ${v} + (((long)y * ${p.kw} + x) * lanes + l) * ocb * ${v} + i * ${v} + lane] =`,
    `        oc < ${coutg} && ic < ${cing} ? ${src} : 0.0f;`,
    '    }',
    '  }',
    '}',
  ].join('\n');
}

function packDepthwiseWeight(name: string, p: Extract<Problem, { kind: 'depthwise' }>): string {
  const c = (p.chanVecs - 1) * p.vec + p.chanLanesLast;
  const taps = p.kh * p.kw;
  return [
    `void ${name}(const float* src, float* dst) {`,
    `  for (int ch = 0; ch < ${p.chanVecs * p.vec}; ++ch) for (int t = 0; t < ${taps}; ++t)`,
    `    dst[((long)(ch / ${p.vec}) * ${taps} + t) * ${p.vec} + ch % ${p.vec}] = ch < ${c} ? src[(long)ch * ${taps} + t] : 0.0f;`,
    '}',
  ].join('\n');
}

export function emitLayout(sym: string, w: WorkloadShape, p: Problem, s: Schedule): string {
  const v = p.vec;
  const fns: string[] = [];
  if (w.op === 'conv2d') {
    fns.push(blockedNchw(`${sym}_pack_input`, w.n, w.cin, w.h * w.w, v, false));
    fns.push(blockedNchw(`${sym}_pack_output`, w.n, w.cout, w.oh * w.ow, v, false));
    fns.push(blockedNchw(`${sym}_unpack_output`, w.n, w.cout, w.oh * w.ow, v, true));
    fns.push(
      isWinograd(s)
        ? emitWinogradPackWeight(`${sym}_pack_weight`, w, s)
        : p.kind === 'depthwise'
          ? packDepthwiseWeight(`${sym}_pack_weight`, p)
          : packDirectWeight(`${sym}_pack_weight`, w, p, s),
    );
  } else {
    const batch = w.op === 'batch_matmul' ? w.batch : 1;
    fns.push(paddedRows(`${sym}_pack_input`, batch * w.m, w.k, v, false));
    fns.push(paddedRows(`${sym}_pack_output`, batch * w.m, w.n, v, false));
    fns.push(paddedRows(`${sym}_unpack_output`, batch * w.m, w.n, v, true));
    if (w.op === 'dense') fns.push(packDirectWeight(`${sym}_pack_weight`, w, p as Extract<Problem, { kind: 'direct' }>, s));
    else
      fns.push(
        w.transB
          ? paddedRows(`${sym}_pack_weight`, batch * w.n, w.k, v, false)
          : paddedRows(`${sym}_pack_weight`, batch * w.k, w.n, v, false),
      );
  }
  return fns.join('\n\n');
}

export function emitDescriptor(sym: string, w: WorkloadShape, p: Problem, s: Schedule): string {
  const z = bufferSizes(w, p, s);
  const conv =
    w.op === 'conv2d'
      ? `.n = ${w.n}, .cin = ${w.cin}, .h = ${w.h}, .w = ${w.w}, .cout = ${w.cout}, .kh = ${w.kh}, .kw = ${w.kw}, ` +
        `.stride_h = ${w.strideH}, .stride_w = ${w.strideW}, .pad_t = ${w.pads[0]}, .pad_l = ${w.pads[1]}, ` +
        `.pad_b = ${w.pads[2]}, .pad_r = ${w.pads[3]}, .dil_h = ${w.dilationH}, .dil_w = ${w.dilationW}, ` +
        `.groups = ${w.groups}, .oh = ${w.oh}, .ow = ${w.ow},`
      : `.batch = ${w.op === 'batch_matmul' ? w.batch : 1}, .m = ${w.m}, .k = ${w.k}, .nn = ${w.n}, ` +
        `.trans_b = ${w.op === 'batch_matmul' && w.transB ? 1 : 0},`;
  const op = { conv2d: 'VT_OP_CONV2D', dense: 'VT_OP_DENSE', batch_matmul: 'VT_OP_BATCH_MATMUL' }[w.op];
  const epi = w.epilogue.map((e) => EPILOGUE_CODES[e]);
  return [
    `static const vt_desc ${sym}_descriptor = {`,
    `  .abi_version = VT_ABI_VERSION, .op = ${op}, .vec = ${p.vec},`,
    `  ${conv}`,
    `  .n_epi = ${epi.length}, .epi = {${epi.join(', ')}}, .n_epi_params = ${epilogueParamCount(w.epilogue)},`,
    `  .input_floats = ${z.input}, .weight_floats = ${z.weight}, .output_floats = ${z.output}, ` +
      `.bias_floats = ${z.bias}, .chanmul_floats = ${z.gate}, .workspace_bytes = ${workspaceBytesOf(w, p, s)},`,
    '};',
    `const vt_desc* ${sym}_desc(void) { return &${sym}_descriptor; }`,
  ].join('\n');
}
