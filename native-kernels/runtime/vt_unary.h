/*
 * The elementwise unary functions (enum vt_unary_fn, vt_abi.h) in one place, for the standalone
 * UNARY op (ops_unary.c) and the ELEMENTWISE_CHAIN's unary steps (ops_chain.c), so that a fused and
 * an unfused activation compute the same thing. The exp-family functions use the generated kernels'
 * epilogue math (vt_simd.h). vt_unary_w is the vector form at the build's widest width, for the
 * functions vt_unary_vectorized accepts; vt_unary_1 is the scalar form of every function, and
 * agrees with the vector form on every input (a tail element gets what a body element would).
 *
 * Clip follows ONNX: min(max(x, lo), hi), a NaN stays NaN, and lo > hi gives hi. The operand order
 * matters: x86 max/min return their second operand when either is NaN, so x goes second.
 */
#ifndef VT_UNARY_H
#define VT_UNARY_H
#include <math.h>
#include "vt_rt.h"
#include "../vt_simd.h"

static inline int vt_unary_vectorized(long fn) {
  switch (fn) {
    case U_RELU: case U_CLIP: case U_LEAKY_RELU: case U_SIGMOID: case U_HARD_SIGMOID: case U_HARD_SWISH: case U_SILU:
    case U_TANH: case U_GELU: case U_GELU_TANH: case U_ERF: case U_EXP: case U_NEG:
      return 1;
    default:
      return 0;
  }
}

/* fn must be one vt_unary_vectorized accepts (anything else comes back unchanged). */
static inline vtw_t vt_unary_w(long fn, vtw_t x, float a, float b) {
  switch (fn) {
    case U_RELU: return VTW(max)(x, VTW(zero)());
    case U_CLIP: return VTW(min)(VTW(set1)(b), VTW(max)(VTW(set1)(a), x));
    case U_LEAKY_RELU: return VTW(leaky_relu)(x, a);
    case U_SIGMOID: return VTW(sigmoid)(x);
    case U_HARD_SIGMOID: return VTW(hard_sigmoid)(x, a, b);
    case U_HARD_SWISH: return VTW(hard_swish)(x);
    case U_SILU: return VTW(mul)(x, VTW(sigmoid)(x));
    case U_TANH: return VTW(tanh)(x);
    case U_GELU: return VTW(gelu)(x);
    case U_GELU_TANH: return VTW(gelu_tanh)(x);
    case U_ERF: return VTW(erf)(x);
    case U_EXP: return VTW(exp)(x);
    case U_NEG: return VTW(sub)(VTW(zero)(), x);
    default: return x;
  }
}

static inline float vt_unary_1(long fn, float x, float a, float b) {
  switch (fn) {
    case U_RELU: return x > 0.0f ? x : 0.0f;
    case U_CLIP: return vt1_min(b, vt1_max(a, x));
    case U_LEAKY_RELU: return vt1_leaky_relu(x, a);
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
#endif
