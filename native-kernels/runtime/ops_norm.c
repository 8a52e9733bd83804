/*
 * Normalisations.
 * SOFTMAX ints [outer, D, inner, log]: softmax (log=1: log-softmax) over D of an [outer][D][inner]
 *   view, max-subtracted (numerically stable). ONNX axis semantics (opset >= 13: one axis; older
 *   opsets' flatten-to-2-D: D = product of the trailing dims, inner = 1) are the translator's job.
 * LAYERNORM ints [outer, D], floats [epsilon]; in [x, gamma | NULL, beta | NULL] with gamma/beta
 *   of D floats (the translator materialises broadcast scales): y = (x - mean) / sqrt(var + eps).
 * CHANNEL_AFFINE ints [N, C, HW, V]; in [x, a, b] of ceil(C/V)*V floats (zero-padded):
 *   y = x * a[c] + b[c] on NCHW[V]c (V = 1: plain NCHW). Inference BatchNormalization folded by the
 *   translator: a = scale / sqrt(var + eps), b = B - mean * a.
 */
#include <math.h>
#include "vt_rt.h"
#include "../vt_simd.h"

/*
 * Row reductions: VT_W lanes at a time (the widest vector this build has, vt_simd.h), the tail
 * (or the whole row) scalar. max(v, acc) keeps acc when v is NaN, as the scalar `x > m ? x : m`
 * does. Sums use VT_W float partial sums (a few ulp over BERT's d = 1024) and add the tail in double.
 */
static inline float row_max(const float* x, long d) {
  float m = -INFINITY;
  long i = 0;
#if VT_W > 1
  vtw_t mx = VTW(set1)(-INFINITY);
  for (; i + VT_W <= d; i += VT_W) mx = VTW(max)(VTW(load)(x + i), mx);
  m = VTW(reduce_max)(mx);
#endif
  for (; i < d; i++) m = x[i] > m ? x[i] : m;
  return m;
}

static inline double row_sum(const float* x, long d) {
  double sum = 0.0;
  long i = 0;
#if VT_W > 1
  vtw_t acc = VTW(zero)();
  for (; i + VT_W <= d; i += VT_W) acc = VTW(add)(acc, VTW(load)(x + i));
  sum = (double)VTW(reduce_add)(acc);
#endif
  for (; i < d; i++) sum += x[i];
  return sum;
}

/* sum over the row of (x - mean)^2 */
static inline double row_sq_dev(const float* x, long d, float mean) {
  double sq = 0.0;
  long i = 0;
#if VT_W > 1
  vtw_t acc = VTW(zero)(), mv = VTW(set1)(mean);
  for (; i + VT_W <= d; i += VT_W) { vtw_t t = VTW(sub)(VTW(load)(x + i), mv); acc = VTW(fma)(t, t, acc); }
  sq = (double)VTW(reduce_add)(acc);
#endif
  for (; i < d; i++) { float t = x[i] - mean; sq += (double)t * t; }
  return sq;
}

typedef struct { const float* in; float* out; long d, inner; int log; } sm_ctx;

static void softmax_rows(const void* p, long b, long e) {
  const sm_ctx* k = p;
  const long d = k->d;
  for (long r = b; r < e; r++) {
    const float* x = k->in + r * d;
    float* y = k->out + r * d;
    const float m = row_max(x, d);
    float sum = 0.0f;
    long i = 0;
#if VT_W > 1
    vtw_t acc = VTW(zero)(), mv = VTW(set1)(m);
    for (; i + VT_W <= d; i += VT_W) {
      vtw_t v = VTW(sub)(VTW(load)(x + i), mv);
      if (k->log) acc = VTW(add)(acc, VTW(exp)(v));
      else { vtw_t ex = VTW(exp)(v); VTW(store)(y + i, ex); acc = VTW(add)(acc, ex); }
    }
    sum = VTW(reduce_add)(acc);
#endif
    for (; i < d; i++) {
      float ex = vt1_exp(x[i] - m);
      if (!k->log) y[i] = ex;
      sum += ex;
    }
    if (k->log) {
      float ls = logf(sum);
      for (long j = 0; j < d; j++) y[j] = x[j] - m - ls;
    } else {
      float inv = 1.0f / sum;
      for (long j = 0; j < d; j++) y[j] *= inv;
    }
  }
}

/* inner > 1: reduce along a strided axis, one (outer, inner) column at a time. */
static void softmax_columns(const void* p, long b, long e) {
  const sm_ctx* k = p;
  for (long t = b; t < e; t++) {
    long o = t / k->inner, q = t % k->inner;
    const float* x = k->in + o * k->d * k->inner + q;
    float* y = k->out + o * k->d * k->inner + q;
    float m = -INFINITY, sum = 0.0f;
    for (long i = 0; i < k->d; i++) m = x[i * k->inner] > m ? x[i * k->inner] : m;
    for (long i = 0; i < k->d; i++) sum += vt1_exp(x[i * k->inner] - m);
    float ls = logf(sum), inv = 1.0f / sum;
    for (long i = 0; i < k->d; i++) {
      float v = x[i * k->inner] - m;
      y[i * k->inner] = k->log ? v - ls : vt1_exp(v) * inv;
    }
  }
}

int vt_op_softmax(const vt_step* s) {
  const int64_t* k = s->ints;
  sm_ctx c = { s->in[0], s->out[0], k[1], k[2], (int)k[3] };
  if (c.inner == 1) vt_parallel(k[0], s->threads, 1 + 4096 / (c.d + 1), softmax_rows, &c);
  else vt_parallel(k[0] * c.inner, s->threads, 64, softmax_columns, &c);
  return 0;
}

typedef struct { const float* in; float* out; const float* g; const float* b; long d; float eps; } ln_ctx;

static void ln_rows(const void* p, long b, long e) {
  const ln_ctx* k = p;
  const long d = k->d;
  for (long r = b; r < e; r++) {
    const float* x = k->in + r * d;
    float* y = k->out + r * d;
    float mean = (float)(row_sum(x, d) / (double)d);
    double sq = row_sq_dev(x, d, mean);
    float inv = 1.0f / sqrtf((float)(sq / (double)d) + k->eps);
    for (long i = 0; i < d; i++) {
      float v = (x[i] - mean) * inv;
      if (k->g) v *= k->g[i];
      if (k->b) v += k->b[i];
      y[i] = v;
    }
  }
}

int vt_op_layernorm(const vt_step* s) {
  const int64_t* k = s->ints;
  ln_ctx c = { s->in[0], s->out[0], s->in[1], s->in[2], k[1], (float)s->floats[0] };
  vt_parallel(k[0], s->threads, 1 + 4096 / (c.d + 1), ln_rows, &c);
  return 0;
}

typedef struct { const float* in; float* out; const float* a; const float* b; long cb, hw, v; } af_ctx;

static void affine_planes(const void* p, long b, long e) {
  const af_ctx* k = p;
  for (long t = b; t < e; t++) {
    long cb = t % k->cb;
    const float* a = k->a + cb * k->v;
    const float* bb = k->b + cb * k->v;
    const float* x = k->in + t * k->hw * k->v;
    float* y = k->out + t * k->hw * k->v;
    for (long q = 0; q < k->hw; q++)
      for (long l = 0; l < k->v; l++) y[q * k->v + l] = x[q * k->v + l] * a[l] + bb[l];
  }
}

int vt_op_channel_affine(const vt_step* s) {
  const int64_t* k = s->ints;
  long v = k[3], cb = (k[1] + v - 1) / v;
  af_ctx c = { s->in[0], s->out[0], s->in[1], s->in[2], cb, k[2], v };
  vt_parallel(k[0] * cb, s->threads, 1 + 4096 / (c.hw * v + 1), affine_planes, &c);
  return 0;
}
