/*
 * TOPK ints [outer, D, inner, K, largest]: along the axis of an [outer][D][inner] float32 view,
 * the K largest (largest = 1) or smallest values and their int64 indices, written sorted (best
 * first; equal values in index order, as ONNX specifies). One row per task: a K-entry heap whose
 * root is the worst kept entry; with a full heap, a contiguous row is scanned VT_W lanes at a time
 * and a vector with no lane beyond the root is skipped whole — over 100k classes and K = 5 almost
 * every vector is. NaN never enters the result.
 */
#include <stdio.h>
#include <stdlib.h>
#include "vt_rt.h"
#include "../vt_simd.h"

typedef struct { float v; int64_t i; } entry;
typedef struct { const float* x; float* vals; int64_t* idx; long d, inner, k; int largest; } topk_ctx;

/* a ranks worse than b: smaller value, or the same value at a larger index (values are pre-negated for smallest). */
static inline int worse(entry a, entry b) { return a.v < b.v || (a.v == b.v && a.i > b.i); }

static void sift_down(entry* h, long n, long at) {
  for (;;) {
    long l = 2 * at + 1, r = l + 1, w = at;
    if (l < n && worse(h[l], h[w])) w = l;
    if (r < n && worse(h[r], h[w])) w = r;
    if (w == at) return;
    entry t = h[at]; h[at] = h[w]; h[w] = t;
    at = w;
  }
}

static void sift_up(entry* h, long at) {
  while (at > 0) {
    long p = (at - 1) / 2;
    if (!worse(h[at], h[p])) return;
    entry t = h[at]; h[at] = h[p]; h[p] = t;
    at = p;
  }
}

static int best_first(const void* pa, const void* pb) {
  const entry* a = pa; const entry* b = pb;
  if (a->v != b->v) return a->v > b->v ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

static inline void offer(entry* h, long* n, long k, float v, int64_t i) {
  if (v != v) return; /* NaN */
  if (*n < k) { h[*n] = (entry){ v, i }; sift_up(h, (*n)++); return; }
  if (v > h[0].v) { h[0] = (entry){ v, i }; sift_down(h, k, 0); }
}

static void topk_rows(const void* p, long b, long e) {
  const topk_ctx* c = p;
  entry* h = malloc((size_t)c->k * sizeof(entry));
  if (!h) return;
  for (long row = b; row < e; row++) {
    long o = row / c->inner, in = row % c->inner;
    const float* x = c->x + o * c->d * c->inner + in;
    long n = 0, j = 0;
    if (c->largest && c->inner == 1) {
      for (; j < c->d && n < c->k; j++) offer(h, &n, c->k, x[j], j);
#if VT_W > 1
      for (; n == c->k && j + VT_W <= c->d; j += VT_W) {
        if (!VTW(any_gt)(VTW(load)(x + j), h[0].v)) continue;
        for (long l = 0; l < VT_W; l++) offer(h, &n, c->k, x[j + l], j + l);
      }
#endif
      for (; j < c->d; j++) offer(h, &n, c->k, x[j], j);
    } else {
      const float sign = c->largest ? 1.0f : -1.0f;
      for (; j < c->d; j++) offer(h, &n, c->k, sign * x[j * c->inner], j);
    }
    qsort(h, (size_t)n, sizeof(entry), best_first);
    float* vals = c->vals + o * c->k * c->inner + in;
    int64_t* idx = c->idx + o * c->k * c->inner + in;
    for (long t = 0; t < c->k; t++) {
      /* fewer than K non-NaN values: the rest are NaN at the next indices, as a total order would place them */
      float v = t < n ? (c->largest ? h[t].v : -h[t].v) : 0.0f / 0.0f;
      if (vals) vals[t * c->inner] = v;
      idx[t * c->inner] = t < n ? h[t].i : (int64_t)t;
    }
  }
  free(h);
}

int vt_op_topk(const vt_step* s) {
  const int64_t* k = s->ints;
  topk_ctx c = { s->in[0], s->out[0], s->out[1], k[1], k[2], k[3], (int)k[4] };
  if (c.k < 0 || c.k > c.d || !c.idx) { snprintf(s->err, VT_ERR_LEN, "topk: K %ld is not within the axis length %ld", c.k, c.d); return 1; }
  if (c.k == 0) return 0;
  vt_parallel(k[0] * c.inner, s->threads, 1, topk_rows, &c);
  return 0;
}
