#include "reference.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

size_t vt_ref_input_floats(const vt_desc* d) {
  if (d->op == VT_OP_CONV2D) return (size_t)d->n * d->cin * d->h * d->w;
  return (size_t)d->batch * d->m * d->k;
}

size_t vt_ref_weight_floats(const vt_desc* d) {
  if (d->op == VT_OP_CONV2D) return (size_t)d->cout * (d->cin / d->groups) * d->kh * d->kw;
  return (size_t)d->batch * d->k * d->nn;
}

size_t vt_ref_output_floats(const vt_desc* d) {
  if (d->op == VT_OP_CONV2D) return (size_t)d->n * d->cout * d->oh * d->ow;
  return (size_t)d->batch * d->m * d->nn;
}

size_t vt_ref_out_channels(const vt_desc* d) { return d->op == VT_OP_CONV2D ? (size_t)d->cout : (size_t)d->nn; }

size_t vt_ref_chanmul_floats(const vt_desc* d) {
  if (d->op == VT_OP_CONV2D) return (size_t)d->n * d->cout;
  return (size_t)d->batch * d->nn;
}

size_t vt_ref_reduction_length(const vt_desc* d) {
  if (d->op == VT_OP_CONV2D) return (size_t)(d->cin / d->groups) * d->kh * d->kw;
  return (size_t)d->k;
}

/* One output element through the epilogue; c = output channel/column, img = batch index. */
static float epilogue(const vt_desc* d, double acc, size_t c, size_t img, size_t idx, const float* bias,
                      const float* residual, const float* chanmul, const float* params) {
  double x = acc;
  int p = 0;
  for (int s = 0; s < d->n_epi; ++s) {
    switch (d->epi[s]) {
      case VT_EPI_BIAS: x += bias[c]; break;
      case VT_EPI_RELU: x = x > 0 ? x : 0; break;
      case VT_EPI_CLIP: { double lo = params[p], hi = params[p + 1]; p += 2; x = x < lo ? lo : (x > hi ? hi : x); break; }
      case VT_EPI_LEAKY_RELU: { double a = params[p++]; x = x > 0 ? x : a * x; break; }
      case VT_EPI_SIGMOID: x = 1.0 / (1.0 + exp(-x)); break;
      case VT_EPI_HARD_SIGMOID: { double a = params[p], b = params[p + 1]; p += 2; x = a * x + b; x = x < 0 ? 0 : (x > 1 ? 1 : x); break; }
      case VT_EPI_HARD_SWISH: { double g = x / 6.0 + 0.5; g = g < 0 ? 0 : (g > 1 ? 1 : g); x = x * g; break; }
      case VT_EPI_SILU: x = x / (1.0 + exp(-x)); break;
      case VT_EPI_TANH: x = tanh(x); break;
      case VT_EPI_GELU: x = 0.5 * x * (1.0 + erf(x / sqrt(2.0))); break;
      case VT_EPI_GELU_TANH: x = 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); break;
      case VT_EPI_RESIDUAL_ADD: x += residual[idx]; break;
      case VT_EPI_CHANNEL_MUL: x *= chanmul[img * vt_ref_out_channels(d) + c]; break;
    }
  }
  return (float)x;
}

/*
 * Each output plane of one (image, channel) accumulates in doubles tap by tap, (ic, ky, kx) in order,
 * across the whole plane: every output element adds the same products in the same order as one
 * element at a time would (so the same bits), but the inner loop runs along a row, which the
 * compiler vectorizes. ResNet-50's 28 layers took 5.7 s element by element, on the path of a fresh
 * tuning pass (bench/RESULTS.md).
 */
static void conv2d(const vt_desc* d, const float* in, const float* w, const float* bias, const float* res,
                   const float* cm, const float* prm, float* out) {
  const int cing = d->cin / d->groups, coutg = d->cout / d->groups;
  double* acc = malloc(sizeof(double) * (size_t)d->oh * d->ow);
  int* ox_lo = malloc(sizeof(int) * (size_t)d->kw);
  int* ox_hi = malloc(sizeof(int) * (size_t)d->kw);
  if (!acc || !ox_lo || !ox_hi) { fprintf(stderr, "out of memory (reference conv)\n"); exit(3); }
  for (int kx = 0; kx < d->kw; ++kx) { /* the output columns whose tap kx lies inside the row */
    int lo = 0, hi = d->ow;
    while (lo < hi && lo * d->stride_w - d->pad_l + kx * d->dil_w < 0) ++lo;
    while (hi > lo && (hi - 1) * d->stride_w - d->pad_l + kx * d->dil_w >= d->w) --hi;
    ox_lo[kx] = lo; ox_hi[kx] = hi;
  }
  for (int n = 0; n < d->n; ++n)
    for (int oc = 0; oc < d->cout; ++oc) {
      const int g = oc / coutg;
      for (size_t i = 0; i < (size_t)d->oh * d->ow; ++i) acc[i] = 0;
      for (int ic = 0; ic < cing; ++ic)
        for (int ky = 0; ky < d->kh; ++ky)
          for (int kx = 0; kx < d->kw; ++kx) {
            const double wv = w[(((size_t)oc * cing + ic) * d->kh + ky) * d->kw + kx];
            for (int oy = 0; oy < d->oh; ++oy) {
              const int iy = oy * d->stride_h - d->pad_t + ky * d->dil_h;
              if (iy < 0 || iy >= d->h) continue;
              const float* row = in + (((size_t)n * d->cin + g * cing + ic) * d->h + iy) * d->w;
              const long shift = (long)kx * d->dil_w - d->pad_l;
              double* a = acc + (size_t)oy * d->ow;
              for (int ox = ox_lo[kx]; ox < ox_hi[kx]; ++ox) a[ox] += (double)row[(long)ox * d->stride_w + shift] * wv;
            }
          }
      for (int oy = 0; oy < d->oh; ++oy)
        for (int ox = 0; ox < d->ow; ++ox) {
          const size_t idx = (((size_t)n * d->cout + oc) * d->oh + oy) * d->ow + ox;
          out[idx] = epilogue(d, acc[(size_t)oy * d->ow + ox], oc, n, idx, bias, res, cm, prm);
        }
    }
  free(acc); free(ox_lo); free(ox_hi);
}

/* dense is batch_matmul with batch 1 and a constant B; transB reads B as [B][N][K]. */
static void matmul(const vt_desc* d, const float* a, const float* b, const float* bias, const float* res,
                   const float* cm, const float* prm, float* out) {
  const int bs = d->op == VT_OP_DENSE ? 1 : d->batch;
  for (int bi = 0; bi < bs; ++bi)
    for (int i = 0; i < d->m; ++i)
      for (int j = 0; j < d->nn; ++j) {
        double acc = 0;
        for (int k = 0; k < d->k; ++k) {
          const float bv = d->trans_b ? b[((size_t)bi * d->nn + j) * d->k + k] : b[((size_t)bi * d->k + k) * d->nn + j];
          acc += (double)a[((size_t)bi * d->m + i) * d->k + k] * bv;
        }
        const size_t idx = ((size_t)bi * d->m + i) * d->nn + j;
        out[idx] = epilogue(d, acc, j, bi, idx, bias, res, cm, prm);
      }
}

void vt_reference(const vt_desc* d, const float* in, const float* w, const float* bias,
                  const float* residual, const float* chanmul, const float* params, float* out) {
  if (d->op == VT_OP_CONV2D) conv2d(d, in, w, bias, residual, chanmul, params, out);
  else matmul(d, in, w, bias, residual, chanmul, params, out);
}
