/*
 * REDUCE ints [fn, rank, dims x rank, out strides x rank, out count, reduced count]: out strides
 * are 0 on reduced dimensions (keepdims only changes the shape, not the bytes). fn 0 sum, 1 mean,
 * 2 max, 3 min, 4 prod, 5 sum of squares, 6 L1, 7 L2. float32. The common "[kept][reduced]" shape
 * (spatial mean, last-axis sums) runs row-parallel; anything else walks the input once in order.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include "vt_rt.h"

#define MAX_RANK 8
/* function codes: enum vt_reduce_fn (vt_abi.h) */

static inline float init(int fn) {
  return fn == R_MAX ? -FLT_MAX : fn == R_MIN ? FLT_MAX : fn == R_PROD ? 1.0f : 0.0f;
}

static inline float combine(int fn, float acc, float x) {
  switch (fn) {
    case R_MAX: return x > acc ? x : acc;
    case R_MIN: return x < acc ? x : acc;
    case R_PROD: return acc * x;
    case R_SUM_SQUARE: case R_L2: return acc + x * x;
    case R_L1: return acc + fabsf(x);
    default: return acc + x;
  }
}

static inline float finish(int fn, float acc, long count) {
  if (fn == R_MEAN) return acc / (float)count;
  if (fn == R_L2) return sqrtf(acc);
  return acc;
}

typedef struct { const float* in; float* out; int fn; long inner; } rr_ctx;

static void reduce_rows(const void* p, long b, long e) {
  const rr_ctx* k = p;
  for (long r = b; r < e; r++) {
    const float* x = k->in + r * k->inner;
    float acc = init(k->fn);
    if (k->fn == R_SUM || k->fn == R_MEAN) { float s = 0.0f; for (long i = 0; i < k->inner; i++) s += x[i]; acc = s; }
    else for (long i = 0; i < k->inner; i++) acc = combine(k->fn, acc, x[i]);
    k->out[r] = finish(k->fn, acc, k->inner);
  }
}

int vt_op_reduce(const vt_step* s) {
  const int64_t* k = s->ints;
  int fn = (int)k[0], rank = (int)k[1];
  if (fn < 0 || fn >= R_COUNT || rank < 1 || rank > MAX_RANK) { snprintf(s->err, VT_ERR_LEN, "reduce: bad fn %d or rank %d", fn, rank); return 1; }
  const int64_t *dims = k + 2, *os = dims + rank;
  long out_count = os[rank], reduced = os[rank + 1];
  const float* in = s->in[0];
  float* out = s->out[0];
  if (rank == 2 && os[1] == 0 && os[0] == 1) {
    rr_ctx c = { in, out, fn, dims[1] };
    vt_parallel(dims[0], s->threads, 1 + 4096 / (dims[1] + 1), reduce_rows, &c);
    return 0;
  }
  float start = init(fn);
  for (long i = 0; i < out_count; i++) out[i] = start;
  long total = 1;
  for (int d = 0; d < rank; d++) total *= dims[d];
  long idx[MAX_RANK] = { 0 }, o = 0;
  for (long t = 0; t < total; t++) {
    out[o] = combine(fn, out[o], in[t]);
    for (int d = rank - 1; d >= 0; d--) {
      idx[d]++; o += os[d];
      if (idx[d] < dims[d]) break;
      o -= idx[d] * os[d]; idx[d] = 0;
    }
  }
  for (long i = 0; i < out_count; i++) out[i] = finish(fn, out[i], reduced);
  return 0;
}
