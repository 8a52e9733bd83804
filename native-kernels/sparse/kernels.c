/*
 * The vector inner loops of sparse training: dot products (dense and over a sparse input),
 * axpy updates, the Adam step over one parameter row, activations. One body, three widths
 * (VS_W from vs.h: AVX-512, AVX2 + FMA or scalar).
 */
#include <math.h>
#include "vs.h"

float vs_dot(const float* a, const float* b, int n) {
  int i = 0;
#if VS_W > 1
  vs_v s0 = VS_(zero)(), s1 = VS_(zero)(), s2 = VS_(zero)(), s3 = VS_(zero)();
  for (; i + 4 * VS_W <= n; i += 4 * VS_W) {
    s0 = VS_(fma)(VS_(load)(a + i), VS_(load)(b + i), s0);
    s1 = VS_(fma)(VS_(load)(a + i + VS_W), VS_(load)(b + i + VS_W), s1);
    s2 = VS_(fma)(VS_(load)(a + i + 2 * VS_W), VS_(load)(b + i + 2 * VS_W), s2);
    s3 = VS_(fma)(VS_(load)(a + i + 3 * VS_W), VS_(load)(b + i + 3 * VS_W), s3);
  }
  for (; i + VS_W <= n; i += VS_W) s0 = VS_(fma)(VS_(load)(a + i), VS_(load)(b + i), s0);
  float s = vs_hsum(VS_(add)(VS_(add)(s0, s1), VS_(add)(s2, s3)));
#else
  float s = 0.0f;
#endif
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

float vs_dot_sparse(const float* w, const int32_t* idx, const float* val, int nnz) {
  float s0 = 0.0f, s1 = 0.0f;
  int i = 0;
  for (; i + 1 < nnz; i += 2) { s0 += w[idx[i]] * val[i]; s1 += w[idx[i + 1]] * val[i + 1]; }
  if (i < nnz) s0 += w[idx[i]] * val[i];
  return s0 + s1;
}

/* y += alpha * x */
void vs_axpy(float alpha, const float* x, float* y, int n) {
  int i = 0;
#if VS_W > 1
  vs_v a = VS_(set1)(alpha);
  for (; i + 2 * VS_W <= n; i += 2 * VS_W) {
    VS_(store)(y + i, VS_(fma)(a, VS_(load)(x + i), VS_(load)(y + i)));
    VS_(store)(y + i + VS_W, VS_(fma)(a, VS_(load)(x + i + VS_W), VS_(load)(y + i + VS_W)));
  }
  for (; i + VS_W <= n; i += VS_W) VS_(store)(y + i, VS_(fma)(a, VS_(load)(x + i), VS_(load)(y + i)));
#endif
  for (; i < n; i++) y[i] += alpha * x[i];
}

/* y[k] += alpha * x[idx[k]]: the input-gradient of a neuron over a sparse input */
void vs_axpy_sparse(float alpha, const float* x, const int32_t* idx, float* y, int nnz) {
  for (int k = 0; k < nnz; k++) y[k] += alpha * x[idx[k]];
}

/* y[idx[k]] += alpha * val[k]: a neuron's weight gradient over a sparse input */
void vs_scatter_axpy(float alpha, const float* val, const int32_t* idx, float* y, int nnz) {
  for (int k = 0; k < nnz; k++) y[idx[k]] += alpha * val[k];
}

/*
 * Adam on one row, PyTorch's arithmetic (torch.optim.Adam, single-tensor path):
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  w -= step_size * m / (sqrt(v)/sqrt(bc2) + eps)
 * with step_size = lr / bc1. The gradient is consumed (zeroed) for the next batch.
 */
void vs_adam_row(float* w, float* g, float* m, float* v, int n, float step_size, float bc2_sqrt, const vs_train_opts* o) {
  const float b1 = o->beta1, b2 = o->beta2, c1 = 1.0f - o->beta1, c2 = 1.0f - o->beta2, eps = o->eps;
  int i = 0;
#if VS_W > 1
  vs_v vb1 = VS_(set1)(b1), vb2 = VS_(set1)(b2), vc1 = VS_(set1)(c1), vc2 = VS_(set1)(c2);
  vs_v veps = VS_(set1)(eps), vss = VS_(set1)(step_size), vbc = VS_(set1)(bc2_sqrt), zero = VS_(zero)();
  for (; i + VS_W <= n; i += VS_W) {
    vs_v gi = VS_(load)(g + i);
    vs_v mi = VS_(fma)(vb1, VS_(load)(m + i), VS_(mul)(vc1, gi));
    vs_v vi = VS_(fma)(vb2, VS_(load)(v + i), VS_(mul)(vc2, VS_(mul)(gi, gi)));
    vs_v denom = VS_(add)(VS_(div)(vs_sqrt(vi), vbc), veps);
    VS_(store)(w + i, VS_(sub)(VS_(load)(w + i), VS_(mul)(vss, VS_(div)(mi, denom))));
    VS_(store)(m + i, mi);
    VS_(store)(v + i, vi);
    VS_(store)(g + i, zero);
  }
#endif
  for (; i < n; i++) {
    float gi = g[i];
    float mi = b1 * m[i] + c1 * gi;
    float vi = b2 * v[i] + c2 * (gi * gi);
    float denom = sqrtf(vi) / bc2_sqrt + eps;
    w[i] -= step_size * (mi / denom);
    m[i] = mi;
    v[i] = vi;
    g[i] = 0.0f;
  }
}

float vs_max(const float* z, int n) {
  float mx = -INFINITY;
  int i = 0;
#if VS_W > 1
  vs_v vm = VS_(set1)(-INFINITY);
  for (; i + VS_W <= n; i += VS_W) vm = VS_(max)(vm, VS_(load)(z + i));
  float lanes[VS_W];
  VS_(store)(lanes, vm);
  for (int k = 0; k < VS_W; k++) mx = lanes[k] > mx ? lanes[k] : mx;
#endif
  for (; i < n; i++) mx = z[i] > mx ? z[i] : mx;
  return mx;
}

/* z = exp(z - shift) */
void vs_exp_shift(float* z, int n, float shift) {
  int i = 0;
#if VS_W > 1
  vs_v s = VS_(set1)(shift);
  for (; i + VS_W <= n; i += VS_W) VS_(store)(z + i, VS_(exp)(VS_(sub)(VS_(load)(z + i), s)));
#endif
  for (; i < n; i++) z[i] = expf(z[i] - shift);
}

/* Hidden activations in place (softmax and sigmoid outputs are handled by the loss). */
void vs_activate(float* z, int n, int act) {
  int i = 0;
  if (act == VS_ACT_RELU) {
#if VS_W > 1
    vs_v zero = VS_(zero)();
    for (; i + VS_W <= n; i += VS_W) VS_(store)(z + i, VS_(max)(VS_(load)(z + i), zero));
#endif
    for (; i < n; i++) z[i] = z[i] > 0.0f ? z[i] : 0.0f;
  } else if (act == VS_ACT_TANH) {
    for (; i < n; i++) z[i] = tanhf(z[i]);
  } else if (act == VS_ACT_SIGMOID) {
    for (; i < n; i++) z[i] = 1.0f / (1.0f + expf(-z[i]));
  }
}
