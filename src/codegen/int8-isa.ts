/**
 * The C of each INT8 path for the three things a microkernel does: load the weight vectors of one
 * reduction step, multiply-accumulate one broadcast of four u8 activations into them, and finish an
 * accumulator (requantize, clamp, store). Everything else is shared (int8-kernel.ts).
 *
 * u8 × s8 on AVX2: `vpmaddubsw` adds two u8·s8 products into a saturating int16, and two products of
 * 255 · ±128 (or 255 · 127) overflow it: ONNX Runtime documents that its AVX2 U8S8 path may saturate,
 * and oneDNN avoids it by quantizing weights to 7 bits; both change results. We keep the exact sum
 * instead by splitting each activation byte x = lo + 128·hi with lo = x & 0x7F and hi = x >> 7:
 * |lo·w + lo'·w'| ≤ 2 · 127 · 128 = 32512 and |hi·w + hi'·w'| ≤ 256 never saturate, and `vpmaddwd`
 * by 1 and by 128 widens each into the 32-bit sum. Twice the multiplies of the saturating form, and
 * the reason VNNI (`vpdpbusd`, no intermediate saturation at all) is preferred where present.
 *
 * Depthwise taps (int8-depthwise.ts) widen the u8 inputs to 32 bits and multiply them by int32
 * weights (vpmulld): exact, and nothing to pair, since a depthwise output reduces over taps only
 * (AVX-512 VNNI interleaves four taps instead and uses `vpdpbusd`: int8-depthwise.ts).
 *
 * Requantization is quant-math.ts's, bit for bit: fl32(acc + bias') · M in float32 (cvtdq2ps, mulps),
 * round half to even (cvtps2dq under the default MXCSR mode, nearbyintf in C), + y_zero, clamp.
 * The float is first clamped to a few units past the output range, which changes no result (the
 * integer clamp follows) but keeps the conversion in range.
 */
import type { Int8Path } from '../toolchain/isa.js';
import type { Int8Problem } from '../space/int8-problem.js';

export interface Int8Ops {
  readonly accType: string;
  /** The starting value of output vector i's accumulators (VNNI: its comp, so the finish has one add less). */
  init(i: number): string;
  /** Statements declaring the kernel's constant vectors. */
  readonly constants: readonly string[];
  /** Statements loading weight vectors w0…w<ocb-1> of one reduction step at `ptr` (const int8_t*). */
  loadWeights(ptr: string, ocb: number): string[];
  /** One column: broadcast the four bytes at `addr` (const uint8_t*) into accumulators c<i>_<j>. */
  column(addr: string, j: number, ocb: number): string;
  /** Depthwise: int32 weight vector w<i> at `ptr` (const int32_t*). */
  dwWeight(ptr: string, i: number): string;
  /** Depthwise: acc += the u8 channels at `addr` widened to 32 bits × w<i>; `partial`: only `lanes` channels are real. */
  dwTap(acc: string, addr: string, i: number, partial: boolean): string;
  /**
   * Finish accumulator `acc` of output vector i: + comp[i·V…] where `init` did not start it there,
   * requantize, store `lanes` channels at `dst` (lanes: a C expression, V for a full vector).
   */
  finish(acc: string, i: number, dst: string, lanes: string): string[];
}

/**
 * `acc += dot4(a, w)` on AVX-512 VNNI, as one inline `vpdpbusd`. GCC 12's intrinsic ties the
 * accumulator to a fresh register each step, and its allocator then copies every accumulator twice
 * per reduction step (and spills them at 24): the copies fill the front end and cost 10-50% of the
 * kernel. The asm names the accumulator in place ("+v"), so the loop is loads, broadcasts and dots.
 */
export const dpbusd512 = (acc: string, a: string, w: string): string =>
  `__asm__("vpdpbusd %2, %1, %0" : "+v"(${acc}) : "v"(${a}), "v"(${w}));`;

/** C literal of a small integer-valued float. */
const f32 = (v: number) => `${v}.0f`;

function bounds(p: Int8Problem) {
  const [lo, hi] = p.clamp;
  return { lo, hi, yz: p.yZero, lf: f32(lo - p.yZero - 1), hf: f32(hi - p.yZero + 1) };
}

function vnni(p: Int8Problem): Int8Ops {
  const b = bounds(p);
  return {
    accType: '__m512i',
    init: (i) => `_mm512_loadu_si512(comp + ${i * 16})`,
    constants: p.requant
      ? [
          `const __m512 vlq = _mm512_set1_ps(${f32(b.lo - b.yz)}), vhq = _mm512_set1_ps(${f32(b.hi - b.yz)});`,
          `const __m512i vyz = _mm512_set1_epi32(${b.yz});`,
        ]
      : [],
    loadWeights: (ptr, ocb) => Array.from({ length: ocb }, (_, i) => `const __m512i w${i} = _mm512_loadu_si512(${ptr} + ${i * 64});`),
    column: (addr, j, ocb) => {
      const dots = Array.from({ length: ocb }, (_, i) => dpbusd512(`c${i}_${j}`, 'a', `w${i}`)).join(' ');
      return `{ int32_t t; memcpy(&t, ${addr}, 4); const __m512i a = _mm512_set1_epi32(t); ${dots} }`;
    },
    dwWeight: (ptr, i) => `const __m512i w${i} = _mm512_loadu_si512(${ptr});`,
    dwTap: (acc, addr, i, partial) => {
      const x = partial ? `_mm_maskz_loadu_epi8((__mmask16)((1u << lanes) - 1u), ${addr})` : `_mm_loadu_si128((const __m128i*)(${addr}))`;
      return `${acc} = _mm512_add_epi32(${acc}, _mm512_mullo_epi32(_mm512_cvtepu8_epi32(${x}), w${i}));`;
    },
    // the accumulator started at comp (init); clamping the float at the integer bounds before rounding
    // equals clamping the rounded value, so no integer clamp follows
    finish: (acc, i, dst, lanes) => {
      const mask = `(__mmask16)((1u << (${lanes})) - 1u)`;
      if (!p.requant) return [`_mm512_mask_storeu_epi32(${dst}, ${mask}, ${acc});`];
      return [
        '{',
        `  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(${acc}), _mm512_loadu_ps(mult + ${i * 16}));`,
        '  f = _mm512_min_ps(_mm512_max_ps(f, vlq), vhq);',
        // inside the output range: truncating each lane to its low byte is exact
        `  _mm_mask_storeu_epi8(${dst}, ${mask}, _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), vyz)));`,
        '}',
      ];
    },
  };
}

/** AVX2 registers; `vnni`: the AVX-VNNI `vpdpbusd` instead of the split `vpmaddubsw` pair. */
function avx2(p: Int8Problem, vnni: boolean): Int8Ops {
  const b = bounds(p);
  const pack = p.outDtype === 'uint8' ? '_mm_packus_epi16' : '_mm_packs_epi16';
  return {
    accType: '__m256i',
    init: () => '_mm256_setzero_si256()',
    constants: [
      // the masks and widening factors of the split vpmaddubsw pair
      ...(vnni || p.depthwise
        ? []
        : [
            'const __m256i k7f = _mm256_set1_epi8(0x7f), k01 = _mm256_set1_epi8(1);',
            'const __m256i k1 = _mm256_set1_epi16(1), k128 = _mm256_set1_epi16(128);',
          ]),
      ...(p.requant
        ? [
            `const __m256 vlf = _mm256_set1_ps(${b.lf}), vhf = _mm256_set1_ps(${b.hf});`,
            `const __m256i vyz = _mm256_set1_epi32(${b.yz}), vlo = _mm256_set1_epi32(${b.lo}), vhi = _mm256_set1_epi32(${b.hi});`,
          ]
        : []),
    ],
    loadWeights: (ptr, ocb) =>
      Array.from({ length: ocb }, (_, i) => `const __m256i w${i} = _mm256_loadu_si256((const __m256i*)(${ptr} + ${i * 32}));`),
    column: (addr, j, ocb) => {
      if (vnni) {
        const dots = Array.from({ length: ocb }, (_, i) => `c${i}_${j} = _mm256_dpbusd_avx_epi32(c${i}_${j}, a, w${i});`).join(' ');
        return `{ int32_t t; memcpy(&t, ${addr}, 4); const __m256i a = _mm256_set1_epi32(t); ${dots} }`;
      }
      const dots = Array.from(
        { length: ocb },
        (_, i) =>
          `c${i}_${j} = _mm256_add_epi32(c${i}_${j}, _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(lo, w${i}), k1), ` +
          `_mm256_madd_epi16(_mm256_maddubs_epi16(hi, w${i}), k128)));`,
      ).join(' ');
      return (
        `{ int32_t t; memcpy(&t, ${addr}, 4); const __m256i a = _mm256_set1_epi32(t); ` +
        `const __m256i lo = _mm256_and_si256(a, k7f), hi = _mm256_and_si256(_mm256_srli_epi16(a, 7), k01); ${dots} }`
      );
    },
    dwWeight: (ptr, i) => `const __m256i w${i} = _mm256_loadu_si256((const __m256i*)(${ptr}));`,
    dwTap: (acc, addr, i, partial) => {
      // a partial vector reads only its real bytes: the input may end right after them
      const x = partial
        ? `({ int64_t t = 0; memcpy(&t, ${addr}, lanes); _mm_cvtsi64_si128(t); })`
        : `_mm_loadl_epi64((const __m128i*)(${addr}))`;
      return `${acc} = _mm256_add_epi32(${acc}, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(${x}), w${i}));`;
    },
    finish: (acc, i, dst, lanes) => {
      const v = `_mm256_add_epi32(${acc}, _mm256_loadu_si256((const __m256i*)(comp + ${i * 8})))`;
      if (!p.requant)
        return [
          '{',
          `  const __m256i v = ${v};`,
          `  if ((${lanes}) == 8) _mm256_storeu_si256((__m256i*)(${dst}), v);`,
          `  else { int32_t t[8]; _mm256_storeu_si256((__m256i*)t, v); memcpy(${dst}, t, 4 * (${lanes})); }`,
          '}',
        ];
      return [
        '{',
        `  __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(${v}), _mm256_loadu_ps(mult + ${i * 8}));`,
        '  f = _mm256_min_ps(_mm256_max_ps(f, vlf), vhf);',
        '  __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), vyz);',
        '  q = _mm256_min_epi32(_mm256_max_epi32(q, vlo), vhi);',
        '  const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));',
        `  const __m128i q8 = ${pack}(q16, q16);`,
        `  if ((${lanes}) == 8) _mm_storel_epi64((__m128i*)(${dst}), q8);`,
        `  else { uint8_t t[16]; _mm_storeu_si128((__m128i*)t, q8); memcpy(${dst}, t, ${lanes}); }`,
        '}',
      ];
    },
  };
}

function scalar(p: Int8Problem): Int8Ops {
  const b = bounds(p);
  const outT = p.outDtype === 'uint8' ? 'uint8_t' : p.outDtype === 'int8' ? 'int8_t' : 'int32_t';
  return {
    accType: 'int32_t',
    init: () => '0',
    constants: [],
    loadWeights: (ptr) => [`const int8_t* wv = ${ptr};`],
    column: (addr, j, ocb) => {
      const dots = Array.from(
        { length: ocb },
        (_, i) => `c${i}_${j} += a[0] * wv[${i * 4}] + a[1] * wv[${i * 4 + 1}] + a[2] * wv[${i * 4 + 2}] + a[3] * wv[${i * 4 + 3}];`,
      ).join(' ');
      return `{ const uint8_t* a = ${addr}; ${dots} }`;
    },
    dwWeight: (ptr, i) => `const int32_t w${i} = *(${ptr});`,
    dwTap: (acc, addr, i) => `${acc} += (int32_t)*(${addr}) * w${i};`,
    finish: (acc, i, dst) => {
      const v = `${acc} + comp[${i}]`;
      if (!p.requant) return [`*(${outT}*)(${dst}) = ${v};`];
      return [
        '{',
        `  float f = (float)(${v}) * mult[${i}];`,
        `  f = f < ${b.lf} ? ${b.lf} : f > ${b.hf} ? ${b.hf} : f;`,
        `  int32_t q = (int32_t)nearbyintf(f) + ${b.yz};`,
        `  q = q < ${b.lo} ? ${b.lo} : q > ${b.hi} ? ${b.hi} : q;`,
        `  *(${outT}*)(${dst}) = (${outT})q;`,
        '}',
      ];
    },
  };
}

export function int8Ops(path: Int8Path, p: Int8Problem): Int8Ops {
  return path === 'avx512vnni' ? vnni(p) : path === 'scalar' ? scalar(p) : avx2(p, path === 'avxvnni');
}
