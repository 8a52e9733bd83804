/*
 * The quantized steps around the INT8 kernels. Integer activations are channels-last (NHWC: what the
 * INT8 kernels read and write; a tensor that is not rank 4 is row-major, which is the same thing with
 * N·H·W rows); float activations are NCHW[V]c (V = 1: plain NCHW). Element kinds are vt_kind codes
 * (VT_U8 or VT_I8). The arithmetic is ONNX's as src/onnx/quant-math.ts pins it, so each step equals
 * src/quantize/reference.ts bit for bit:
 *   quantize    q = sat(rint(fl32(x / scale)) + zero), ties to even, NaN -> zero
 *   dequantize  x = fl32((q - zero) * scale)
 *   requantize  q = sat(rint(fl32(fl32(acc) * mult)) + zero)
 * Contraction into FMA is switched off for this file: a fused (a·s + b·t) rounds once where the
 * reference rounds twice, and would differ from it in the last bit.
 *
 * QUANTIZE   in [x f32], out [q]; ints [N, C, HW, V, int_nhwc, kind]: x is NCHW[V]c, q is NHWC
 *            (int_nhwc 1) or NCHW (0); floats [scale, zero].
 * DEQUANTIZE in [q], out [x f32]; the same ints and floats, q read and x written (padded lanes zero).
 * QADD       in [a, b], out [y], all the same shape and layout; ints [count, a kind, b kind, y kind,
 *            y lo, y hi]; floats [a_scale, a_zero, b_scale, b_zero, y_scale, y_zero]:
 *            y = clamp(quantize(fl32(dequantize(a) + dequantize(b))), lo, hi), the bounds inside y's
 *            type (a folded Relu: lo = y_zero).
 * QMAXPOOL   in [x] NHWC, out [y] NHWC; ints [N, C, H, W, OH, OW, kh, kw, sh, sw, pt, pl, dh, dw,
 *            x kind, y kind]; floats [mult, x_zero, y_zero]: the window's max over the taps inside
 *            the input, requantized as max - x_zero.
 * QGLOBAL_AVGPOOL in [x] NHWC, out [y] [N][C]; ints [N, C, HW, x kind, y kind]; floats [mult,
 *            x_zero, y_zero], mult = fl32(x_scale / fl32(y_scale · HW)): requantize(Σ (x - x_zero)).
 * QCONCAT    in [x_1 .. x_n], out [y], row-major in the integer layout (NHWC for rank 4), joined
 *            along one axis: each of `rows` rows of y is x_1's row, then x_2's, ...; ints [rows, y kind,
 *            n, inner_1 .. inner_n, kind_1 .. kind_n, affine, lo, hi] (inner_i: x_i's elements per row;
 *            lo, hi: the output clamp); floats [scale_1, zero_1, .., scale_n, zero_n, y_scale, y_zero,
 *            (affine) A[row], B[row]]: y = clamp(quantize(dequantize(x_i))), through a 256-entry
 *            table per input (a copy where the input already has y's scale); with affine (a channel
 *            concat of NHWC, so a row is a pixel's channels) y = clamp(rint(fl32(fl32((x − zero_i) ·
 *            A[c]) + B[c])) + y_zero) for the row's element c (A, B: a folded batch norm over y_scale).
 * QLUT       in [x u8], out [y]; ints [count, x kind (u8), y kind, table[256]]: y[i] = table[x[i]] (a float
 *            island folded by src/ir/quant-lut.ts; the table holds y's integers).
 * QAVGPOOL   in [x] NHWC, out [y] NHWC; ints [N, C, H, W, OH, OW, kh, kw, sh, sw, pt, pl,
 *            count_include_pad, x kind, y kind]; floats [x_scale, x_zero, y_scale, y_zero]: Σ (x − x_zero)
 *            over the window's taps inside the input, requantized by fl32(x_scale / fl32(y_scale · count)),
 *            count the taps inside (or kh·kw with count_include_pad).
 * QGATE      in [x u8 NHWC, g u8 [N][C]], out [y u8 NHWC]; ints [N, HW, C]; floats [x_scale, x_zero,
 *            y_scale, y_zero, gate[256]]: y = quantize(fl32(dequantize(x) · gate[g[n][c]])), a
 *            squeeze-excitation's channel gate (gate: the float gate of each integer g).
 */
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "vt_rt.h"
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
#include <immintrin.h>
#endif

static inline int qlo(int kind) { return kind == VT_I8 ? -128 : 0; }
static inline int qhi(int kind) { return kind == VT_I8 ? 127 : 255; }

static inline int qget(const void* p, long i, int kind) {
  return kind == VT_I8 ? ((const int8_t*)p)[i] : ((const uint8_t*)p)[i];
}

static inline void qput(void* p, long i, int kind, int v) {
  if (kind == VT_I8) ((int8_t*)p)[i] = (int8_t)v;
  else ((uint8_t*)p)[i] = (uint8_t)v;
}

/* rint(r) + zero saturated, r already rounded or not: clamped in float first so no conversion overflows. */
static inline int saturate_round(float r, int zero, int kind) {
  if (isnan(r)) return zero < qlo(kind) ? qlo(kind) : zero > qhi(kind) ? qhi(kind) : zero;
  const float lo = (float)(qlo(kind) - zero), hi = (float)(qhi(kind) - zero);
  r = nearbyintf(r);
  if (r < lo) r = lo;
  if (r > hi) r = hi;
  return (int)r + zero;
}

/*
 * saturate_round(r) - zero without a branch or a libm call, so that GCC vectorizes the loops below:
 * NaN becomes offset 0 before the clamp (the same result: lo <= 0 <= hi, or the clamped zero).
 * lo and hi are the clamp bounds relative to the zero point, qlo - zero and qhi - zero.
 */
static inline __attribute__((always_inline)) float rounded_offset(float r, float lo, float hi) {
  r = r == r ? nearbyintf(r) : 0.0f;
  r = r < lo ? lo : r;
  return r > hi ? hi : r;
}

static inline __attribute__((always_inline)) float quantized_offset(float x, float scale, float lo, float hi) {
  return rounded_offset(x / scale, lo, hi);
}

static inline int requantize_1(long acc, float mult, int zero, int kind) { return saturate_round((float)acc * mult, zero, kind); }

static int valid_kind(const vt_step* s, const char* what, long kind) {
  if (kind == VT_U8 || kind == VT_I8) return 1;
  snprintf(s->err, VT_ERR_LEN, "%s: element kind %ld is not u8 or s8", what, kind);
  return 0;
}

/* ---- QUANTIZE / DEQUANTIZE: one task per (image, pixel row band) ---- */

typedef struct { const void* in; void* out; long n, c, hw, v, nhwc, kind; float scale; int zero; } conv_ctx;

/* Where element (b, ch, p) lives on the float side (NCHW[V]c) and the integer side. */
static inline long float_at(const conv_ctx* k, long b, long ch, long p) {
  const long cb = (k->c + k->v - 1) / k->v;
  return ((b * cb + ch / k->v) * k->hw + p) * k->v + ch % k->v;
}
static inline long int_at(const conv_ctx* k, long b, long ch, long p) {
  return k->nhwc ? (b * k->hw + p) * k->c + ch : (b * k->c + ch) * k->hw + p;
}

/*
 * Both conversions walk pixels t0..t1 of the flattened (image, pixel) range, and at each pixel every
 * channel block: V float lanes side by side on one side, the same channels at one stride on the
 * other (1 in NHWC), with the element kind a constant in each loop so that it vectorizes.
 */
static inline __attribute__((always_inline)) void quantize_pixels(const conv_ctx* k, long t0, long t1, int kind) {
  const float* x = k->in;
  const long cb = (k->c + k->v - 1) / k->v, stride = k->nhwc ? 1 : k->hw;
  const float lo = (float)(qlo(kind) - k->zero), hi = (float)(qhi(kind) - k->zero);
  long b = t0 / k->hw, px = t0 % k->hw;
  for (long t = t0; t < t1; t++) {
    for (long blk = 0; blk < cb; blk++) {
      const float* src = x + ((b * cb + blk) * k->hw + px) * k->v;
      const long c0 = blk * k->v, lanes = k->c - c0 < k->v ? k->c - c0 : k->v;
      const long at = int_at(k, b, c0, px);
      if (kind == VT_U8) {
        uint8_t* dst = (uint8_t*)k->out + at;
        for (long l = 0; l < lanes; l++) dst[l * stride] = (uint8_t)((int)quantized_offset(src[l], k->scale, lo, hi) + k->zero);
      } else {
        int8_t* dst = (int8_t*)k->out + at;
        for (long l = 0; l < lanes; l++) dst[l * stride] = (int8_t)((int)quantized_offset(src[l], k->scale, lo, hi) + k->zero);
      }
    }
    if (++px == k->hw) px = 0, b++;
  }
}

/*
 * Plain NCHW floats (V = 1: a model's image input, a float layer's natural layout): channel by channel
 * along pixels, which vectorizes, a tile of pixels at a time so that the channels-last side of the
 * tile (TILE · C bytes) stays in cache across the channel passes.
 */
enum { PLANE_TILE = 64 };

static inline __attribute__((always_inline)) void quantize_planes(const conv_ctx* k, long t0, long t1, int kind) {
  const float* x = k->in;
  const float scale = k->scale, lo = (float)(qlo(kind) - k->zero), hi = (float)(qhi(kind) - k->zero);
  const int zero = k->zero;
  const long stride = k->nhwc ? k->c : 1;
  for (long t = t0; t < t1;) {
    const long b = t / k->hw, p0 = t % k->hw, p1 = t1 - b * k->hw < k->hw ? t1 - b * k->hw : k->hw;
    for (long pt = p0; pt < p1; pt += PLANE_TILE) {
      const long pe = pt + PLANE_TILE < p1 ? pt + PLANE_TILE : p1;
      for (long ch = 0; ch < k->c; ch++) {
        const float* src = x + (b * k->c + ch) * k->hw;
        const long at = int_at(k, b, ch, 0);
        if (kind == VT_U8) {
          uint8_t* dst = (uint8_t*)k->out + at;
          for (long px = pt; px < pe; px++) dst[px * stride] = (uint8_t)((int)quantized_offset(src[px], scale, lo, hi) + zero);
        } else {
          int8_t* dst = (int8_t*)k->out + at;
          for (long px = pt; px < pe; px++) dst[px * stride] = (int8_t)((int)quantized_offset(src[px], scale, lo, hi) + zero);
        }
      }
    }
    t = b * k->hw + p1;
  }
}

static void quantize_range(const void* p, long t0, long t1) {
  const conv_ctx* k = p;
  if (k->v == 1 && k->kind == VT_U8) quantize_planes(k, t0, t1, VT_U8);
  else if (k->v == 1) quantize_planes(k, t0, t1, VT_I8);
  else if (k->kind == VT_U8) quantize_pixels(k, t0, t1, VT_U8);
  else quantize_pixels(k, t0, t1, VT_I8);
}

static inline __attribute__((always_inline)) void dequantize_pixels(const conv_ctx* k, long t0, long t1, int kind) {
  float* x = k->out;
  const long cb = (k->c + k->v - 1) / k->v, stride = k->nhwc ? 1 : k->hw;
  long b = t0 / k->hw, px = t0 % k->hw;
  for (long t = t0; t < t1; t++) {
    for (long blk = 0; blk < cb; blk++) {
      float* dst = x + ((b * cb + blk) * k->hw + px) * k->v;
      const long c0 = blk * k->v, lanes = k->c - c0 < k->v ? k->c - c0 : k->v;
      const long at = int_at(k, b, c0, px);
      if (kind == VT_U8) {
        const uint8_t* src = (const uint8_t*)k->in + at;
        for (long l = 0; l < lanes; l++) dst[l] = (float)((int)src[l * stride] - k->zero) * k->scale;
      } else {
        const int8_t* src = (const int8_t*)k->in + at;
        for (long l = 0; l < lanes; l++) dst[l] = (float)((int)src[l * stride] - k->zero) * k->scale;
      }
      for (long l = lanes; l < k->v; l++) dst[l] = 0.0f;
    }
    if (++px == k->hw) px = 0, b++;
  }
}

static inline __attribute__((always_inline)) void dequantize_planes(const conv_ctx* k, long t0, long t1, int kind) {
  float* x = k->out;
  const float scale = k->scale;
  const int zero = k->zero;
  const long stride = k->nhwc ? k->c : 1;
  for (long t = t0; t < t1;) {
    const long b = t / k->hw, p0 = t % k->hw, p1 = t1 - b * k->hw < k->hw ? t1 - b * k->hw : k->hw;
    for (long pt = p0; pt < p1; pt += PLANE_TILE) {
      const long pe = pt + PLANE_TILE < p1 ? pt + PLANE_TILE : p1;
      for (long ch = 0; ch < k->c; ch++) {
        float* dst = x + (b * k->c + ch) * k->hw;
        const long at = int_at(k, b, ch, 0);
        if (kind == VT_U8) {
          const uint8_t* src = (const uint8_t*)k->in + at;
          for (long px = pt; px < pe; px++) dst[px] = (float)((int)src[px * stride] - zero) * scale;
        } else {
          const int8_t* src = (const int8_t*)k->in + at;
          for (long px = pt; px < pe; px++) dst[px] = (float)((int)src[px * stride] - zero) * scale;
        }
      }
    }
    t = b * k->hw + p1;
  }
}

static void dequantize_range(const void* p, long t0, long t1) {
  const conv_ctx* k = p;
  if (k->v == 1 && k->kind == VT_U8) dequantize_planes(k, t0, t1, VT_U8);
  else if (k->v == 1) dequantize_planes(k, t0, t1, VT_I8);
  else if (k->kind == VT_U8) dequantize_pixels(k, t0, t1, VT_U8);
  else dequantize_pixels(k, t0, t1, VT_I8);
}

static int conversion(const vt_step* s, vt_range_fn f, const char* what) {
  const int64_t* k = s->ints;
  if (s->n_ints != 6 || s->n_floats != 2) { snprintf(s->err, VT_ERR_LEN, "%s: wrong arity", what); return 1; }
  if (!valid_kind(s, what, k[5])) return 1;
  if (k[3] < 1) { snprintf(s->err, VT_ERR_LEN, "%s: vector width %ld", what, (long)k[3]); return 1; }
  conv_ctx c = { s->in[0], s->out[0], k[0], k[1], k[2], k[3], k[4], k[5], (float)s->floats[0], (int)s->floats[1] };
  vt_parallel(c.n * c.hw, s->threads, 64, f, &c);
  return 0;
}

int vt_op_quantize(const vt_step* s) { return conversion(s, quantize_range, "quantize"); }
int vt_op_dequantize(const vt_step* s) { return conversion(s, dequantize_range, "dequantize"); }

/* ---- QADD ---- */

typedef struct { const void *a, *b; void* y; int ka, kb, ky; float as, bs, ys; int az, bz, yz, lo, hi; } qadd_ctx;

static inline __attribute__((always_inline)) void qadd_elements(const qadd_ctx* k, long i0, long i1, int ka, int kb, int ky) {
  // Locals, not k->…: a byte store may alias the context, which would keep the loop scalar.
  const void *a = k->a, *b = k->b;
  void* y = k->y;
  const float as = k->as, bs = k->bs, ys = k->ys;
  const int az = k->az, bz = k->bz, yz = k->yz;
  const float lo = (float)(k->lo - yz), hi = (float)(k->hi - yz);
  for (long i = i0; i < i1; i++) {
    const float da = (float)(qget(a, i, ka) - az) * as;
    const float db = (float)(qget(b, i, kb) - bz) * bs;
    qput(y, i, ky, (int)quantized_offset(da + db, ys, lo, hi) + yz);
  }
}

/* All-u8 (what veltair quantize writes) gets its own loop with constant kinds, which vectorizes. */
static void qadd_range(const void* p, long i0, long i1) {
  const qadd_ctx* k = p;
  if (k->ka == VT_U8 && k->kb == VT_U8 && k->ky == VT_U8) qadd_elements(k, i0, i1, VT_U8, VT_U8, VT_U8);
  else qadd_elements(k, i0, i1, k->ka, k->kb, k->ky);
}

int vt_op_qadd(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 6 || s->n_floats != 6) { snprintf(s->err, VT_ERR_LEN, "qadd: wrong arity"); return 1; }
  if (!valid_kind(s, "qadd", k[1]) || !valid_kind(s, "qadd", k[2]) || !valid_kind(s, "qadd", k[3])) return 1;
  if (k[4] < qlo((int)k[3]) || k[5] > qhi((int)k[3]) || k[4] > k[5]) {
    snprintf(s->err, VT_ERR_LEN, "qadd: output bounds [%ld, %ld] outside the output type", (long)k[4], (long)k[5]);
    return 1;
  }
  const double* f = s->floats;
  qadd_ctx c = { s->in[0], s->in[1], s->out[0], (int)k[1], (int)k[2], (int)k[3],
                 (float)f[0], (float)f[2], (float)f[4], (int)f[1], (int)f[3], (int)f[5], (int)k[4], (int)k[5] };
  vt_parallel(k[0], s->threads, 4096, qadd_range, &c);
  return 0;
}

/*
 * y[i] = table[x[i]]. With AVX-512 VBMI, 64 bytes per step: two 128-entry permutes (the index's low
 * seven bits) and a blend on its high bit; a scalar byte gather elsewhere.
 */
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
/* table[v] for each byte v of `idx`. */
static inline __attribute__((always_inline)) __m512i lookup_vector(__m512i idx, const uint8_t* table) {
  const __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(table), idx, _mm512_loadu_si512(table + 64));
  const __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512(table + 128), idx, _mm512_loadu_si512(table + 192));
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
}
#endif

static void lookup_bytes(const uint8_t* restrict x, uint8_t* restrict y, long n, const uint8_t* restrict table) {
  long i = 0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  for (; i + 64 <= n; i += 64) {
    const __m512i idx = _mm512_loadu_si512(x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1), hi = _mm512_permutex2var_epi8(t2, idx, t3);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi));
  }
  if (i < n) {
    const __mmask64 m = (__mmask64)-1 >> (64 - (n - i));
    const __m512i idx = _mm512_maskz_loadu_epi8(m, x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1), hi = _mm512_permutex2var_epi8(t2, idx, t3);
    _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi));
    return;
  }
#endif
  for (; i < n; i++) y[i] = table[x[i]];
}

/* ---- QMAXPOOL: one task per output row ---- */

typedef struct {
  const void* x; void* y; long n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw; int kx, ky; float mult; int xz, yz;
  const uint8_t* table;
} qpool_ctx;

/*
 * The taps of a pooling window that land inside the input, along one axis: [*t0, *t1) of the k taps
 * at o·stride − pad + t·dil (a contiguous range: the position grows with t). Empty when t0 == t1.
 */
static inline void taps_inside(long o, long stride, long pad, long dil, long k, long extent, long* t0, long* t1) {
  const long first = o * stride - pad;
  long a = 0, e = k;
  while (a < k && first + a * dil < 0) a++;
  while (e > a && first + (e - 1) * dil >= extent) e--;
  *t0 = a;
  *t1 = e;
}

/* Channels of one output pixel reduced together (a stack buffer), so the max over taps vectorizes. */
enum { QPOOL_CHUNK = 256 };

static inline __attribute__((always_inline)) void qmaxpool_pixel(const qpool_ctx* k, long b, long oy, long ox, int kx, int ky) {
  const float lo = (float)(qlo(ky) - k->yz), hi = (float)(qhi(ky) - k->yz);
  const long out = ((b * k->oh + oy) * k->ow + ox) * k->c;
  long y0, y1, x0, x1;
  taps_inside(oy, k->sh, k->pt, k->dh, k->kh, k->h, &y0, &y1);
  taps_inside(ox, k->sw, k->pl, k->dw, k->kw, k->w, &x0, &x1);
  for (long c0 = 0; c0 < k->c; c0 += QPOOL_CHUNK) {
    const long n = k->c - c0 < QPOOL_CHUNK ? k->c - c0 : QPOOL_CHUNK;
    int best[QPOOL_CHUNK];
    int any = 0;
    for (long ty = y0; ty < y1; ty++) {
      const long iy = oy * k->sh - k->pt + ty * k->dh;
      for (long tx = x0; tx < x1; tx++) {
        const long ix = ox * k->sw - k->pl + tx * k->dw;
        const long in = ((b * k->h + iy) * k->w + ix) * k->c + c0;
        if (!any)
          for (long ch = 0; ch < n; ch++) best[ch] = qget(k->x, in + ch, kx);
        else
          for (long ch = 0; ch < n; ch++) {
            const int v = qget(k->x, in + ch, kx);
            best[ch] = v > best[ch] ? v : best[ch];
          }
        any = 1;
      }
    }
    // Locals, not k->…: a byte store may alias the context, which would keep the loop scalar.
    const int xz = any ? k->xz : 0, yz = k->yz;
    const float mult = k->mult;
    void* y = k->y;
    if (!any)
      for (long ch = 0; ch < n; ch++) best[ch] = 0;
    for (long ch = 0; ch < n; ch++) qput(y, out + c0 + ch, ky, (int)rounded_offset((float)(best[ch] - xz) * mult, lo, hi) + yz);
  }
}

/*
 * All-u8: the max over taps in bytes (64 lanes per instruction), then the requantization of each of
 * the 256 possible maxima through a table built once per call (max commutes with it: it is monotone).
 */
static void qmaxpool_pixel_u8(const qpool_ctx* k, long b, long oy, long ox) {
  uint8_t* out = (uint8_t*)k->y + ((b * k->oh + oy) * k->ow + ox) * k->c;
  const uint8_t* x = k->x;
  long y0, y1, x0, x1;
  taps_inside(oy, k->sh, k->pt, k->dh, k->kh, k->h, &y0, &y1);
  taps_inside(ox, k->sw, k->pl, k->dw, k->kw, k->w, &x0, &x1);
  // A window wholly in the padding reads nothing: requantized as 0 - 0, the output zero point.
  const int any = y0 < y1 && x0 < x1;
  for (long c0 = 0; c0 < k->c; c0 += QPOOL_CHUNK) {
    const long n = k->c - c0 < QPOOL_CHUNK ? k->c - c0 : QPOOL_CHUNK;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
    // The running max stays in a register: 64 channels per step, masked at the pixel's end.
    for (long v0 = 0; v0 < n; v0 += 64) {
      const __mmask64 m = n - v0 >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - v0)) - 1;
      __m512i best = _mm512_setzero_si512();
      for (long ty = y0; ty < y1; ty++) {
        const long iy = oy * k->sh - k->pt + ty * k->dh;
        for (long tx = x0; tx < x1; tx++) {
          const long ix = ox * k->sw - k->pl + tx * k->dw;
          best = _mm512_max_epu8(best, _mm512_maskz_loadu_epi8(m, x + ((b * k->h + iy) * k->w + ix) * k->c + c0 + v0));
        }
      }
      const __m512i y = any ? lookup_vector(best, k->table) : _mm512_set1_epi8((char)k->yz);
      _mm512_mask_storeu_epi8(out + c0 + v0, m, y);
    }
#else
    uint8_t best[QPOOL_CHUNK];
    for (long ty = y0; ty < y1; ty++) {
      const long iy = oy * k->sh - k->pt + ty * k->dh;
      for (long tx = x0; tx < x1; tx++) {
        const long ix = ox * k->sw - k->pl + tx * k->dw;
        const uint8_t* in = x + ((b * k->h + iy) * k->w + ix) * k->c + c0;
        if (ty == y0 && tx == x0) memcpy(best, in, (size_t)n);
        else
          for (long ch = 0; ch < n; ch++) best[ch] = in[ch] > best[ch] ? in[ch] : best[ch];
      }
    }
    if (any) lookup_bytes(best, out + c0, n, k->table);
    else memset(out + c0, k->yz, (size_t)n);
#endif
  }
}

static void qmaxpool_rows(const void* p, long r0, long r1) {
  const qpool_ctx* k = p;
  const int u8 = k->kx == VT_U8 && k->ky == VT_U8;
  for (long r = r0; r < r1; r++) {
    const long b = r / k->oh, oy = r % k->oh;
    for (long ox = 0; ox < k->ow; ox++) {
      if (u8) qmaxpool_pixel_u8(k, b, oy, ox);
      else qmaxpool_pixel(k, b, oy, ox, k->kx, k->ky);
    }
  }
}

int vt_op_qmaxpool(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 16 || s->n_floats != 3) { snprintf(s->err, VT_ERR_LEN, "qmaxpool: wrong arity"); return 1; }
  if (!valid_kind(s, "qmaxpool", k[14]) || !valid_kind(s, "qmaxpool", k[15])) return 1;
  uint8_t table[256];
  const int yz = (int)s->floats[2];
  const float lo = (float)(qlo((int)k[15]) - yz), hi = (float)(qhi((int)k[15]) - yz);
  for (int v = 0; v < 256; v++) table[v] = (uint8_t)((int)rounded_offset((float)(v - (int)s->floats[1]) * (float)s->floats[0], lo, hi) + yz);
  qpool_ctx c = { s->in[0], s->out[0], k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11], k[12], k[13],
                  (int)k[14], (int)k[15], (float)s->floats[0], (int)s->floats[1], yz, table };
  vt_parallel(c.n * c.oh, s->threads, 4, qmaxpool_rows, &c);
  return 0;
}

/* ---- QGLOBAL_AVGPOOL: one task per (image, band of channels), summed pixel by pixel so the loads are contiguous ---- */

#define QGAP_BAND 128

typedef struct { const void* x; void* y; long n, c, hw; int kx, ky; float mult; int xz, yz; } qgap_ctx;

static inline __attribute__((always_inline)) void qgap_sum(const void* x, long c, long hw, long c0, long w, int kx, int32_t* acc) {
  for (long j = 0; j < w; j++) acc[j] = 0;
  for (long i = 0; i < hw; i++) {
    if (kx == VT_U8) {
      const uint8_t* row = (const uint8_t*)x + i * c + c0;
      for (long j = 0; j < w; j++) acc[j] += row[j];
    } else {
      const int8_t* row = (const int8_t*)x + i * c + c0;
      for (long j = 0; j < w; j++) acc[j] += row[j];
    }
  }
}

static void qgap_bands(const void* p, long t0, long t1) {
  const qgap_ctx* k = p;
  const long bands = (k->c + QGAP_BAND - 1) / QGAP_BAND;
  int32_t acc[QGAP_BAND];
  for (long t = t0; t < t1; t++) {
    const long b = t / bands, c0 = (t % bands) * QGAP_BAND, w = k->c - c0 < QGAP_BAND ? k->c - c0 : QGAP_BAND;
    const unsigned char* x = (const unsigned char*)k->x + b * k->hw * k->c;
    if (k->kx == VT_U8) qgap_sum(x, k->c, k->hw, c0, w, VT_U8, acc);
    else qgap_sum(x, k->c, k->hw, c0, w, VT_I8, acc);
    // Σ (x − x_zero) = Σ x − HW · x_zero, exactly, in 64 bits.
    for (long j = 0; j < w; j++) qput(k->y, b * k->c + c0 + j, k->ky, requantize_1((long)acc[j] - k->hw * k->xz, k->mult, k->yz, k->ky));
  }
}

int vt_op_qglobal_avgpool(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 5 || s->n_floats != 3) { snprintf(s->err, VT_ERR_LEN, "qglobal_avgpool: wrong arity"); return 1; }
  if (!valid_kind(s, "qglobal_avgpool", k[3]) || !valid_kind(s, "qglobal_avgpool", k[4])) return 1;
  qgap_ctx c = { s->in[0], s->out[0], k[0], k[1], k[2], (int)k[3], (int)k[4], (float)s->floats[0], (int)s->floats[1], (int)s->floats[2] };
  if (c.hw > (1L << 23)) { snprintf(s->err, VT_ERR_LEN, "qglobal_avgpool: %ld pixels overflow its 32-bit sums", c.hw); return 1; }
  vt_parallel(c.n * ((c.c + QGAP_BAND - 1) / QGAP_BAND), s->threads, 1, qgap_bands, &c);
  return 0;
}

/* ---- QCONCAT: one task per row band; QLUT: element ranges ---- */


#define QCONCAT_MAX_INPUTS 64

typedef struct {
  const void* const* x; void* y; long n, y_row; int ky;
  const int64_t* inner; const int64_t* kinds; const uint8_t (*table)[256]; const unsigned char* identity;
  const float* scale; const int* zero; const float* a; const float* sh; float ys; int yz, lo, hi;
} qconcat_ctx;

/* One input's slice of a row through the folded affine: channel c of the row at `c0`. */
static inline __attribute__((always_inline)) void affine_slice(const qconcat_ctx* k, const uint8_t* restrict in, uint8_t* restrict out,
                                                               long len, long c0, int zero) {
  const float* restrict a = k->a + c0;
  const float* restrict sh = k->sh + c0;
  const int yz = k->yz;
  const float lo = (float)(k->lo - yz), hi = (float)(k->hi - yz);
  for (long e = 0; e < len; e++) out[e] = (uint8_t)((int)rounded_offset((float)((int)in[e] - zero) * a[e] + sh[e], lo, hi) + yz);
}

static void qconcat_rows(const void* p, long r0, long r1) {
  const qconcat_ctx* k = p;
  for (long r = r0; r < r1; r++) {
    uint8_t* out = (uint8_t*)k->y + r * k->y_row;
    long c0 = 0;
    for (long i = 0; i < k->n; i++) {
      const long len = k->inner[i];
      const uint8_t* in = (const uint8_t*)k->x[i] + r * len;
      if (k->a != NULL) affine_slice(k, in, out, len, c0, k->zero[i]);
      else if (k->identity[i]) memcpy(out, in, (size_t)len);
      else lookup_bytes(in, out, len, k->table[i]);
      out += len;
      c0 += len;
    }
  }
}

/* Table entry for the input integer v: clamp(quantize(dequantize(v))), as QADD rounds, stored as y's byte. */
static uint8_t requantized_byte(int v, float scale, int zero, float y_scale, int y_zero, int lo, int hi) {
  const float d = (float)(v - zero) * scale;
  return (uint8_t)((int)quantized_offset(d, y_scale, (float)(lo - y_zero), (float)(hi - y_zero)) + y_zero);
}

int vt_op_qconcat(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints < 3) { snprintf(s->err, VT_ERR_LEN, "qconcat: wrong arity"); return 1; }
  const long n = k[2];
  if (n < 1 || n > QCONCAT_MAX_INPUTS || s->n_ints != 6 + 2 * n || s->n_in != n) {
    snprintf(s->err, VT_ERR_LEN, "qconcat: wrong arity for %ld inputs", n);
    return 1;
  }
  if (!valid_kind(s, "qconcat", k[1])) return 1;
  const int ky = (int)k[1], affine = (int)k[3 + 2 * n], lo = (int)k[4 + 2 * n], hi = (int)k[5 + 2 * n];
  if (lo < qlo(ky) || hi > qhi(ky) || lo > hi) { snprintf(s->err, VT_ERR_LEN, "qconcat: bounds [%d, %d] outside the output type", lo, hi); return 1; }
  long y_row = 0;
  for (long i = 0; i < n; i++) y_row += k[3 + i];
  if (s->n_floats != 2 * n + 2 + (affine ? 2 * y_row : 0)) { snprintf(s->err, VT_ERR_LEN, "qconcat: wrong float arity"); return 1; }
  const double* f = s->floats;
  const float y_scale = (float)f[2 * n];
  const int y_zero = (int)f[2 * n + 1];
  uint8_t table[QCONCAT_MAX_INPUTS][256];
  unsigned char identity[QCONCAT_MAX_INPUTS];
  float scale[QCONCAT_MAX_INPUTS];
  int zero[QCONCAT_MAX_INPUTS];
  for (long i = 0; i < n; i++) {
    const int kx = (int)k[3 + n + i];
    if (!valid_kind(s, "qconcat", kx)) return 1;
    if (affine && kx != VT_U8) { snprintf(s->err, VT_ERR_LEN, "qconcat: an affine concat reads u8"); return 1; }
    scale[i] = (float)f[2 * i];
    zero[i] = (int)f[2 * i + 1];
    identity[i] = kx == ky && scale[i] == y_scale && zero[i] == y_zero && lo == qlo(ky) && hi == qhi(ky);
    // Indexed by the input's byte: an s8 value v sits at (uint8_t)v.
    if (!affine)
      for (int b = 0; b < 256; b++) table[i][b] = requantized_byte(kx == VT_I8 ? (int)(int8_t)b : b, scale[i], zero[i], y_scale, y_zero, lo, hi);
  }
  float* ab = NULL;
  if (affine) {
    if (ky != VT_U8) { snprintf(s->err, VT_ERR_LEN, "qconcat: an affine concat writes u8"); return 1; }
    ab = malloc(sizeof(float) * 2 * (size_t)y_row);
    if (ab == NULL) { snprintf(s->err, VT_ERR_LEN, "qconcat: out of memory"); return 1; }
    for (long c = 0; c < 2 * y_row; c++) ab[c] = (float)f[2 * n + 2 + c];
  }
  qconcat_ctx c = { (const void* const*)s->in, s->out[0], n, y_row, ky, k + 3, k + 3 + n, (const uint8_t (*)[256])table, identity,
                    scale, zero, ab, ab == NULL ? NULL : ab + y_row, y_scale, y_zero, lo, hi };
  vt_parallel(k[0], s->threads, 16, qconcat_rows, &c);
  free(ab);
  return 0;
}

typedef struct { const uint8_t* x; uint8_t* y; const uint8_t* table; } qlut_ctx;

static void qlut_range(const void* p, long i0, long i1) {
  const qlut_ctx* k = p;
  lookup_bytes(k->x + i0, k->y + i0, i1 - i0, k->table);
}

int vt_op_qlut(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 3 + 256 || s->n_floats != 0) { snprintf(s->err, VT_ERR_LEN, "qlut: wrong arity"); return 1; }
  if (k[1] != VT_U8) { snprintf(s->err, VT_ERR_LEN, "qlut: the input must be u8, not kind %ld", (long)k[1]); return 1; }
  if (!valid_kind(s, "qlut", k[2])) return 1;
  uint8_t table[256];
  for (int b = 0; b < 256; b++) {
    if (k[3 + b] < qlo((int)k[2]) || k[3 + b] > qhi((int)k[2])) {
      snprintf(s->err, VT_ERR_LEN, "qlut: table entry %d (%ld) outside the output type", b, (long)k[3 + b]);
      return 1;
    }
    table[b] = (uint8_t)k[3 + b];
  }
  qlut_ctx c = { s->in[0], s->out[0], table };
  vt_parallel(k[0], s->threads, 4096, qlut_range, &c);
  return 0;
}

/* ---- QGATE: one task per pixel band; each image's C gates looked up once per task ---- */

#define QGATE_MAX_CHANNELS 8192

typedef struct { const uint8_t* x; const uint8_t* g; uint8_t* y; long hw, c; const float* gate; float xs, ys; int xz, yz; } qgate_ctx;

static void qgate_pixels(const void* p, long t0, long t1) {
  const qgate_ctx* k = p;
  const long c = k->c;
  const float xs = k->xs, ys = k->ys;
  const int xz = k->xz, yz = k->yz;
  const float lo = (float)(0 - yz), hi = (float)(255 - yz);
  float gates[QGATE_MAX_CHANNELS];
  long image = -1;
  for (long t = t0; t < t1; t++) {
    const long b = t / k->hw;
    if (b != image) {
      for (long ch = 0; ch < c; ch++) gates[ch] = k->gate[k->g[b * c + ch]];
      image = b;
    }
    const uint8_t* restrict x = k->x + t * c;
    uint8_t* restrict y = k->y + t * c;
    for (long ch = 0; ch < c; ch++) {
      const float m = ((float)((int)x[ch] - xz) * xs) * gates[ch];
      y[ch] = (uint8_t)((int)quantized_offset(m, ys, lo, hi) + yz);
    }
  }
}

int vt_op_qgate(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 3 || s->n_floats != 4 + 256) { snprintf(s->err, VT_ERR_LEN, "qgate: wrong arity"); return 1; }
  if (k[2] < 1 || k[2] > QGATE_MAX_CHANNELS) { snprintf(s->err, VT_ERR_LEN, "qgate: %ld channels", (long)k[2]); return 1; }
  float gate[256];
  for (int b = 0; b < 256; b++) gate[b] = (float)s->floats[4 + b];
  const double* f = s->floats;
  qgate_ctx c = { s->in[0], s->in[1], s->out[0], k[1], k[2], gate, (float)f[0], (float)f[2], (int)f[1], (int)f[3] };
  vt_parallel(k[0] * k[1], s->threads, 16, qgate_pixels, &c);
  return 0;
}

/* ---- QAVGPOOL: one task per output row; channel sums in bands, loads contiguous ---- */

typedef struct {
  const void* x; void* y; long n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl; int include_pad, kx, ky; float xs, ys; int xz, yz;
} qavg_ctx;

static void qavgpool_rows(const void* p, long r0, long r1) {
  const qavg_ctx* k = p;
  int32_t acc[QGAP_BAND];
  for (long r = r0; r < r1; r++) {
    const long b = r / k->oh, oy = r % k->oh;
    for (long ox = 0; ox < k->ow; ox++) {
      long y0, y1, x0, x1;
      taps_inside(oy, k->sh, k->pt, 1, k->kh, k->h, &y0, &y1);
      taps_inside(ox, k->sw, k->pl, 1, k->kw, k->w, &x0, &x1);
      const long inside = (y1 - y0) * (x1 - x0);
      const long count = k->include_pad ? k->kh * k->kw : inside;
      const float mult = k->xs / (k->ys * (float)count);
      for (long c0 = 0; c0 < k->c; c0 += QGAP_BAND) {
        const long wdt = k->c - c0 < QGAP_BAND ? k->c - c0 : QGAP_BAND;
        for (long j = 0; j < wdt; j++) acc[j] = 0;
        for (long ty = y0; ty < y1; ty++)
          for (long tx = x0; tx < x1; tx++) {
            const long iy = oy * k->sh - k->pt + ty, ix = ox * k->sw - k->pl + tx;
            const long at = ((b * k->h + iy) * k->w + ix) * k->c + c0;
            if (k->kx == VT_U8) {
              const uint8_t* row = (const uint8_t*)k->x + at;
              for (long j = 0; j < wdt; j++) acc[j] += row[j];
            } else {
              const int8_t* row = (const int8_t*)k->x + at;
              for (long j = 0; j < wdt; j++) acc[j] += row[j];
            }
          }
        const long out = ((b * k->oh + oy) * k->ow + ox) * k->c + c0;
        for (long j = 0; j < wdt; j++) qput(k->y, out + j, k->ky, requantize_1((long)acc[j] - inside * k->xz, mult, k->yz, k->ky));
      }
    }
  }
}

int vt_op_qavgpool(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 15 || s->n_floats != 4) { snprintf(s->err, VT_ERR_LEN, "qavgpool: wrong arity"); return 1; }
  if (!valid_kind(s, "qavgpool", k[13]) || !valid_kind(s, "qavgpool", k[14])) return 1;
  const double* f = s->floats;
  qavg_ctx c = { s->in[0], s->out[0], k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11], (int)k[12],
                 (int)k[13], (int)k[14], (float)f[0], (float)f[2], (int)f[1], (int)f[3] };
  vt_parallel(c.n * c.oh, s->threads, 1, qavgpool_rows, &c);
  return 0;
}
