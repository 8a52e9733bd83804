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
 * QADD       in [a, b], out [y], all the same shape and layout; ints [count, a kind, b kind, y kind];
 *            floats [a_scale, a_zero, b_scale, b_zero, y_scale, y_zero]:
 *            y = quantize(fl32(dequantize(a) + dequantize(b))).
 * QMAXPOOL   in [x] NHWC, out [y] NHWC; ints [N, C, H, W, OH, OW, kh, kw, sh, sw, pt, pl, dh, dw,
 *            x kind, y kind]; floats [mult, x_zero, y_zero]: the window's max over the taps inside
 *            the input, requantized as max - x_zero.
 * QGLOBAL_AVGPOOL in [x] NHWC, out [y] [N][C]; ints [N, C, HW, x kind, y kind]; floats [mult,
 *            x_zero, y_zero], mult = fl32(x_scale / fl32(y_scale · HW)): requantize(Σ (x - x_zero)).
 */
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include <stdio.h>
#include "vt_rt.h"

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

static inline int quantize_1(float x, float scale, int zero, int kind) { return saturate_round(x / scale, zero, kind); }

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

static void quantize_range(const void* p, long t0, long t1) {
  const conv_ctx* k = p;
  const float* x = k->in;
  for (long t = t0; t < t1; t++) {
    const long b = t / k->hw, px = t % k->hw;
    for (long ch = 0; ch < k->c; ch++) qput(k->out, int_at(k, b, ch, px), (int)k->kind, quantize_1(x[float_at(k, b, ch, px)], k->scale, k->zero, (int)k->kind));
  }
}

static void dequantize_range(const void* p, long t0, long t1) {
  const conv_ctx* k = p;
  float* x = k->out;
  const long cpad = (k->c + k->v - 1) / k->v * k->v;
  for (long t = t0; t < t1; t++) {
    const long b = t / k->hw, px = t % k->hw;
    for (long ch = 0; ch < k->c; ch++) x[float_at(k, b, ch, px)] = (float)(qget(k->in, int_at(k, b, ch, px), (int)k->kind) - k->zero) * k->scale;
    for (long ch = k->c; ch < cpad; ch++) x[float_at(k, b, ch, px)] = 0.0f;
  }
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

typedef struct { const void *a, *b; void* y; int ka, kb, ky; float as, bs, ys; int az, bz, yz; } qadd_ctx;

static void qadd_range(const void* p, long i0, long i1) {
  const qadd_ctx* k = p;
  for (long i = i0; i < i1; i++) {
    const float da = (float)(qget(k->a, i, k->ka) - k->az) * k->as;
    const float db = (float)(qget(k->b, i, k->kb) - k->bz) * k->bs;
    const float sum = da + db;
    qput(k->y, i, k->ky, quantize_1(sum, k->ys, k->yz, k->ky));
  }
}

int vt_op_qadd(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 4 || s->n_floats != 6) { snprintf(s->err, VT_ERR_LEN, "qadd: wrong arity"); return 1; }
  if (!valid_kind(s, "qadd", k[1]) || !valid_kind(s, "qadd", k[2]) || !valid_kind(s, "qadd", k[3])) return 1;
  const double* f = s->floats;
  qadd_ctx c = { s->in[0], s->in[1], s->out[0], (int)k[1], (int)k[2], (int)k[3],
                 (float)f[0], (float)f[2], (float)f[4], (int)f[1], (int)f[3], (int)f[5] };
  vt_parallel(k[0], s->threads, 4096, qadd_range, &c);
  return 0;
}

/* ---- QMAXPOOL: one task per output row ---- */

typedef struct { const void* x; void* y; long n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw; int kx, ky; float mult; int xz, yz; } qpool_ctx;

static void qmaxpool_rows(const void* p, long r0, long r1) {
  const qpool_ctx* k = p;
  for (long r = r0; r < r1; r++) {
    const long b = r / k->oh, oy = r % k->oh;
    for (long ox = 0; ox < k->ow; ox++)
      for (long ch = 0; ch < k->c; ch++) {
        int best = -1000, any = 0;
        for (long ty = 0; ty < k->kh; ty++) {
          const long iy = oy * k->sh - k->pt + ty * k->dh;
          if (iy < 0 || iy >= k->h) continue;
          for (long tx = 0; tx < k->kw; tx++) {
            const long ix = ox * k->sw - k->pl + tx * k->dw;
            if (ix < 0 || ix >= k->w) continue;
            const int v = qget(k->x, ((b * k->h + iy) * k->w + ix) * k->c + ch, k->kx);
            if (!any || v > best) best = v;
            any = 1;
          }
        }
        qput(k->y, ((b * k->oh + oy) * k->ow + ox) * k->c + ch, k->ky, requantize_1(any ? best - k->xz : 0, k->mult, k->yz, k->ky));
      }
  }
}

int vt_op_qmaxpool(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 16 || s->n_floats != 3) { snprintf(s->err, VT_ERR_LEN, "qmaxpool: wrong arity"); return 1; }
  if (!valid_kind(s, "qmaxpool", k[14]) || !valid_kind(s, "qmaxpool", k[15])) return 1;
  qpool_ctx c = { s->in[0], s->out[0], k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11], k[12], k[13],
                  (int)k[14], (int)k[15], (float)s->floats[0], (int)s->floats[1], (int)s->floats[2] };
  vt_parallel(c.n * c.oh, s->threads, 4, qmaxpool_rows, &c);
  return 0;
}

/* ---- QGLOBAL_AVGPOOL: one task per image ---- */

typedef struct { const void* x; void* y; long n, c, hw; int kx, ky; float mult; int xz, yz; } qgap_ctx;

static void qgap_images(const void* p, long b0, long b1) {
  const qgap_ctx* k = p;
  for (long b = b0; b < b1; b++)
    for (long ch = 0; ch < k->c; ch++) {
      long acc = 0;
      for (long i = 0; i < k->hw; i++) acc += qget(k->x, (b * k->hw + i) * k->c + ch, k->kx) - k->xz;
      qput(k->y, b * k->c + ch, k->ky, requantize_1(acc, k->mult, k->yz, k->ky));
    }
}

int vt_op_qglobal_avgpool(const vt_step* s) {
  const int64_t* k = s->ints;
  if (s->n_ints != 5 || s->n_floats != 3) { snprintf(s->err, VT_ERR_LEN, "qglobal_avgpool: wrong arity"); return 1; }
  if (!valid_kind(s, "qglobal_avgpool", k[3]) || !valid_kind(s, "qglobal_avgpool", k[4])) return 1;
  qgap_ctx c = { s->in[0], s->out[0], k[0], k[1], k[2], (int)k[3], (int)k[4], (float)s->floats[0], (int)s->floats[1], (int)s->floats[2] };
  vt_parallel(c.n, s->threads, 1, qgap_images, &c);
  return 0;
}
