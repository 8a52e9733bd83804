/*
 * UNARY: y = f(x) elementwise over float32. ints [fn, count, fixN, fixC, fixHW, fixV] (fixV > 0: the
 * tensor is NCHW[V]c and its padded lanes are re-zeroed afterwards, since f(0) may be nonzero),
 * floats [alpha, beta]. The functions themselves are vt_unary.h's, shared with the elementwise chain.
 */
#include <stdio.h>
#include "vt_unary.h"

typedef struct { const float* in; float* out; int fn; float a, b; long count; } un_ctx;

#define BLOCK 4096

static void un_blocks(const void* p, long bb, long be) {
  const un_ctx* k = p;
  long i = bb * BLOCK, end = be * BLOCK < k->count ? be * BLOCK : k->count;
  if (vt_unary_vectorized(k->fn)) {
    for (; i + VT_W <= end; i += VT_W) VTW(store)(k->out + i, vt_unary_w(k->fn, VTW(load)(k->in + i), k->a, k->b));
  }
  for (; i < end; i++) k->out[i] = vt_unary_1(k->fn, k->in[i], k->a, k->b);
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
