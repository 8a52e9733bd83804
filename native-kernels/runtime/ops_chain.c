/*
 * ELEMENTWISE_CHAIN: several elementwise ops in one pass over the data (TVM FuseOps' injective
 * chains): a batch norm / channel affine, activations, and binaries against a same-shaped value, a
 * per-channel vector (squeeze-excite gate, channel bias) or a scalar, in any order.
 * Layout NCHW[V]c (V = 1: plain NCHW, any rank with channels second; HW = the product after C).
 * ints [N, C, HW, V, n_steps, then per step: kind (enum vt_chain_step), fn, operand, operand2, flags]
 * floats [alpha, beta per step]
 * in [x, operands...] (the operands steps name by index); out [y], which may be x itself.
 *   affine   y = y * in[operand][c] + in[operand2][c]    (channel vectors of CB*V floats)
 *   unary    y = f(y), f an enum vt_unary_fn code with a vector form (vt_unary.h), alpha/beta its parameters
 *   binary   y = y (fn) z, or z (fn) y when flags & 1; z = in[operand] (in[0]: the chain's own input) broadcast as operand2
 *            (enum vt_operand_kind: full | channel [CB*V] | channel_batch [N][CB*V] | scalar)
 * Each plane (one batch, one channel block) is walked in strips that stay in L1; every step runs
 * over the whole strip in its own vector loop (no per-element dispatch). At the build's own vector
 * width, one pass per plane instead (chain_planes_fused). Padded lanes are re-zeroed.
 */
#include <stdio.h>
#include <string.h>
#include "vt_unary.h"

#define STRIP 1024
#define MAX_STEPS 16
#define PERIOD 16

typedef struct { long kind, fn, operand, operand2, flags; float alpha, beta; } chain_step;

typedef struct {
  const float* const* in; float* out; long n, c, hw, v, cb, n_steps;
  chain_step steps[MAX_STEPS];
} chain_ctx;

#define BIN_W(FN, A, B) ((FN) == B_ADD ? VTW(add)(A, B) : (FN) == B_SUB ? VTW(sub)(A, B) : (FN) == B_MUL ? VTW(mul)(A, B) \
  : (FN) == B_DIV ? VTW(div)(A, B) : (FN) == B_MAX ? VTW(max)(A, B) : VTW(min)(A, B))
#define BIN_1(FN, A, B) ((FN) == B_ADD ? (A) + (B) : (FN) == B_SUB ? (A) - (B) : (FN) == B_MUL ? (A) * (B) \
  : (FN) == B_DIV ? (A) / (B) : (FN) == B_MAX ? ((A) > (B) ? (A) : (B)) : ((A) < (B) ? (A) : (B)))

/* The per-channel values of one plane as a period of PERIOD floats: lane j holds channel cb*V + j % V. */
static inline void period_of(const float* vec, long cb, long v, float* per) {
  for (long j = 0; j < PERIOD; j++) per[j] = vec[cb * v + j % v];
}

/* One step over buf[0..len), which starts at plane position `pos0` (a multiple of PERIOD). */
static void run_step(const chain_ctx* k, const chain_step* st, float* buf, long len, long n, long cb, long plane, long pos0) {
  float pa[PERIOD], pb[PERIOD];
  long i = 0;
  if (st->kind == CH_AFFINE) {
    period_of(k->in[st->operand], cb, k->v, pa);
    period_of(k->in[st->operand2], cb, k->v, pb);
    for (; i + VT_W <= len; i += VT_W) {
      long at = (pos0 + i) % PERIOD;
      VTW(store)(buf + i, VTW(fma)(VTW(load)(buf + i), VTW(load)(pa + at), VTW(load)(pb + at)));
    }
    for (; i < len; i++) { long at = (pos0 + i) % PERIOD; buf[i] = buf[i] * pa[at] + pb[at]; }
    return;
  }
  if (st->kind == CH_UNARY) {
    for (; i + VT_W <= len; i += VT_W) VTW(store)(buf + i, vt_unary_w(st->fn, VTW(load)(buf + i), st->alpha, st->beta));
    for (; i < len; i++) buf[i] = vt_unary_1(st->fn, buf[i], st->alpha, st->beta);
    return;
  }
  const float* z = k->in[st->operand];
  const long fn = st->fn, rev = st->flags & 1;
  if (st->operand2 == OPND_FULL) {
    const float* zz = z + plane * k->hw * k->v + pos0;
    for (; i + VT_W <= len; i += VT_W) {
      vtw_t a = VTW(load)(buf + i), b = VTW(load)(zz + i);
      VTW(store)(buf + i, rev ? BIN_W(fn, b, a) : BIN_W(fn, a, b));
    }
    for (; i < len; i++) buf[i] = rev ? BIN_1(fn, zz[i], buf[i]) : BIN_1(fn, buf[i], zz[i]);
    return;
  }
  if (st->operand2 == OPND_SCALAR) {
    for (long j = 0; j < PERIOD; j++) pa[j] = z[0];
  } else {
    period_of(z + (st->operand2 == OPND_CHANNEL_BATCH ? n * k->cb * k->v : 0), cb, k->v, pa);
  }
  for (; i + VT_W <= len; i += VT_W) {
    vtw_t a = VTW(load)(buf + i), b = VTW(load)(pa + (pos0 + i) % PERIOD);
    VTW(store)(buf + i, rev ? BIN_W(fn, b, a) : BIN_W(fn, a, b));
  }
  for (; i < len; i++) { float b = pa[(pos0 + i) % PERIOD]; buf[i] = rev ? BIN_1(fn, b, buf[i]) : BIN_1(fn, buf[i], b); }
}

/*
 * V = VT_W (the build's vector width holds exactly one channel block): every vector of a plane has
 * the same channels, so each step's per-channel operand is one register for the whole plane, and all
 * steps run back to back on each vector in a single pass: the plane is read and written once, with
 * no strip copies and no per-vector period lookups. The same steps, in the same order, as run_step.
 * The common pre-activation (batch norm + ReLU: DenseNet before every conv) has its own loop: the
 * per-vector step dispatch of the general loop cost DenseNet-121's chains 3.2 ms where that loop
 * takes 2.2 (step-profile --threads 1, 3 interleaved rounds, the general loop forced).
 */
static void chain_planes_fused(const chain_ctx* k, long b, long e) {
  const long len = k->hw * k->v;
  vtw_t ca[MAX_STEPS], cs[MAX_STEPS];
  const int affine_relu = k->n_steps == 2 && k->steps[0].kind == CH_AFFINE && k->steps[1].kind == CH_UNARY && k->steps[1].fn == U_RELU;
  for (long t = b; t < e; t++) {
    const long n = t / k->cb, cb = t % k->cb;
    for (long si = 0; si < k->n_steps; si++) {
      const chain_step* st = &k->steps[si];
      if (st->kind == CH_AFFINE) {
        ca[si] = VTW(load)(k->in[st->operand] + cb * k->v);
        cs[si] = VTW(load)(k->in[st->operand2] + cb * k->v);
      } else if (st->kind == CH_BINARY && st->operand2 == OPND_SCALAR) {
        ca[si] = VTW(set1)(k->in[st->operand][0]);
      } else if (st->kind == CH_BINARY && st->operand2 != OPND_FULL) {
        ca[si] = VTW(load)(k->in[st->operand] + (st->operand2 == OPND_CHANNEL_BATCH ? n * k->cb * k->v : 0) + cb * k->v);
      }
    }
    const float* x = k->in[0] + t * len;
    float* y = k->out + t * len;
    if (affine_relu) {
      for (long i = 0; i < len; i += VT_W) VTW(store)(y + i, VTW(max)(VTW(fma)(VTW(load)(x + i), ca[0], cs[0]), VTW(zero)()));
      continue;
    }
    for (long i = 0; i < len; i += VT_W) {
      vtw_t a = VTW(load)(x + i);
      for (long si = 0; si < k->n_steps; si++) {
        const chain_step* st = &k->steps[si];
        if (st->kind == CH_AFFINE) { a = VTW(fma)(a, ca[si], cs[si]); continue; }
        if (st->kind == CH_UNARY) { a = vt_unary_w(st->fn, a, st->alpha, st->beta); continue; }
        const vtw_t z = st->operand2 == OPND_FULL ? VTW(load)(k->in[st->operand] + t * len + i) : ca[si];
        a = st->flags & 1 ? BIN_W(st->fn, z, a) : BIN_W(st->fn, a, z);
      }
      VTW(store)(y + i, a);
    }
  }
}

static void chain_planes(const void* p, long b, long e) {
  const chain_ctx* k = p;
  if (k->v == VT_W && VT_W > 1) { chain_planes_fused(k, b, e); return; }
  float buf[STRIP];
  const long len = k->hw * k->v;
  for (long t = b; t < e; t++) {
    long n = t / k->cb, cb = t % k->cb;
    const float* x = k->in[0] + t * len;
    float* y = k->out + t * len;
    for (long s0 = 0; s0 < len; s0 += STRIP) {
      long m = len - s0 < STRIP ? len - s0 : STRIP;
      memcpy(buf, x + s0, (size_t)m * sizeof(float));
      for (long si = 0; si < k->n_steps; si++) run_step(k, &k->steps[si], buf, m, n, cb, t, s0);
      memcpy(y + s0, buf, (size_t)m * sizeof(float));
    }
  }
}

int vt_op_elementwise_chain(const vt_step* s) {
  const int64_t* k = s->ints;
  chain_ctx c;
  memset(&c, 0, sizeof c);
  c.in = (const float* const*)s->in; c.out = s->out[0];
  c.n = k[0]; c.c = k[1]; c.hw = k[2]; c.v = k[3]; c.n_steps = k[4];
  if (c.v < 1 || c.v > PERIOD || PERIOD % c.v != 0 || c.n_steps < 1 || c.n_steps > MAX_STEPS || s->n_ints != 5 + 5 * c.n_steps
      || s->n_floats != 2 * c.n_steps) {
    snprintf(s->err, VT_ERR_LEN, "elementwise chain: malformed step list (%ld steps, V %ld)", c.n_steps, c.v);
    return 1;
  }
  c.cb = (c.c + c.v - 1) / c.v;
  for (long i = 0; i < c.n_steps; i++) {
    const int64_t* q = k + 5 + 5 * i;
    chain_step* st = &c.steps[i];
    *st = (chain_step){ q[0], q[1], q[2], q[3], q[4], (float)s->floats[2 * i], (float)s->floats[2 * i + 1] };
    int operands_ok = st->kind == CH_UNARY ? vt_unary_vectorized(st->fn)
                                           : st->operand >= 0 && st->operand < s->n_in && s->in[st->operand] != NULL;
    if (st->kind == CH_AFFINE) operands_ok = operands_ok && st->operand >= 1 && st->operand2 >= 1 && st->operand2 < s->n_in && s->in[st->operand2] != NULL;
    if (st->kind == CH_BINARY) operands_ok = operands_ok && st->operand2 >= 0 && st->operand2 < OPND_COUNT && st->fn >= B_ADD && st->fn <= B_MIN
      && st->fn != B_POW;
    if (st->kind < 0 || st->kind >= CH_COUNT || !operands_ok) {
      snprintf(s->err, VT_ERR_LEN, "elementwise chain: step %ld is malformed", i);
      return 1;
    }
  }
  long planes = c.n * c.cb;
  vt_parallel(planes, s->threads, 1 + 16384 / (c.hw * c.v + 1), chain_planes, &c);
  if (c.v > 1) vt_zero_pad_lanes(c.out, c.n, c.c, c.hw, c.v);
  return 0;
}
