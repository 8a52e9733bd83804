/*
 * REORDER: a value's layout change. ints [from_kind, from_v, to_kind, to_v, N, C, HW, rows, cols]
 * with kind 0 = natural, 1 = NCHW[V]c (logical [N][C][HW]), 2 = rows (logical [rows][cols], the
 * last dimension padded to a multiple of V). Every padded channel/column written is zero (the
 * kernel ABI's invariant). Vector paths for every pair a plan emits: natural <-> blocked (register
 * transposes, 8 x 8 on AVX2 and 16 x 16 on AVX-512, for blocks of the build's widths; a strided
 * gather per natural row for a narrower block), blocked <-> blocked of any two
 * widths (8c <-> 16c on AVX-512: whole pixels, one 64-byte line each; otherwise runs of min(V1, V2)
 * lanes copied per pixel), natural <-> rows and rows <-> rows
 * (row copies); any other pair goes element by element through the natural index.
 */
#include <stdint.h>
#include <string.h>
#include "vt_rt.h"
#include "../vt_simd.h"

/* layout kinds: enum vt_layout_kind (vt_abi.h) */
enum { NATURAL = VT_LAYOUT_NATURAL, BLOCKED = VT_LAYOUT_BLOCKED, ROWS = VT_LAYOUT_ROWS };

/* parts, part_px: NCHW -> NCHW[V]c splits each block's pixels into `parts` runs of part_px, so a
 * model's 3-channel input (one block) still gives every thread work. */
typedef struct { const float* in; float* out; long n, c, hw, v, cb, parts, part_px; } blk_ctx;

/* Pixels per unit of NCHW -> NCHW[V]c work: 2048 x 8 floats = 64 KiB written. */
#define PART_PX 2048

/*
 * NCHW -> NCHW[V]c, pixels [q0, q1) of block t. V pixels of each real channel are one load (zeros
 * for the padded lanes), transposed in registers into V pixel vectors (AVX2: 8 x 8, AVX-512:
 * 16 x 16); the last pixels of a run, a masked gather each. Otherwise element by element.
 */
#define TO_BLOCKED(W)                                                                                     \
  static void to_blocked##W(const blk_ctx* k, long t, long q0, long q1) {                                \
    long n = t / k->cb, cb = t % k->cb;                                                                   \
    float* dst = k->out + t * k->hw * W;                                                                  \
    int lanes = (int)(k->c - cb * W < W ? k->c - cb * W : W);                                             \
    const float* src = k->in + (n * k->c + cb * W) * k->hw;                                               \
    long q = q0;                                                                                          \
    for (; q + W <= q1; q += W) {                                                                         \
      vt##W##_t r[W];                                                                                     \
      for (int l = 0; l < W; l++) r[l] = l < lanes ? vt##W##_load(src + l * k->hw + q) : vt##W##_zero();  \
      vt##W##_transpose##W(r);                                                                            \
      for (int j = 0; j < W; j++) vt##W##_store(dst + (q + j) * W, r[j]);                                 \
    }                                                                                                     \
    for (; q < q1; q++) vt##W##_store(dst + q * W, vt##W##_gather_lanes(src + q, k->hw, lanes));           \
  }
#if defined(__AVX512F__)
TO_BLOCKED(16)
#endif
#if defined(__AVX2__) && defined(__FMA__)
TO_BLOCKED(8)
#endif

static void to_blocked_scalar(const blk_ctx* k, long t, long q0, long q1) {
  long n = t / k->cb, cb = t % k->cb;
  float* dst = k->out + t * k->hw * k->v;
  long lanes = k->c - cb * k->v < k->v ? k->c - cb * k->v : k->v;
  const float* src = k->in + (n * k->c + cb * k->v) * k->hw;
  for (long p0 = q0; p0 < q1; p0 += 32) {
    long p1 = p0 + 32 < q1 ? p0 + 32 : q1;
    for (long l = 0; l < lanes; l++)
      for (long q = p0; q < p1; q++) dst[q * k->v + l] = src[l * k->hw + q];
    for (long l = lanes; l < k->v; l++)
      for (long q = p0; q < p1; q++) dst[q * k->v + l] = 0.0f;
  }
}

static void to_blocked(const void* p, long b, long e) {
  const blk_ctx* k = p;
  for (long u = b; u < e; u++) {
    long t = u / k->parts, q0 = (u % k->parts) * k->part_px, q1 = q0 + k->part_px < k->hw ? q0 + k->part_px : k->hw;
#if defined(__AVX512F__)
    if (k->v == 16 && k->hw <= INT32_MAX / 16) { to_blocked16(k, t, q0, q1); continue; }
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if (k->v == 8 && k->hw <= INT32_MAX / 8) { to_blocked8(k, t, q0, q1); continue; }
#endif
    to_blocked_scalar(k, t, q0, q1);
  }
}

/*
 * NCHW[V]c -> NCHW for a vector width the build has: each natural row (one channel's pixels) is
 * filled W pixels at a time by a strided gather (stride V) and one contiguous store.
 */
#define FROM_BLOCKED(W)                                                                                   \
  static void from_blocked##W(const blk_ctx* k, long t) {                                                 \
    long n = t / k->cb, cb = t % k->cb;                                                                   \
    const float* src = k->in + t * k->hw * k->v;                                                          \
    long lanes = k->c - cb * k->v < k->v ? k->c - cb * k->v : k->v;                                       \
    float* dst = k->out + (n * k->c + cb * k->v) * k->hw;                                                 \
    for (long l = 0; l < lanes; l++) {                                                                    \
      long q = 0;                                                                                         \
      for (; q + W <= k->hw; q += W) vt##W##_store(dst + l * k->hw + q, vt##W##_gather_lanes(src + q * k->v + l, k->v, W)); \
      for (; q < k->hw; q++) dst[l * k->hw + q] = src[q * k->v + l];                                      \
    }                                                                                                     \
  }
#if defined(__AVX512F__)
FROM_BLOCKED(16)
/* NCHW16c -> NCHW by 16 x 16 register transposes: 16 pixels of the block in, 16 pixels of each real channel out. */
static void from_blocked16_transposed(const blk_ctx* k, long t) {
  long n = t / k->cb, cb = t % k->cb;
  const float* src = k->in + t * k->hw * 16;
  int lanes = (int)(k->c - cb * 16 < 16 ? k->c - cb * 16 : 16);
  float* dst = k->out + (n * k->c + cb * 16) * k->hw;
  long q = 0;
  for (; q + 16 <= k->hw; q += 16) {
    vt16_t r[16];
    for (int j = 0; j < 16; j++) r[j] = vt16_load(src + (q + j) * 16);
    vt16_transpose16(r);
    for (int l = 0; l < lanes; l++) vt16_store(dst + l * k->hw + q, r[l]);
  }
  for (; q < k->hw; q++)
    for (int l = 0; l < lanes; l++) dst[l * k->hw + q] = src[q * 16 + l];
}
#endif
#if defined(__AVX2__) && defined(__FMA__)
FROM_BLOCKED(8)
#endif

static void from_blocked(const void* p, long b, long e) {
  const blk_ctx* k = p;
#if defined(__AVX512F__)
  if (k->v == 16) { for (long t = b; t < e; t++) from_blocked16_transposed(k, t); return; }
  if (k->hw * k->v <= INT32_MAX / 2) { for (long t = b; t < e; t++) from_blocked16(k, t); return; }
#elif defined(__AVX2__) && defined(__FMA__)
  if (k->hw * k->v <= INT32_MAX / 2) { for (long t = b; t < e; t++) from_blocked8(k, t); return; }
#endif
  for (long t = b; t < e; t++) {
    long n = t / k->cb, cb = t % k->cb;
    const float* src = k->in + t * k->hw * k->v;
    long lanes = k->c - cb * k->v < k->v ? k->c - cb * k->v : k->v;
    float* dst = k->out + (n * k->c + cb * k->v) * k->hw;
    for (long p0 = 0; p0 < k->hw; p0 += 32) {
      long p1 = p0 + 32 < k->hw ? p0 + 32 : k->hw;
      for (long l = 0; l < lanes; l++)
        for (long q = p0; q < p1; q++) dst[l * k->hw + q] = src[q * k->v + l];
    }
  }
}

/*
 * NCHW[V1]c -> NCHW[V2]c: output block t, lane run j holds channels ob*V2 + j*g .. + g - 1 with
 * g = min(V1, V2), which sit in one input block at lane offset c0 % V1: g floats per pixel.
 */
typedef struct { const float* in; float* out; long c, hw, fv, tv, fcb, tcb; } b2b_ctx;

#if defined(__AVX512F__)
/*
 * NCHW8c <-> NCHW16c by whole pixels: 8c -> 16c stores one full 64-byte line per pixel from the two
 * source blocks (not two half-line passes over the output, each a partial write); 16c -> 8c reads
 * each source line once and writes both halves (not once per output block). Units: 8c -> 16c one
 * output block, 16c -> 8c one input block. A missing second 8c block (C ≤ 16·ob + 8) reads as zeros.
 */
static void eight_to_sixteen(const void* p, long b, long e) {
  const b2b_ctx* k = p;
  for (long t = b; t < e; t++) {
    long n = t / k->tcb, ob = t % k->tcb;
    float* dst = k->out + t * k->hw * 16;
    const float* lo = k->in + (n * k->fcb + 2 * ob) * k->hw * 8;
    const float* hi = 2 * ob + 1 < k->fcb ? lo + k->hw * 8 : NULL;
    for (long q = 0; q < k->hw; q++) {
      __m256 h = hi ? _mm256_loadu_ps(hi + q * 8) : _mm256_setzero_ps();
      __m512d both = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(lo + q * 8))), _mm256_castps_pd(h), 1);
      vt16_store(dst + q * 16, _mm512_castpd_ps(both));
    }
  }
}

static void sixteen_to_eight(const void* p, long b, long e) {
  const b2b_ctx* k = p;
  for (long t = b; t < e; t++) {
    long n = t / k->fcb, ib = t % k->fcb;
    const float* src = k->in + t * k->hw * 16;
    float* lo = k->out + (n * k->tcb + 2 * ib) * k->hw * 8;
    float* hi = 2 * ib + 1 < k->tcb ? lo + k->hw * 8 : NULL;
    for (long q = 0; q < k->hw; q++) {
      __m512 x = vt16_load(src + q * 16);
      _mm256_storeu_ps(lo + q * 8, _mm512_castps512_ps256(x));
      if (hi) _mm256_storeu_ps(hi + q * 8, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    }
  }
}
#endif

static void blocked_to_blocked(const void* p, long b, long e) {
  const b2b_ctx* k = p;
  const long g = k->fv < k->tv ? k->fv : k->tv;
  for (long t = b; t < e; t++) {
    long n = t / k->tcb, ob = t % k->tcb;
    float* dst = k->out + t * k->hw * k->tv;
    for (long j = 0; j * g < k->tv; j++) {
      long c0 = ob * k->tv + j * g;
      if (c0 >= k->c) {
        for (long q = 0; q < k->hw; q++) memset(dst + q * k->tv + j * g, 0, (size_t)g * sizeof(float));
        continue;
      }
      const float* src = k->in + (n * k->fcb + c0 / k->fv) * k->hw * k->fv + c0 % k->fv;
#if defined(__AVX2__) && defined(__FMA__)
      if (g == 8) { for (long q = 0; q < k->hw; q++) vt8_store(dst + q * k->tv + j * g, vt8_load(src + q * k->fv)); continue; }
#endif
      for (long q = 0; q < k->hw; q++) memcpy(dst + q * k->tv + j * g, src + q * k->fv, (size_t)g * sizeof(float));
    }
  }
}

typedef struct { const float* in; float* out; long cols, v, padded; int pad; } rows_ctx;

/* rows{V1} -> rows{V2}: each row's cols floats copied, the new padding zeroed. */
typedef struct { const float* in; float* out; long cols, fp, tp; } r2r_ctx;

static void rows_to_rows(const void* p, long b, long e) {
  const r2r_ctx* k = p;
  for (long r = b; r < e; r++) {
    memcpy(k->out + r * k->tp, k->in + r * k->fp, (size_t)k->cols * sizeof(float));
    memset(k->out + r * k->tp + k->cols, 0, (size_t)(k->tp - k->cols) * sizeof(float));
  }
}

static void rows_copy(const void* p, long b, long e) {
  const rows_ctx* k = p;
  for (long r = b; r < e; r++) {
    if (k->pad) {
      memcpy(k->out + r * k->padded, k->in + r * k->cols, (size_t)k->cols * sizeof(float));
      memset(k->out + r * k->padded + k->cols, 0, (size_t)(k->padded - k->cols) * sizeof(float));
    } else {
      memcpy(k->out + r * k->cols, k->in + r * k->padded, (size_t)k->cols * sizeof(float));
    }
  }
}

/* Where the element with natural index i lives in a layout. */
static long address(int kind, long v, long i, long c, long hw, long cols) {
  if (kind == NATURAL) return i;
  if (kind == BLOCKED) {
    long p = i % hw, ch = (i / hw) % c, n = i / (hw * c), cb = (c + v - 1) / v;
    return ((n * cb + ch / v) * hw + p) * v + ch % v;
  }
  long padded = (cols + v - 1) / v * v;
  return (i / cols) * padded + i % cols;
}

static long stored(int kind, long v, long n, long c, long hw, long rows, long cols) {
  if (kind == NATURAL) return n * c * hw;
  if (kind == BLOCKED) return n * ((c + v - 1) / v * v) * hw;
  return rows * ((cols + v - 1) / v * v);
}

typedef struct { const float* in; float* out; int from, to; long fv, tv, n, c, hw, rows, cols; } any_ctx;

static void any_to_any(const void* p, long b, long e) {
  (void)b; (void)e;
  const any_ctx* k = p;
  memset(k->out, 0, (size_t)stored(k->to, k->tv, k->n, k->c, k->hw, k->rows, k->cols) * sizeof(float));
  long total = k->n * k->c * k->hw;
  for (long i = 0; i < total; i++) k->out[address(k->to, k->tv, i, k->c, k->hw, k->cols)] = k->in[address(k->from, k->fv, i, k->c, k->hw, k->cols)];
}

int vt_op_reorder(const vt_step* s) {
  const int64_t* k = s->ints;
  int from = (int)k[0], to = (int)k[2];
  long fv = k[1], tv = k[3], n = k[4], c = k[5], hw = k[6], rows = k[7], cols = k[8];
  const float* in = s->in[0];
  float* out = s->out[0];
  if (from == NATURAL && to == BLOCKED) {
    long parts = (hw + PART_PX - 1) / PART_PX;
    blk_ctx ctx = { in, out, n, c, hw, tv, (c + tv - 1) / tv, parts, PART_PX };
    vt_parallel(n * ctx.cb * parts, s->threads, 2, to_blocked, &ctx);
  } else if (from == BLOCKED && to == NATURAL) {
    blk_ctx ctx = { in, out, n, c, hw, fv, (c + fv - 1) / fv, 1, hw };
    vt_parallel(n * ctx.cb, s->threads, 4, from_blocked, &ctx);
  } else if ((from == NATURAL && to == ROWS) || (from == ROWS && to == NATURAL)) {
    long v = to == ROWS ? tv : fv;
    rows_ctx ctx = { in, out, cols, v, (cols + v - 1) / v * v, to == ROWS };
    vt_parallel(rows, s->threads, 64, rows_copy, &ctx);
  } else if (from == BLOCKED && to == BLOCKED && fv > 0 && tv > 0 && (fv % tv == 0 || tv % fv == 0)) {
    b2b_ctx ctx = { in, out, c, hw, fv, tv, (c + fv - 1) / fv, (c + tv - 1) / tv };
#if defined(__AVX512F__)
    if (fv == 8 && tv == 16) { vt_parallel(n * ctx.tcb, s->threads, 2, eight_to_sixteen, &ctx); return 0; }
    if (fv == 16 && tv == 8) { vt_parallel(n * ctx.fcb, s->threads, 2, sixteen_to_eight, &ctx); return 0; }
#endif
    vt_parallel(n * ctx.tcb, s->threads, 4, blocked_to_blocked, &ctx);
  } else if (from == ROWS && to == ROWS && fv > 0 && tv > 0) {
    r2r_ctx ctx = { in, out, cols, (cols + fv - 1) / fv * fv, (cols + tv - 1) / tv * tv };
    vt_parallel(rows, s->threads, 64, rows_to_rows, &ctx);
  } else {
    /* element by element, on one thread (in a team: thread 0, the others wait at vt_parallel's barrier) */
    any_ctx ctx = { in, out, from, to, fv, tv, n, c, hw, rows, cols };
    vt_parallel(1, 1, 1, any_to_any, &ctx);
  }
  return 0;
}
