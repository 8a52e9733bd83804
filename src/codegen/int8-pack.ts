/**
 * The constant operands of an INT8 kernel, packed once per weight set (never in the timed call):
 *  - w: per (group, oc group) slot [kh][kw][input channels / 4][oc vector][V lanes][4 channels] s8,
 *    zero past the real channels, so one reduction step loads each oc vector contiguously in the
 *    operand shape of `vpdpbusd` / `vpmaddubsw`;
 *    (depthwise: [channel vector][kh·kw][V lanes] as int32, one channel per lane; on AVX-512 VNNI,
 *    per 64-channel block [tap group of 4][slot of 64][4 taps] s8 in int8-depthwise.ts's slot order,
 *    each block kh·kw·256 bytes apart, and comp and mult in the same slot order);
 *  - comp: per padded output channel, bias − x_zero · Σ w (the input zero point's share, exact in
 *    32 bits: Σ (x − x_zero)·w = Σ x·w − x_zero·Σ w, and the padded border holds x_zero);
 *  - mult: per padded output channel, M = fl32(fl32(x_scale · w_scale) / y_scale) (quant-math.ts).
 */
import type { Layer } from '../ir/layer.js';
import { multipliersOf, quantWeightsOf, weightValuesOf } from '../ir/quant-layer.js';
import { int8Dims, type Int8Problem } from '../space/int8-problem.js';
import { int8TileCounts, int8Vec, type Int8Schedule } from '../space/int8-knobs.js';
import { dwVnniChannel, dwVnniTapGroups } from './int8-depthwise.js';

export interface Int8Packed {
  readonly w: Int8Array;
  readonly comp: Int32Array;
  readonly mult: Float32Array;
}

/** What a schedule's packed operands hold: bytes of w, and the padded output channels comp and mult each cover. */
export function int8PackedSizes(p: Int8Problem, s: Int8Schedule): { readonly wBytes: number; readonly channels: number } {
  const v = int8Vec(s.path);
  const d = int8Dims(p, v);
  if (dwVnni(p, s)) {
    const blocks = Math.ceil(d.ocVecs / 4);
    return { wBytes: blocks * 64 * p.kh * p.kw * 4, channels: blocks * 64 };
  }
  const channels = d.taskGroups * d.ocVecs * v;
  return { wBytes: p.depthwise ? d.ocVecs * p.kh * p.kw * v * 4 : channels * d.k4 * 4, channels };
}

/** Whether a schedule runs the AVX-512 VNNI depthwise kernel (its own packing). */
const dwVnni = (p: Int8Problem, s: Int8Schedule): boolean => p.depthwise && s.path === 'avx512vnni';

export function packInt8(l: Layer, p: Int8Problem, s: Int8Schedule): Int8Packed {
  const wq = quantWeightsOf(l);
  const m = multipliersOf(l);
  const src = weightValuesOf(l);
  const v = int8Vec(s.path);
  const d = int8Dims(p, v);
  const c = int8TileCounts(p, s);
  // the natural weight of (output channel, input channel of its group, tap): OIHW for conv, K×N for matmul
  const at =
    p.op === 'qmatmul'
      ? (oc: number, ic: number) => src[ic * p.cout + oc]!
      : (oc: number, ic: number, ky: number, kx: number) => src[((oc * d.cinG + ic) * p.kh + ky) * p.kw + kx]!;
  const padded = d.taskGroups * d.ocVecs * v;
  const comp = new Int32Array(padded);
  const mult = new Float32Array(padded);
  const w = p.depthwise ? new Int8Array(depthwiseWeights(p, v, d.ocVecs, at).buffer) : new Int8Array(padded * d.k4 * 4);
  for (let g = 0; g < (p.depthwise ? 0 : p.groups); g++)
    for (let qg = 0; qg < c.ocGroups; qg++) {
      const ocb = Math.min(s.regOc, d.ocVecs - qg * s.regOc);
      const base = g * d.ocVecs * v + qg * s.regOc * v;
      let o = base * d.k4 * 4;
      for (let ky = 0; ky < p.kh; ky++)
        for (let kx = 0; kx < p.kw; kx++)
          for (let c4 = 0; c4 < d.cinGP; c4 += 4)
            for (let i = 0; i < ocb; i++)
              for (let lane = 0; lane < v; lane++)
                for (let e = 0; e < 4; e++, o++) {
                  const oc = (qg * s.regOc + i) * v + lane,
                    ic = c4 + e;
                  if (oc < d.coutG && ic < d.cinG) w[o] = at(g * d.coutG + oc, ic, ky, kx);
                }
    }
  for (let g = 0; g < d.taskGroups; g++)
    for (let oc = 0; oc < d.coutG; oc++) {
      const real = g * d.coutG + oc;
      let sum = 0;
      for (let ic = 0; ic < d.cinG; ic++) for (let ky = 0; ky < p.kh; ky++) for (let kx = 0; kx < p.kw; kx++) sum += at(real, ic, ky, kx);
      const at32 = g * d.ocVecs * v + oc;
      comp[at32] = ((wq.bias?.[real] ?? 0) - p.xZero * sum) | 0;
      mult[at32] = m[real]!;
    }
  return dwVnni(p, s) ? depthwiseVnniPacked(p, at, comp, mult) : { w, comp, mult };
}

/** The VNNI depthwise kernel's operands: four taps per dword, channels in slot order per 64-channel block. */
function depthwiseVnniPacked(
  p: Int8Problem,
  at: (oc: number, ic: number, ky: number, kx: number) => number,
  comp: Int32Array,
  mult: Float32Array,
): Int8Packed {
  const taps = p.kh * p.kw;
  const blocks = Math.ceil(p.cout / 64);
  const w = new Int8Array(blocks * 64 * taps * 4);
  const pc = new Int32Array(blocks * 64);
  const pm = new Float32Array(blocks * 64);
  for (let b = 0; b < blocks; b++)
    for (let slot = 0; slot < 64; slot++) {
      const c = b * 64 + dwVnniChannel(slot);
      if (c >= p.cout) continue;
      pc[b * 64 + slot] = comp[c]!;
      pm[b * 64 + slot] = mult[c]!;
      for (let g = 0; g < dwVnniTapGroups(p); g++)
        for (let e = 0; e < 4; e++) {
          const t = g * 4 + e;
          if (t < taps) w[b * 64 * taps * 4 + (g * 64 + slot) * 4 + e] = at(c, 0, Math.floor(t / p.kw), t % p.kw);
        }
    }
  return { w, comp: pc, mult: pm };
}

/** A version's packed operands as the one param the runtime's INT8 kernel step reads: w, comp, mult, each 64-byte aligned. */
export interface Int8Blob {
  readonly bytes: Uint8Array;
  readonly compOffset: number;
  readonly multOffset: number;
}

export function int8Blob(packed: Int8Packed): Int8Blob {
  const align = (n: number) => Math.ceil(n / 64) * 64;
  const compOffset = align(packed.w.byteLength);
  const multOffset = compOffset + align(packed.comp.byteLength);
  const bytes = new Uint8Array(multOffset + packed.mult.byteLength);
  bytes.set(new Uint8Array(packed.w.buffer, packed.w.byteOffset, packed.w.byteLength), 0);
  bytes.set(new Uint8Array(packed.comp.buffer, packed.comp.byteOffset, packed.comp.byteLength), compOffset);
  bytes.set(new Uint8Array(packed.mult.buffer, packed.mult.byteOffset, packed.mult.byteLength), multOffset);
  return { bytes, compOffset, multOffset };
}

function depthwiseWeights(
  p: Int8Problem,
  v: number,
  vecs: number,
  at: (oc: number, ic: number, ky: number, kx: number) => number,
): Int32Array {
  const taps = p.kh * p.kw;
  const out = new Int32Array(vecs * taps * v);
  for (let c = 0; c < p.cout; c++)
    for (let t = 0; t < taps; t++) out[(Math.floor(c / v) * taps + t) * v + (c % v)] = at(c, 0, Math.floor(t / p.kw), t % p.kw);
  return out;
}
