/*
 * Pooling on NCHW[V]c (V = 1 is plain NCHW: the same loops with one lane).
 * POOL ints [kind (0 max, 1 average), N, C, H, W, OH, OW, V, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw,
 *            count_include_pad, rows_outer]
 *   rows_outer 1: a thread's tasks are a band of output rows across every channel block (the input's
 *   writer split rows across threads), 0: a run of whole channel planes.
 *   Output size comes from the plan (so ceil_mode is already in OH/OW). Average divisor follows ONNX
 *   Runtime: with count_include_pad the taps inside the padded extent [-pt, H+pb) count, otherwise
 *   only taps inside the input. Padded lanes stay zero: max/mean over zeros.
 * GLOBAL_POOL ints [kind, N, C, HW, V, natural_out]: out [N][ceil(C/V)][V], or [N][C] with natural_out.
 *   Vector accumulators (V lanes at a time, or a vector row sum on plain NCHW).
 */
#include <float.h>
#include <stdio.h>
#include "vt_rt.h"
#include "../vt_simd.h"

#define MAXV 16

typedef struct {
  const float* in; float* out; long kind, n, c, h, w, oh, ow, v, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, cip, rows_outer, cb;
} pool_ctx;

/* The taps [*k0, *k1) of a window starting at `o0` that fall inside [0, extent). */
static inline void taps_inside(long o0, long dil, long taps, long extent, long* k0, long* k1) {
  long a = 0, b = taps;
  while (a < taps && o0 + a * dil < 0) a++;
  while (b > a && o0 + (b - 1) * dil >= extent) b--;
  *k0 = a; *k1 = b;
}

/*
 * Task t's plane (n * cb + channel block) and output row. Threads take contiguous task ranges, so the
 * order decides which part of the input each reads; following how its writer split it keeps the
 * reads on the core that wrote them (a stem's pool ran no faster on 2 threads than on 1 when the
 * conv before it split rows and the pool split channel blocks; the reverse order slowed GoogLeNet's).
 */
static inline void row_of(const pool_ctx* k, long t, long* plane, long* oy) {
  if (k->rows_outer) {
    long cbi = t % k->cb, r = t / k->cb;
    *oy = r % k->oh;
    *plane = (r / k->oh) * k->cb + cbi;
  } else {
    *oy = t % k->oh;
    *plane = t / k->oh;
  }
}

/*
 * Max pooling on NCHW[V]c with V a vector width this build has (16: AVX-512, 8: AVX2): one vector
 * max per tap: gcc does not keep the generic loop's V-lane accumulator in a register.
 * vtV_max(px, acc) returns acc when either is NaN, the same as the generic `px > acc ? px : acc`.
 * The 3-wide undilated window (the CNN stem's 3x3 pool) has its own loop over the columns whose
 * window lies inside the row: three fixed loads a row, no tap bounds per pixel (the generic loop
 * spent more on those than on the loads). On rows whose three taps are all inside, the nine loads
 * come from three fixed row pointers with no per-tap arithmetic, and at stride 2 each column's
 * three-row max is computed once and shared by the two windows that cover it (6 loads a window,
 * not 9): the stem pool of ShuffleNet ran 38 -> 24 us at 2 threads (bench/RESULTS.md).
 * The order of the maxima differs from the generic loop's, but the result does not: each max is
 * over the same taps, and a NaN tap drops out in either (vtV_max's second operand never is one).
 */
#define MAX_ROWS(V)                                                                                         \
  static inline vt##V##_t max_window##V(const pool_ctx* k, const float* src, long y0, long ky0, long ky1,   \
                                        long x0) {                                                          \
    long kx0, kx1;                                                                                          \
    taps_inside(x0, k->dw, k->kw, k->w, &kx0, &kx1);                                                        \
    vt##V##_t acc = vt##V##_set1(-FLT_MAX);                                                                 \
    for (long ky = ky0; ky < ky1; ky++) {                                                                   \
      const float* row = src + (y0 + ky * k->dh) * k->w * V;                                                \
      for (long kx = kx0; kx < kx1; kx++) acc = vt##V##_max(vt##V##_load(row + (x0 + kx * k->dw) * V), acc); \
    }                                                                                                       \
    return acc;                                                                                             \
  }                                                                                                         \
  static void max_rows##V(const pool_ctx* k, long b, long e) {                                              \
    const int three = k->kw == 3 && k->dw == 1;                                                             \
    /* columns [xa, xb) have all three taps inside the row: ox * sw >= pl and ox * sw <= w - 3 + pl */     \
    const long right = k->w - 3 + k->pl; /* negative: no window fits inside the row (C's / truncates to 0) */ \
    long xa = (k->pl + k->sw - 1) / k->sw, xb = right >= 0 ? right / k->sw + 1 : 0;                         \
    if (!three || xb < xa) xa = xb = 0;                                                                     \
    if (xb > k->ow) xb = k->ow;                                                                             \
    for (long t = b; t < e; t++) {                                                                          \
      long plane, oy; row_of(k, t, &plane, &oy);                                                            \
      long y0 = oy * k->sh - k->pt, ky0, ky1;                                                               \
      const float* src = k->in + plane * k->h * k->w * V;                                                   \
      float* dst = k->out + (plane * k->oh + oy) * k->ow * V;                                               \
      taps_inside(y0, k->dh, k->kh, k->h, &ky0, &ky1);                                                      \
      for (long ox = 0; ox < xa; ox++) vt##V##_store(dst + ox * V, max_window##V(k, src, y0, ky0, ky1, ox * k->sw - k->pl)); \
      if (ky1 - ky0 == 3 && k->kh == 3) {                                                                   \
        /* every tap inside: three fixed row pointers, nine loads a column, nothing computed per tap */     \
        const float* r0 = src + (y0 + ky0 * k->dh) * k->w * V - k->pl * V;                                  \
        const float* r1 = r0 + k->dh * k->w * V;                                                            \
        const float* r2 = r1 + k->dh * k->w * V;                                                            \
        const long step = k->sw * V;                                                                        \
        const vt##V##_t lo = vt##V##_set1(-FLT_MAX);                                                        \
        if (k->sw == 2 && xb > xa) {                                                                        \
          /* stride 2: neighbouring windows share a column, so each column's three rows are loaded once */ \
          long at = xa * step;                                                                              \
          vt##V##_t prev = vt##V##_max(vt##V##_load(r0 + at), vt##V##_max(vt##V##_load(r1 + at), vt##V##_max(vt##V##_load(r2 + at), lo))); \
          for (long ox = xa; ox < xb; ox++, at += step) {                                                   \
            vt##V##_t mid = vt##V##_max(vt##V##_load(r0 + at + V), vt##V##_max(vt##V##_load(r1 + at + V), vt##V##_max(vt##V##_load(r2 + at + V), lo))); \
            long at2 = at + 2 * V;                                                                          \
            vt##V##_t next = vt##V##_max(vt##V##_load(r0 + at2), vt##V##_max(vt##V##_load(r1 + at2), vt##V##_max(vt##V##_load(r2 + at2), lo))); \
            vt##V##_store(dst + ox * V, vt##V##_max(prev, vt##V##_max(mid, next)));                         \
            prev = next;                                                                                    \
          }                                                                                                 \
        } else                                                                                              \
        for (long ox = xa; ox < xb; ox++) {                                                                 \
          const long at = ox * step;                                                                        \
          vt##V##_t acc = vt##V##_set1(-FLT_MAX);                                                           \
          acc = vt##V##_max(vt##V##_load(r0 + at), acc);                                                    \
          acc = vt##V##_max(vt##V##_load(r0 + at + V), acc);                                                \
          acc = vt##V##_max(vt##V##_load(r0 + at + 2 * V), acc);                                            \
          acc = vt##V##_max(vt##V##_load(r1 + at), acc);                                                    \
          acc = vt##V##_max(vt##V##_load(r1 + at + V), acc);                                                \
          acc = vt##V##_max(vt##V##_load(r1 + at + 2 * V), acc);                                            \
          acc = vt##V##_max(vt##V##_load(r2 + at), acc);                                                    \
          acc = vt##V##_max(vt##V##_load(r2 + at + V), acc);                                                \
          acc = vt##V##_max(vt##V##_load(r2 + at + 2 * V), acc);                                            \
          vt##V##_store(dst + ox * V, acc);                                                                 \
        }                                                                                                   \
      } else                                                                                                \
      for (long ox = xa; ox < xb; ox++) {                                                                   \
        const float* col = src + (ox * k->sw - k->pl) * V;                                                  \
        vt##V##_t acc = vt##V##_set1(-FLT_MAX);                                                             \
        for (long ky = ky0; ky < ky1; ky++) {                                                               \
          const float* px = col + (y0 + ky * k->dh) * k->w * V;                                             \
          acc = vt##V##_max(vt##V##_load(px), acc);                                                         \
          acc = vt##V##_max(vt##V##_load(px + V), acc);                                                     \
          acc = vt##V##_max(vt##V##_load(px + 2 * V), acc);                                                 \
        }                                                                                                   \
        vt##V##_store(dst + ox * V, acc);                                                                   \
      }                                                                                                     \
      for (long ox = xb; ox < k->ow; ox++) vt##V##_store(dst + ox * V, max_window##V(k, src, y0, ky0, ky1, ox * k->sw - k->pl)); \
    }                                                                                                       \
  }
#if defined(__AVX512F__)
MAX_ROWS(16)
#endif
#if defined(__AVX2__) && defined(__FMA__)
MAX_ROWS(8)
#endif

/*
 * One output row per task, for any lane count `v`. Inlined with v = 16 and v = 8 as compile-time
 * constants (so the lane loop is a fixed-width vector loop gcc can unroll) and with the runtime
 * value for any other width.
 */
static inline __attribute__((always_inline)) void pool_rows_v(const pool_ctx* k, long b, long e, const long v) {
  for (long t = b; t < e; t++) {
    long plane, oy; row_of(k, t, &plane, &oy);
    long y0 = oy * k->sh - k->pt, ky0, ky1, rows_counted = 0;
    const float* src = k->in + plane * k->h * k->w * v;
    float* dst = k->out + (plane * k->oh + oy) * k->ow * v;
    taps_inside(y0, k->dh, k->kh, k->h, &ky0, &ky1);
    for (long ky = 0; ky < k->kh; ky++) { long y = y0 + ky * k->dh; if (y >= -k->pt && y < k->h + k->pb) rows_counted++; }
    for (long ox = 0; ox < k->ow; ox++) {
      long x0 = ox * k->sw - k->pl, kx0, kx1, cols_counted = 0;
      taps_inside(x0, k->dw, k->kw, k->w, &kx0, &kx1);
      for (long kx = 0; kx < k->kw; kx++) { long x = x0 + kx * k->dw; if (x >= -k->pl && x < k->w + k->pr) cols_counted++; }
      float acc[MAXV];
      float* o = dst + ox * v;
      if (k->kind == VT_POOL_MAX) {
        for (long l = 0; l < v; l++) acc[l] = -FLT_MAX;
        for (long ky = ky0; ky < ky1; ky++) {
          const float* row = src + (y0 + ky * k->dh) * k->w * v;
          for (long kx = kx0; kx < kx1; kx++) {
            const float* px = row + (x0 + kx * k->dw) * v;
            for (long l = 0; l < v; l++) acc[l] = px[l] > acc[l] ? px[l] : acc[l];
          }
        }
        for (long l = 0; l < v; l++) o[l] = acc[l];
      } else {
        for (long l = 0; l < v; l++) acc[l] = 0.0f;
        for (long ky = ky0; ky < ky1; ky++) {
          const float* row = src + (y0 + ky * k->dh) * k->w * v;
          for (long kx = kx0; kx < kx1; kx++) {
            const float* px = row + (x0 + kx * k->dw) * v;
            for (long l = 0; l < v; l++) acc[l] += px[l];
          }
        }
        long taps = k->cip ? rows_counted * cols_counted : (ky1 - ky0) * (kx1 - kx0);
        float inv = taps > 0 ? 1.0f / (float)taps : 0.0f;
        for (long l = 0; l < v; l++) o[l] = acc[l] * inv;
      }
    }
  }
}

static void pool_rows(const void* p, long b, long e) {
  const pool_ctx* k = p;
#if defined(__AVX512F__)
  if (k->v == 16 && k->kind == VT_POOL_MAX) { max_rows16(k, b, e); return; }
#endif
#if defined(__AVX2__) && defined(__FMA__)
  if (k->v == 8 && k->kind == VT_POOL_MAX) { max_rows8(k, b, e); return; }
#endif
  if (k->v == 16) pool_rows_v(k, b, e, 16);
  else if (k->v == 8) pool_rows_v(k, b, e, 8);
  else pool_rows_v(k, b, e, k->v);
}

int vt_op_pool(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 20) { snprintf(s->err, VT_ERR_LEN, "pool: %d ints, not 20", s->n_ints); return 1; }
  pool_ctx c = { s->in[0], s->out[0], k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11],
                 k[12], k[13], k[14], k[15], k[16], k[17], k[18], k[19], 0 };
  if (c.v < 1 || c.v > MAXV) { snprintf(s->err, VT_ERR_LEN, "pool: vector width %ld is not supported", c.v); return 1; }
  c.cb = (c.c + c.v - 1) / c.v;
  vt_parallel(c.n * c.cb * c.oh, s->threads, 8, pool_rows, &c);
  return 0;
}

typedef struct { const float* in; float* out; long kind, hw, v, c, cb; int natural_out; } gp_ctx;

/* One plane's V lane results: vector accumulators per 8 lanes (V a multiple of 8), a vector row
 * reduction (V = 1: one natural channel row), scalar lanes otherwise. */
static void plane_reduce(const gp_ctx* k, const float* src, float* acc) {
  const int max = k->kind == VT_POOL_MAX;
#if defined(__AVX2__) && defined(__FMA__)
  if (k->v % 8 == 0 && k->v <= MAXV) {
    for (long g = 0; g < k->v; g += 8) {
      vt8_t a0 = vt8_set1(max ? -FLT_MAX : 0.0f), a1 = a0;
      long q = 0;
      for (; q + 2 <= k->hw; q += 2) {
        vt8_t x0 = vt8_load(src + q * k->v + g), x1 = vt8_load(src + (q + 1) * k->v + g);
        if (max) { a0 = vt8_max(x0, a0); a1 = vt8_max(x1, a1); } else { a0 = vt8_add(a0, x0); a1 = vt8_add(a1, x1); }
      }
      for (; q < k->hw; q++) { vt8_t x0 = vt8_load(src + q * k->v + g); a0 = max ? vt8_max(x0, a0) : vt8_add(a0, x0); }
      vt8_store(acc + g, max ? vt8_max(a0, a1) : vt8_add(a0, a1));
    }
    return;
  }
#endif
#if VT_W > 1
  if (k->v == 1) {
    vtw_t a = VTW(set1)(max ? -FLT_MAX : 0.0f);
    long q = 0;
    for (; q + VT_W <= k->hw; q += VT_W) a = max ? VTW(max)(VTW(load)(src + q), a) : VTW(add)(a, VTW(load)(src + q));
    float r = max ? VTW(reduce_max)(a) : VTW(reduce_add)(a);
    for (; q < k->hw; q++) r = max ? (src[q] > r ? src[q] : r) : r + src[q];
    acc[0] = r;
    return;
  }
#endif
  for (long l = 0; l < k->v; l++) acc[l] = max ? -FLT_MAX : 0.0f;
  for (long q = 0; q < k->hw; q++) {
    const float* px = src + q * k->v;
    if (max) for (long l = 0; l < k->v; l++) acc[l] = px[l] > acc[l] ? px[l] : acc[l];
    else for (long l = 0; l < k->v; l++) acc[l] += px[l];
  }
}

static void global_planes(const void* p, long b, long e) {
  const gp_ctx* k = p;
  float scale = k->kind == VT_POOL_MAX ? 1.0f : 1.0f / (float)k->hw;
  for (long t = b; t < e; t++) {
    float acc[MAXV];
    plane_reduce(k, k->in + t * k->hw * k->v, acc);
    if (k->natural_out) {
      long n = t / k->cb, cb = t % k->cb, lanes = k->c - cb * k->v < k->v ? k->c - cb * k->v : k->v;
      for (long l = 0; l < lanes; l++) k->out[n * k->c + cb * k->v + l] = acc[l] * scale;
    } else {
      for (long l = 0; l < k->v; l++) k->out[t * k->v + l] = acc[l] * scale;
    }
  }
}

/* ints [kind, N, C, HW, V(, natural_out)]: natural_out = 1 writes [N][C] (the blocked input's real lanes only). */
int vt_op_global_pool(const vt_step* s) {
  const int64_t* k = s->ints;
  gp_ctx c = { s->in[0], s->out[0], k[0], k[3], k[4], k[2], 0, s->n_ints > 5 ? (int)k[5] : 0 };
  if (c.v < 1 || c.v > MAXV) { snprintf(s->err, VT_ERR_LEN, "global pool: vector width %ld is not supported", c.v); return 1; }
  c.cb = (k[2] + c.v - 1) / c.v;
  long planes = k[1] * c.cb;
  vt_parallel(planes, s->threads, 1 + 16384 / (c.hw * c.v + 1), global_planes, &c);
  return 0;
}
