/**
 * The depthwise INT8 microkernels. The AVX2 and plain-C paths: ocb channel vectors × width output
 * columns of one output row, each lane one channel; per tap the lanes' u8 inputs widen to 32 bits
 * and multiply the tap's int32 weights (packed widened: a depthwise weight is kh·kw bytes per
 * channel, so four times that costs nothing) — exact, with no pair to saturate. Only the last vector
 * of the last channel group may be partial. AVX-512 VNNI has its own kernel (below), which feeds
 * four taps at a time to the dot-product instruction.
 */
import type { Int8Dims, Int8Problem } from '../space/int8-problem.js';
import type { Int8Ops } from './int8-isa.js';

export function depthwiseMicrokernel(
  name: string,
  p: Int8Problem,
  d: Int8Dims,
  ops: Int8Ops,
  outT: string,
  ocb: number,
  width: number,
): string {
  const v = d.vec;
  const taps = p.kh * p.kw;
  const acc: string[] = [];
  for (let i = 0; i < ocb; i++) for (let j = 0; j < width; j++) acc.push(`c${i}_${j} = ${ops.init(i)}`);
  const steps: string[] = [];
  for (let i = 0; i < ocb; i++) steps.push(ops.dwWeight(`wp + ${i * taps * v} + t * ${v}`, i));
  for (let j = 0; j < width; j++)
    for (let i = 0; i < ocb; i++) steps.push(ops.dwTap(`c${i}_${j}`, `ik + ${j * p.sw * d.cp + i * v}`, i, v > 1 && i === ocb - 1));
  const finish: string[] = [];
  for (let i = 0; i < ocb; i++)
    for (let j = 0; j < width; j++)
      finish.push(...ops.finish(`c${i}_${j}`, i, `op + ${j * p.cout + i * v}`, i === ocb - 1 ? 'lanes' : `${v}`));
  return [
    `static __attribute__((noinline)) void ${name}(const uint8_t* restrict ip, const int32_t* restrict wp, ` +
      `const int32_t* restrict comp, const float* restrict mult, ${outT}* restrict op, int lanes) {`,
    '  (void)mult; (void)lanes;',
    ...ops.constants.map((x) => '  ' + x),
    `  ${ops.accType} ${acc.join(', ')};`,
    `  for (int ky = 0; ky < ${p.kh}; ++ky)`,
    `  #pragma GCC unroll ${p.kw}`,
    `  for (int kx = 0; kx < ${p.kw}; ++kx) {`,
    `    const long t = (long)ky * ${p.kw} + kx;`,
    `    const uint8_t* ik = ip + ((long)ky * ${p.dh * d.wp} + (long)kx * ${p.dw}) * ${d.cp};`,
    ...steps.map((x) => '    ' + x),
    '  }',
    ...finish.map((x) => '  ' + x),
    '}',
  ].join('\n');
}

/**
 * Within one 64-channel block of the AVX-512 VNNI depthwise kernel, the channel that slot `s` of the
 * packed weights, comp and mult holds: slot r·16 + 4L + j is accumulator r's dword j of 128-bit lane L,
 * which the byte interleave below fills with channel 16L + 4r + j.
 */
export function dwVnniChannel(slot: number): number {
  const r = Math.floor(slot / 16),
    k = slot % 16;
  return 16 * Math.floor(k / 4) + 4 * r + (k % 4);
}

/** Tap groups of the VNNI depthwise kernel: four taps per `vpdpbusd`, the last group zero-padded. */
export const dwVnniTapGroups = (p: Int8Problem): number => Math.ceil((p.kh * p.kw) / 4);

/**
 * The AVX-512 VNNI depthwise microkernel: a block of up to 64 channels × `width` output columns. A
 * depthwise output sums over taps, not channels, so four taps' bytes of each channel are interleaved
 * into one dword (two byte and two word unpacks per 64 channels) and one `vpdpbusd` multiplies them
 * by that channel's four tap weights: 256 multiply-adds per eight shuffles, against 16 per `vpmulld`.
 * The unpacks work inside 128-bit lanes, so accumulator r holds channels 16L + 4r + j (dwVnniChannel);
 * weights, comp and mult are packed in that order, and the finish puts the bytes back in channel order
 * with one dword permute. Padded taps load nothing and weigh zero; channels past the block's real ones
 * are masked on every load and store.
 */
export function depthwiseVnniMicrokernel(name: string, p: Int8Problem, d: Int8Dims, outT: string, ocb: number, width: number): string {
  const taps = p.kh * p.kw;
  const groups = dwVnniTapGroups(p);
  const [lo, hi] = p.clamp;
  const tapOffset = (t: number) => (Math.floor(t / p.kw) * p.dh * d.wp + (t % p.kw) * p.dw) * d.cp;
  const acc: string[] = [];
  for (let j = 0; j < width; j++) for (let r = 0; r < 4; r++) acc.push(`c${r}_${j} = _mm512_setzero_si512()`);
  const body: string[] = [];
  for (let g = 0; g < groups; g++) {
    body.push('{');
    for (let r = 0; r < 4; r++) body.push(`  const __m512i w${r} = _mm512_loadu_si512(wp + ${(g * 4 + r) * 16});`);
    for (let j = 0; j < width; j++) {
      const load = (e: number) => {
        const t = g * 4 + e;
        return t < taps ? `_mm512_maskz_loadu_epi8(m, ip + ${tapOffset(t) + j * p.sw * d.cp})` : '_mm512_setzero_si512()';
      };
      body.push(
        '  {',
        `    const __m512i a = ${load(0)}, b = ${load(1)}, c = ${load(2)}, e = ${load(3)};`,
        '    const __m512i abl = _mm512_unpacklo_epi8(a, b), abh = _mm512_unpackhi_epi8(a, b);',
        '    const __m512i cel = _mm512_unpacklo_epi8(c, e), ceh = _mm512_unpackhi_epi8(c, e);',
        `    c0_${j} = _mm512_dpbusd_epi32(c0_${j}, _mm512_unpacklo_epi16(abl, cel), w0);`,
        `    c1_${j} = _mm512_dpbusd_epi32(c1_${j}, _mm512_unpackhi_epi16(abl, cel), w1);`,
        `    c2_${j} = _mm512_dpbusd_epi32(c2_${j}, _mm512_unpacklo_epi16(abh, ceh), w2);`,
        `    c3_${j} = _mm512_dpbusd_epi32(c3_${j}, _mm512_unpackhi_epi16(abh, ceh), w3);`,
        '  }',
      );
    }
    body.push('}');
  }
  const finish: string[] = [];
  for (let j = 0; j < width; j++) {
    const dst = `op + ${j * p.cout}`;
    if (!p.requant) {
      finish.push(
        '{',
        '  int32_t t[64];',
        ...[0, 1, 2, 3].map(
          (r) => `  _mm512_storeu_si512(t + ${r * 16}, _mm512_add_epi32(c${r}_${j}, _mm512_loadu_si512(comp + ${r * 16})));`,
        ),
        `  for (int s = 0; s < 64; ++s) { const int ch = dwc[s]; if (ch < real) ((int32_t*)(${dst}))[ch] = t[s]; }`,
        '}',
      );
      continue;
    }
    finish.push('{');
    for (let r = 0; r < 4; r++)
      finish.push(
        `  __m512 f${r} = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(c${r}_${j}, _mm512_loadu_si512(comp + ${r * 16}))), ` +
          `_mm512_loadu_ps(mult + ${r * 16}));`,
        `  f${r} = _mm512_min_ps(_mm512_max_ps(f${r}, vlf), vhf);`,
        `  const __m128i q${r} = _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(f${r}), vyz), vlo), vhi));`,
      );
    finish.push(
      '  __m512i z = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(q0), q1, 1), q2, 2), q3, 3);',
      `  _mm512_mask_storeu_epi8(${dst}, m, _mm512_permutexvar_epi32(order, z));`,
      '}',
    );
  }
  return [
    `static __attribute__((noinline)) void ${name}(const uint8_t* restrict ip, const int32_t* restrict wp, ` +
      `const int32_t* restrict comp, const float* restrict mult, ${outT}* restrict op, int lanes) {`,
    '  (void)mult;',
    `  const int real = ${(ocb - 1) * 16} + lanes;`,
    '  const __mmask64 m = real >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << real) - 1);',
    // output dword k (channels 4k..4k+3) sits at dword 4·(k % 4) + k / 4 of the inserted quarters
    '  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);',
    ...(p.requant
      ? [
          `  const __m512 vlf = _mm512_set1_ps(${lo - p.yZero - 1}.0f), vhf = _mm512_set1_ps(${hi - p.yZero + 1}.0f);`,
          `  const __m512i vyz = _mm512_set1_epi32(${p.yZero}), vlo = _mm512_set1_epi32(${lo}), vhi = _mm512_set1_epi32(${hi});`,
        ]
      : ['  (void)order;', `  static const int dwc[64] = { ${Array.from({ length: 64 }, (_, s) => dwVnniChannel(s)).join(', ')} };`]),
    `  __m512i ${acc.join(', ')};`,
    ...body.map((x) => '  ' + x),
    ...finish.map((x) => '  ' + x),
    '}',
  ].join('\n');
}
