/*
 * UNARY: y = f(x) elementwise over float32. ints [fn, count, fixN, fixC, fixHW, fixV] (fixV > 0: the
 * tensor is NCHW[V]c and its padded lanes are re-zeroed afterwards, since f(0) may be nonzero),
 * floats [alpha, beta]. The exp-family functions use the same vector math as the generated kernels'
 * epilogues (vt_simd.h), so a fused and an unfused activation agree.
 */
#include <math.h>
#include <stdio.h>
#include "vt_rt.h"
#include "../vt_simd.h"

/* function codes: enum vt_unary_fn (vt_abi.h) */

/* The widest vector family this build has (vt_simd.h). */
#define W VT_W
#define V(name) VTW(name)
typedef vtw_t vec;

/* One vector through a vectorised function; returns 0 if fn has no vector form. */
static inline int vec_apply(int fn, const float* x, float* y, float a, float b) {
  vec v = V(load)(x), r;
  switch (fn) {
    case U_RELU: r = V(max)(v, V(zero)()); break;
    case U_CLIP: r = V(clamp)(v, a, b); break;
    case U_LEAKY_RELU: r = V(leaky_relu)(v, a); break;
    case U_SIGMOID: r = V(sigmoid)(v); break;
    case U_HARD_SIGMOID: r = V(hard_sigmoid)(v, a, b); break;
    case U_HARD_SWISH: r = V(hard_swish)(v); break;
    case U_SILU: r = V(mul)(v, V(sigmoid)(v)); break;
    case U_TANH: r = V(tanh)(v); break;
    case U_GELU: r = V(gelu)(v); break;
    case U_GELU_TANH: r = V(gelu_tanh)(v); break;
    case U_ERF: r = V(erf)(v); break;
    case U_EXP: r = V(exp)(v); break;
    case U_NEG: r = V(sub)(V(zero)(), v); break;
    default: return 0;
  }
  V(store)(y, r);
  return 1;
}

static inline float scalar(int fn, float x, float a, float b) {
  switch (fn) {
    case U_RELU: return x > 0.0f ? x : 0.0f;
    case U_CLIP: return x < a ? a : (x > b ? b : x);
    case U_LEAKY_RELU: return x >= 0.0f ? x : a * x;
    case U_SIGMOID: return vt1_sigmoid(x);
    case U_HARD_SIGMOID: return vt1_hard_sigmoid(x, a, b);
    case U_HARD_SWISH: return vt1_hard_swish(x);
    case U_SILU: return x * vt1_sigmoid(x);
    case U_TANH: return vt1_tanh(x);
    case U_GELU: return vt1_gelu(x);
    case U_GELU_TANH: return vt1_gelu_tanh(x);
    case U_ERF: return vt1_erf(x);
    case U_EXP: return vt1_exp(x);
    case U_LOG: return logf(x);
    case U_SQRT: return sqrtf(x);
    case U_NEG: return -x;
    case U_ABS: return fabsf(x);
    case U_RECIPROCAL: return 1.0f / x;
    case U_FLOOR: return floorf(x);
    case U_CEIL: return ceilf(x);
    case U_ROUND: return nearbyintf(x);
    case U_SIN: return sinf(x);
    case U_COS: return cosf(x);
    case U_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    case U_ELU: return x >= 0.0f ? x : a * (expf(x) - 1.0f);
    case U_SELU: return x > 0.0f ? b * x : b * (a * (expf(x) - 1.0f));
    case U_SIGN: return (float)((x > 0.0f) - (x < 0.0f));
    default: return x;
  }
}

typedef struct { const float* in; float* out; int fn; float a, b; long count; } un_ctx;

#define BLOCK 4096

static void un_blocks(const void* p, long bb, long be) {
  const un_ctx* k = p;
  long i = bb * BLOCK, end = be * BLOCK < k->count ? be * BLOCK : k->count;
  for (; i + W <= end; i += W) {
    if (!vec_apply(k->fn, k->in + i, k->out + i, k->a, k->b)) break;
  }
  for (; i < end; i++) k->out[i] = scalar(k->fn, k->in[i], k->a, k->b);
}

int vt_op_unary(const vt_step* s) {
  const int64_t* k = s->ints;
  un_ctx c = { s->in[0], s->out[0], (int)k[0], s->n_floats > 0 ? (float)s->floats[0] : 0.0f,
               s->n_floats > 1 ? (float)s->floats[1] : 0.0f, k[1] };
  if (c.fn < 0 || c.fn >= U_COUNT) { snprintf(s->err, VT_ERR_LEN, "unary: unknown function %d", c.fn); return 1; }
  vt_parallel((c.count + BLOCK - 1) / BLOCK, s->threads, 4, un_blocks, &c);
  if (k[5] > 0) vt_zero_pad_lanes(c.out, k[2], k[3], k[4], k[5]);
  return 0;
}
