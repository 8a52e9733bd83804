/*
 * Broadcasting elementwise ops.
 * BINARY ints [fn, rank, dims x rank, a strides x rank, b strides x rank, fixN, fixC, fixHW, fixV]
 *   Output contiguous with `dims`; operand strides in elements (0 on a broadcast dimension). The
 *   translator coalesces dimensions first, so the innermost loop is as long as the broadcast allows.
 *   fn 0 add, 1 sub, 2 mul, 3 div, 4 pow, 5 max, 6 min, 7 fmod, 8 prelu(a, slope b) on float32;
 *   9 equal, 10 less, 11 greater, 12 less_or_equal, 13 greater_or_equal write bool (uint8).
 *   fixV > 0: NCHW[V]c output whose padded lanes are re-zeroed.
 * BINARY_CHANNEL ints [fn, N, CB, HW, V, gate_has_batch, C, reversed]: a is NCHW[V]c, b a per-channel
 *   gate [N or 1][CB*V] (squeeze-excite, channel bias, a constant); reversed = 1 computes b (fn) a.
 *   Vector path for V = 8 and 16 (the gate's lanes held in registers).
 * WHERE ints [rank, dims, cond strides, x strides, y strides, element bytes]: cond is bool (uint8).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "vt_rt.h"
#include "../vt_simd.h"

#define MAX_RANK 8
/* function codes: enum vt_binary_fn (vt_abi.h) */

static inline float apply(int fn, float a, float b) {
  switch (fn) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return powf(a, b);
    case B_MAX: return a > b ? a : b;
    case B_MIN: return a < b ? a : b;
    case B_MOD: return fmodf(a, b);
    case B_PRELU: return a < 0.0f ? a * b : a;
    default: return 0.0f;
  }
}

static inline unsigned char compare(int fn, float a, float b) {
  switch (fn) {
    case B_EQUAL: return a == b;
    case B_LESS: return a < b;
    case B_GREATER: return a > b;
    case B_LESS_OR_EQUAL: return a <= b;
    default: return a >= b;
  }
}

/* Inner loops, specialised for the stride patterns broadcasting produces so they vectorise. */
#define ROW_LOOP(OPEXPR)                                                                    \
  if (sa == 1 && sb == 1) for (long i = 0; i < n; i++) { float x = a[i], y = b[i]; o[i] = OPEXPR; } \
  else if (sa == 1 && sb == 0) { float y = b[0]; for (long i = 0; i < n; i++) { float x = a[i]; o[i] = OPEXPR; } } \
  else if (sa == 0 && sb == 1) { float x = a[0]; for (long i = 0; i < n; i++) { float y = b[i]; o[i] = OPEXPR; } } \
  else for (long i = 0; i < n; i++) { float x = a[i * sa], y = b[i * sb]; o[i] = OPEXPR; }

static void row(int fn, const float* a, long sa, const float* b, long sb, float* o, long n) {
  switch (fn) {
    case B_ADD: ROW_LOOP(x + y) break;
    case B_SUB: ROW_LOOP(x - y) break;
    case B_MUL: ROW_LOOP(x * y) break;
    case B_DIV: ROW_LOOP(x / y) break;
    case B_MAX: ROW_LOOP(x > y ? x : y) break;
    case B_MIN: ROW_LOOP(x < y ? x : y) break;
    default: for (long i = 0; i < n; i++) o[i] = apply(fn, a[i * sa], b[i * sb]);
  }
}

typedef struct {
  const float* a; const float* b; void* out; int fn, rank;
  const int64_t *dims, *sa, *sb;
} bin_ctx;

static void bin_rows(const void* p, long rb, long re) {
  const bin_ctx* k = p;
  const int r = k->rank;
  const long inner = k->dims[r - 1];
  long idx[MAX_RANK] = { 0 };
  long rest = rb, ao = 0, bo = 0;
  for (int d = r - 2; d >= 0; d--) { idx[d] = rest % k->dims[d]; rest /= k->dims[d]; ao += idx[d] * k->sa[d]; bo += idx[d] * k->sb[d]; }
  for (long t = rb; t < re; t++) {
    if (k->fn < B_EQUAL) {
      row(k->fn, k->a + ao, k->sa[r - 1], k->b + bo, k->sb[r - 1], (float*)k->out + t * inner, inner);
    } else {
      unsigned char* o = (unsigned char*)k->out + t * inner;
      for (long i = 0; i < inner; i++) o[i] = compare(k->fn, k->a[ao + i * k->sa[r - 1]], k->b[bo + i * k->sb[r - 1]]);
    }
    for (int d = r - 2; d >= 0; d--) {
      idx[d]++; ao += k->sa[d]; bo += k->sb[d];
      if (idx[d] < k->dims[d]) break;
      ao -= idx[d] * k->sa[d]; bo -= idx[d] * k->sb[d]; idx[d] = 0;
    }
  }
}

int vt_op_binary(const vt_step* s) {
  const int64_t* k = s->ints;
  int fn = (int)k[0], rank = (int)k[1];
  if (fn < 0 || fn >= B_COUNT || rank < 1 || rank > MAX_RANK) { snprintf(s->err, VT_ERR_LEN, "binary: bad fn %d or rank %d", fn, rank); return 1; }
  bin_ctx c = { s->in[0], s->in[1], s->out[0], fn, rank, k + 2, k + 2 + rank, k + 2 + 2 * rank };
  long rows = 1;
  for (int d = 0; d < rank - 1; d++) rows *= k[2 + d];
  long inner = k[2 + rank - 1];
  long grain = inner >= 4096 ? 1 : 4096 / (inner > 0 ? inner : 1);
  vt_parallel(rows, s->threads, grain, bin_rows, &c);
  const int64_t* fix = k + 2 + 3 * rank;
  if (fix[3] > 0) vt_zero_pad_lanes(s->out[0], fix[0], fix[1], fix[2], fix[3]);
  return 0;
}

typedef struct { const float* a; const float* g; float* out; int fn; long cb, hw, v, gate_batch; int reversed; } ch_ctx;

/* add sub mul div max min: the channel binary's vector paths; pow (between div and max in the enum) stays scalar. */
static inline int has_vector_form(int fn) { return fn <= B_MIN && fn != B_POW; }

#if defined(__AVX2__) && defined(__FMA__)
#define CH_W 8
#define CH(name) vt8_##name
#define CH_BIN(FN, X, Y) ((FN) == B_ADD ? CH(add)(X, Y) : (FN) == B_SUB ? CH(sub)(X, Y) : (FN) == B_MUL ? CH(mul)(X, Y) \
  : (FN) == B_DIV ? CH(div)(X, Y) : (FN) == B_MAX ? CH(max)(X, Y) : CH(min)(X, Y))
/* One plane of NCHW[V]c with V a multiple of 8: the gate's V lanes in registers, 8 floats per op. */
static void ch_plane_vec(const ch_ctx* k, const float* a, const float* gate, float* o) {
  vt8_t g[2] = { CH(load)(gate), k->v == 16 ? CH(load)(gate + 8) : CH(zero)() };
  const long n = k->hw * k->v;
  for (long i = 0; i < n; i += CH_W) {
    vt8_t x = CH(load)(a + i), y = g[(i % k->v) / CH_W];
    CH(store)(o + i, k->reversed ? CH_BIN(k->fn, y, x) : CH_BIN(k->fn, x, y));
  }
}
#endif

#if defined(__AVX512F__)
/*
 * One plane of NCHW16c: the gate's 16 lanes are one register and each pixel one load, op and
 * store; the op is chosen once per plane (a loop per op), not per vector as in ch_plane_vec.
 */
#define CH16_LOOP(EXPR) \
  for (long q = 0; q < hw; q++) { const vt16_t x = vt16_load(a + q * 16); vt16_store(o + q * 16, EXPR); } \
  return
static void ch_plane16(const ch_ctx* k, const float* a, const float* gate, float* o) {
  const vt16_t g = vt16_load(gate);
  const long hw = k->hw;
  switch (k->fn) {
    case B_ADD: CH16_LOOP(vt16_add(x, g)); /* commutative, NaNs included */
    case B_MUL: CH16_LOOP(vt16_mul(x, g));
    case B_MAX: if (k->reversed) { CH16_LOOP(vt16_max(g, x)); } CH16_LOOP(vt16_max(x, g)); /* operand order decides NaNs */
    case B_MIN: if (k->reversed) { CH16_LOOP(vt16_min(g, x)); } CH16_LOOP(vt16_min(x, g));
    case B_SUB: if (k->reversed) { CH16_LOOP(vt16_sub(g, x)); } CH16_LOOP(vt16_sub(x, g));
    default: if (k->reversed) { CH16_LOOP(vt16_div(g, x)); } CH16_LOOP(vt16_div(x, g)); /* B_DIV: has_vector_form admits no other */
  }
}
#undef CH16_LOOP
#endif

static void ch_planes(const void* p, long b, long e) {
  const ch_ctx* k = p;
  for (long t = b; t < e; t++) {
    long n = t / k->cb, cb = t % k->cb;
    const float* gate = k->g + (k->gate_batch ? n : 0) * k->cb * k->v + cb * k->v;
    const float* a = k->a + t * k->hw * k->v;
    float* o = k->out + t * k->hw * k->v;
#if defined(__AVX512F__)
    if (k->v == 16 && has_vector_form(k->fn)) { ch_plane16(k, a, gate, o); continue; }
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if ((k->v == 8 || k->v == 16) && has_vector_form(k->fn)) { ch_plane_vec(k, a, gate, o); continue; }
#endif
    for (long q = 0; q < k->hw; q++) {
      if (k->reversed) for (long l = 0; l < k->v; l++) o[q * k->v + l] = apply(k->fn, gate[l], a[q * k->v + l]);
      else row(k->fn, a + q * k->v, 1, gate, 1, o + q * k->v, k->v);
    }
  }
}

/* ints [fn, N, CB, HW, V, gate_has_batch, C(, reversed)]: reversed computes gate (fn) a. */
int vt_op_binary_channel(const vt_step* s) {
  const int64_t* k = s->ints;
  ch_ctx c = { s->in[0], s->in[1], s->out[0], (int)k[0], k[2], k[3], k[4], k[5], s->n_ints > 7 ? (int)k[7] : 0 };
  if (c.fn < 0 || c.fn >= B_EQUAL) { snprintf(s->err, VT_ERR_LEN, "channel binary: bad fn %d", c.fn); return 1; }
  vt_parallel(k[1] * c.cb, s->threads, 8, ch_planes, &c);
  vt_zero_pad_lanes(c.out, k[1], k[6], c.hw, c.v);
  return 0;
}

int vt_op_where(const vt_step* s) {
  const int64_t* k = s->ints;
  int rank = (int)k[0];
  if (rank < 1 || rank > MAX_RANK) { snprintf(s->err, VT_ERR_LEN, "where: bad rank %d", rank); return 1; }
  const int64_t *dims = k + 1, *sc = dims + rank, *sx = sc + rank, *sy = sx + rank;
  long es = sy[rank];
  const unsigned char* cond = s->in[0];
  const char *x = s->in[1], *y = s->in[2];
  char* out = s->out[0];
  long total = 1;
  for (int d = 0; d < rank; d++) total *= dims[d];
  long idx[MAX_RANK] = { 0 }, co = 0, xo = 0, yo = 0;
  for (long t = 0; t < total; t++) {
    memcpy(out + t * es, cond[co] ? x + xo * es : y + yo * es, (size_t)es);
    for (int d = rank - 1; d >= 0; d--) {
      idx[d]++; co += sc[d]; xo += sx[d]; yo += sy[d];
      if (idx[d] < dims[d]) break;
      co -= idx[d] * sc[d]; xo -= idx[d] * sx[d]; yo -= idx[d] * sy[d]; idx[d] = 0;
    }
  }
  return 0;
}
