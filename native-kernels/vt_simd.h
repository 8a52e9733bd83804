/*
 * The one place veltair's C gets its vector operations from. Each vector width V has a family of
 * primitives prefixed vt<V>_ (vt16_: AVX-512 zmm, vt8_: AVX2 ymm, vt1_: plain float), so
 * candidates of different widths can share a translation unit. Generated kernels and the runtime's
 * ops only ever call these (no raw intrinsics elsewhere); which families exist depends on the
 * compiler's target flags (-march).
 * The activation math (exp, sigmoid, tanh, erf, gelu …) is written once, in vt_math.inc, over the
 * primitives and instantiated per width.
 */
#ifndef VT_SIMD_H
#define VT_SIMD_H
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

/* ---- scalar: V = 1 ---- */
typedef float vt1_t;
static inline vt1_t vt1_load(const float* p) { return *p; }
static inline void vt1_store(float* p, vt1_t x) { *p = x; }
static inline vt1_t vt1_set1(float x) { return x; }
static inline vt1_t vt1_zero(void) { return 0.0f; }
static inline vt1_t vt1_fma(vt1_t a, vt1_t b, vt1_t c) { return __builtin_fmaf(a, b, c); }
static inline vt1_t vt1_add(vt1_t a, vt1_t b) { return a + b; }
static inline vt1_t vt1_sub(vt1_t a, vt1_t b) { return a - b; }
static inline vt1_t vt1_mul(vt1_t a, vt1_t b) { return a * b; }
static inline vt1_t vt1_div(vt1_t a, vt1_t b) { return a / b; }
static inline vt1_t vt1_max(vt1_t a, vt1_t b) { return a > b ? a : b; }
static inline vt1_t vt1_min(vt1_t a, vt1_t b) { return a < b ? a : b; }
static inline vt1_t vt1_round(vt1_t x) { return nearbyintf(x); }
static inline vt1_t vt1_pow2i(vt1_t n) { return ldexpf(1.0f, (int)n); }
static inline vt1_t vt1_copysign(vt1_t mag, vt1_t sgn) { return copysignf(mag, sgn); }
static inline vt1_t vt1_keep(vt1_t x, int lanes) { return lanes > 0 ? x : 0.0f; }
static inline float vt1_reduce_add(vt1_t x) { return x; }
static inline float vt1_reduce_max(vt1_t x) { return x; }
/* Whether any lane of x is greater than t (false for NaN lanes). */
static inline int vt1_any_gt(vt1_t x, float t) { return x > t; }
static inline vt1_t vt1_gather_lanes(const float* base, long stride, int lanes) { (void)stride; return lanes > 0 ? *base : 0.0f; }

/* ---- AVX2: V = 8 ---- */
#if defined(__AVX2__) && defined(__FMA__)
typedef __m256 vt8_t;
static inline vt8_t vt8_load(const float* p) { return _mm256_loadu_ps(p); }
static inline void vt8_store(float* p, vt8_t x) { _mm256_storeu_ps(p, x); }
static inline vt8_t vt8_set1(float x) { return _mm256_set1_ps(x); }
static inline vt8_t vt8_zero(void) { return _mm256_setzero_ps(); }
static inline vt8_t vt8_fma(vt8_t a, vt8_t b, vt8_t c) { return _mm256_fmadd_ps(a, b, c); }
static inline vt8_t vt8_add(vt8_t a, vt8_t b) { return _mm256_add_ps(a, b); }
static inline vt8_t vt8_sub(vt8_t a, vt8_t b) { return _mm256_sub_ps(a, b); }
static inline vt8_t vt8_mul(vt8_t a, vt8_t b) { return _mm256_mul_ps(a, b); }
static inline vt8_t vt8_div(vt8_t a, vt8_t b) { return _mm256_div_ps(a, b); }
static inline vt8_t vt8_max(vt8_t a, vt8_t b) { return _mm256_max_ps(a, b); }
static inline vt8_t vt8_min(vt8_t a, vt8_t b) { return _mm256_min_ps(a, b); }
static inline vt8_t vt8_round(vt8_t x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vt8_t vt8_pow2i(vt8_t n) {
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_castsi256_ps(e);
}
static inline vt8_t vt8_copysign(vt8_t mag, vt8_t sgn) {
  const vt8_t sign = _mm256_set1_ps(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, sgn));
}
static inline vt8_t vt8_keep(vt8_t x, int lanes) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), idx);
  return _mm256_and_ps(x, _mm256_castsi256_ps(m));
}
static inline float vt8_reduce_add(vt8_t x) {
  __m128 v = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}
static inline float vt8_reduce_max(vt8_t x) {
  __m128 v = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  v = _mm_max_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_max_ss(v, _mm_movehdup_ps(v)));
}
static inline int vt8_any_gt(vt8_t x, float t) { return _mm256_movemask_ps(_mm256_cmp_ps(x, _mm256_set1_ps(t), _CMP_GT_OQ)) != 0; }
/* base[i * stride] for lanes i < `lanes`, zero above (stride * 7 must fit an int32). */
static inline vt8_t vt8_gather_lanes(const float* base, long stride, int lanes) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), lane);
  __m256i index = _mm256_mullo_epi32(lane, _mm256_set1_epi32((int)stride));
  return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, index, _mm256_castsi256_ps(m), 4);
}
/* r[i] lane j <-> r[j] lane i: an 8 x 8 transpose in registers (24 shuffles, no gathers: those are slow on Zen 3). */
static inline void vt8_transpose8(vt8_t r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20); r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20); r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31); r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31); r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
/* A fixed lane permutation for vt8_permute, built once and reused: lane i of the result is lane idx[i] (0..7). */
typedef __m256i vt8_perm_t;
static inline vt8_perm_t vt8_perm_index(const int32_t* idx) { return _mm256_loadu_si256((const __m256i*)idx); }
static inline vt8_t vt8_permute(vt8_t x, vt8_perm_t idx) { return _mm256_permutevar8x32_ps(x, idx); }
/* A lane selector for vt8_select: lane i is picked where bit i of `mask` is set. */
static inline vt8_t vt8_lane_mask(unsigned mask) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)mask), bit), bit));
}
/* b in the lanes `pick` selects, a in the others (bitwise: NaNs pass through untouched). */
static inline vt8_t vt8_select(vt8_t pick, vt8_t a, vt8_t b) { return _mm256_blendv_ps(a, b, pick); }
#endif

/* ---- AVX-512: V = 16 ---- */
#if defined(__AVX512F__)
typedef __m512 vt16_t;
static inline vt16_t vt16_load(const float* p) { return _mm512_loadu_ps(p); }
static inline void vt16_store(float* p, vt16_t x) { _mm512_storeu_ps(p, x); }
static inline vt16_t vt16_set1(float x) { return _mm512_set1_ps(x); }
static inline vt16_t vt16_zero(void) { return _mm512_setzero_ps(); }
static inline vt16_t vt16_fma(vt16_t a, vt16_t b, vt16_t c) { return _mm512_fmadd_ps(a, b, c); }
static inline vt16_t vt16_add(vt16_t a, vt16_t b) { return _mm512_add_ps(a, b); }
static inline vt16_t vt16_sub(vt16_t a, vt16_t b) { return _mm512_sub_ps(a, b); }
static inline vt16_t vt16_mul(vt16_t a, vt16_t b) { return _mm512_mul_ps(a, b); }
static inline vt16_t vt16_div(vt16_t a, vt16_t b) { return _mm512_div_ps(a, b); }
static inline vt16_t vt16_max(vt16_t a, vt16_t b) { return _mm512_max_ps(a, b); }
static inline vt16_t vt16_min(vt16_t a, vt16_t b) { return _mm512_min_ps(a, b); }
static inline vt16_t vt16_round(vt16_t x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vt16_t vt16_pow2i(vt16_t n) { return _mm512_scalef_ps(_mm512_set1_ps(1.0f), n); }
static inline vt16_t vt16_copysign(vt16_t mag, vt16_t sgn) {
  const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
  __m512i r = _mm512_ternarylogic_epi32(_mm512_castps_si512(mag), _mm512_castps_si512(sgn), sign, 0xD8); /* bitwise sign ? sgn : mag */
  return _mm512_castsi512_ps(r);
}
static inline vt16_t vt16_keep(vt16_t x, int lanes) {
  return _mm512_maskz_mov_ps((__mmask16)((1u << lanes) - 1u), x);
}
static inline float vt16_reduce_add(vt16_t x) { return _mm512_reduce_add_ps(x); }
static inline float vt16_reduce_max(vt16_t x) { return _mm512_reduce_max_ps(x); }
static inline int vt16_any_gt(vt16_t x, float t) { return _mm512_cmp_ps_mask(x, _mm512_set1_ps(t), _CMP_GT_OQ) != 0; }
/* base[i * stride] for lanes i < `lanes`, zero above (stride * 15 must fit an int32). */
static inline vt16_t vt16_gather_lanes(const float* base, long stride, int lanes) {
  const __m512i index = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32((int)stride));
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (__mmask16)((1u << lanes) - 1u), index, base, 4);
}
/*
 * r[i] lane j <-> r[j] lane i: a 16 x 16 transpose in registers (64 shuffles; a gather per pixel
 * instead runs far below cache bandwidth). Within each 128-bit lane, a 4 x 4 transpose of every
 * group of four rows; then the 4 x 4 grid of 128-bit lanes across the groups.
 */
static inline void vt16_transpose16(vt16_t r[16]) {
  __m512 q[16];
  for (int g = 0; g < 16; g += 4) {
    const __m512 t0 = _mm512_unpacklo_ps(r[g], r[g + 1]), t1 = _mm512_unpackhi_ps(r[g], r[g + 1]);
    const __m512 t2 = _mm512_unpacklo_ps(r[g + 2], r[g + 3]), t3 = _mm512_unpackhi_ps(r[g + 2], r[g + 3]);
    q[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    q[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    q[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    q[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
  }
  for (int j = 0; j < 4; j++) {
    const __m512 u0 = _mm512_shuffle_f32x4(q[j], q[4 + j], 0x44), u1 = _mm512_shuffle_f32x4(q[j], q[4 + j], 0xEE);
    const __m512 u2 = _mm512_shuffle_f32x4(q[8 + j], q[12 + j], 0x44), u3 = _mm512_shuffle_f32x4(q[8 + j], q[12 + j], 0xEE);
    r[j] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    r[4 + j] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
    r[8 + j] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    r[12 + j] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
  }
}
/* A fixed lane permutation, built once and reused: lane i of the result is lane idx[i] (0..15). */
typedef __m512i vt16_perm_t;
static inline vt16_perm_t vt16_perm_index(const int32_t* idx) { return _mm512_loadu_si512((const void*)idx); }
/* acc with the lanes whose bit is set in `pick` replaced by x permuted by idx. */
static inline vt16_t vt16_permute_into(vt16_t acc, unsigned pick, vt16_perm_t idx, vt16_t x) {
  return _mm512_mask_permutexvar_ps(acc, (__mmask16)pick, idx, x);
}
#endif

/*
 * The widest family this build has, for code that is not generated per width (the runtime's
 * ops): VTW(name) is vt16_name, vt8_name or vt1_name and VT_W its lane count.
 */
#if defined(__AVX512F__)
#define VT_W 16
#define VTW(name) vt16_##name
#elif defined(__AVX2__) && defined(__FMA__)
#define VT_W 8
#define VTW(name) vt8_##name
#else
#define VT_W 1
#define VTW(name) vt1_##name
#endif
typedef VTW(t) vtw_t;

#define VT_P vt1
#include "vt_math.inc"
#undef VT_P
#if defined(__AVX2__) && defined(__FMA__)
#define VT_P vt8
#include "vt_math.inc"
#undef VT_P
#endif
#if defined(__AVX512F__)
#define VT_P vt16
#include "vt_math.inc"
#undef VT_P
#endif

#endif
