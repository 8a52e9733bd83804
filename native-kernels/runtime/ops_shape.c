/*
 * Data movement.
 * STRIDED_COPY ints [elem_bytes, fill_kind, fill_elems, n_jobs, jobs...], floats [fill value]
 *   job = [src input index, dst output index, src base, dst base, rank, dims x rank,
 *          src strides x rank, dst strides x rank] (elements). fill_kind >= 0 (a vt_kind): out[0]
 *   is first filled with the value (Pad). One op covers Transpose (permuted source strides), Slice
 *   (base + scaled strides, negative steps included), Split (one job per output), Concat on plain
 *   layout or on NCHW[V]c at channel offsets that are multiples of V (one job per input), Expand
 *   (zero strides) and Pad (fill, then copy the input into the interior).
 * GATHER ints [outer, axis_dim, inner, n_indices, index_bytes (4|8), elem_bytes]; in [data, indices]:
 *   out[o][j][i] = data[o][idx[j]][i]; negative indices count from the end, others out of range are
 *   a run-time error naming the index.
 * CAST ints [count, from kind, to kind] (vt_kind); float -> int truncates toward zero, -> bool is != 0.
 *   Out-of-range values saturate to the integer type's limits and NaN becomes 0 (ONNX leaves these
 *   undefined; C makes an out-of-range double -> int conversion undefined behaviour, so it is never
 *   done). STRIDED_COPY's fill value converts the same way.
 */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "vt_rt.h"
#include "../vt_simd.h"

#define MAX_RANK 8

typedef struct { const char* src; char* dst; long es, rank; const int64_t *dims, *ss, *ds; } job_ctx;

/* memcpy of a constant size compiles to one load and store, with no aliasing or alignment assumption
 * about the bytes (a uint32_t* cast of a float or a byte offset would be undefined behaviour). */
static inline void elem_copy(char* d, const char* s, long es) {
  switch (es) {
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    default: memcpy(d, s, (size_t)es);
  }
}

/* v truncated toward zero and clamped to [lo, hi]; NaN -> 0. lo and hi are exact doubles. */
static inline double saturated(double v, double lo, double hi) {
  if (v != v) return 0.0;
  return v <= lo ? lo : v >= hi ? hi : v;
}

/* int64: 2^63 is the first double past INT64_MAX, -2^63 is INT64_MIN exactly. */
static inline int64_t to_i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}
static inline int32_t to_i32(double v) { return (int32_t)saturated(v, INT32_MIN, INT32_MAX); }
static inline int16_t to_i16(double v) { return (int16_t)saturated(v, INT16_MIN, INT16_MAX); }
static inline uint16_t to_u16(double v) { return (uint16_t)saturated(v, 0, UINT16_MAX); }
static inline int8_t to_i8(double v) { return (int8_t)saturated(v, INT8_MIN, INT8_MAX); }
static inline uint8_t to_u8(double v) { return (uint8_t)saturated(v, 0, UINT8_MAX); }

static void job_rows(const void* p, long rb, long re) {
  const job_ctx* k = p;
  const int r = (int)k->rank;
  const long inner = k->dims[r - 1], si = k->ss[r - 1], di = k->ds[r - 1], es = k->es;
  long idx[MAX_RANK] = { 0 }, rest = rb, so = 0, dof = 0;
  for (int d = r - 2; d >= 0; d--) { idx[d] = rest % k->dims[d]; rest /= k->dims[d]; so += idx[d] * k->ss[d]; dof += idx[d] * k->ds[d]; }
  for (long t = rb; t < re; t++) {
    if (si == 1 && di == 1) memcpy(k->dst + dof * es, k->src + so * es, (size_t)(inner * es));
    else for (long i = 0; i < inner; i++) elem_copy(k->dst + (dof + i * di) * es, k->src + (so + i * si) * es, es);
    for (int d = r - 2; d >= 0; d--) {
      idx[d]++; so += k->ss[d]; dof += k->ds[d];
      if (idx[d] < k->dims[d]) break;
      so -= idx[d] * k->ss[d]; dof -= idx[d] * k->ds[d]; idx[d] = 0;
    }
  }
}

#if VT_W > 1
/*
 * A 4-byte transpose whose output rows run across the source's lines: the source's contiguous axis
 * `a` is an outer axis of the output. Element by element, each output row took one element of each
 * of its source lines, and at a source stride of a multiple of 4 KiB those lines share one L1 set,
 * so they were evicted before the next row could use them (BERT's K transpose, [1,128,16,64] to
 * [1,16,64,128], ran at 9% of memcpy). In VT_W x VT_W tiles instead: VT_W vector loads along `a`, a
 * register transpose (bit-exact: shuffles only), VT_W vector stores along the output row, so every
 * source line is read once and whole. Tiles cut by the edges go element by element.
 */
#if VT_W == 16
#define TRANSPOSE_TILE vt16_transpose16
#else
#define TRANSPOSE_TILE vt8_transpose8
#endif

typedef struct { const float* src; float* dst; long rank, a, a_tiles; const int64_t *dims, *ss, *ds; } tile_ctx;

static void tile_rows(const void* p, long tb, long te) {
  const tile_ctx* k = p;
  const int r = (int)k->rank;
  const long n = k->dims[r - 1], si = k->ss[r - 1], da = k->ds[k->a];
  for (long t = tb; t < te; t++) {
    long a0 = (t % k->a_tiles) * VT_W, rest = t / k->a_tiles, so = 0, dof = 0;
    for (int d = r - 2; d >= 0; d--) {
      if (d == k->a) continue;
      long i = rest % k->dims[d];
      rest /= k->dims[d];
      so += i * k->ss[d]; dof += i * k->ds[d];
    }
    const long na = k->dims[k->a] - a0 < VT_W ? k->dims[k->a] - a0 : VT_W;
    const float* src = k->src + so + a0;
    float* dst = k->dst + dof + a0 * da;
    for (long i0 = 0; i0 < n; i0 += VT_W) {
      const long ni = n - i0 < VT_W ? n - i0 : VT_W;
      if (na == VT_W && ni == VT_W) {
        vtw_t v[VT_W];
        for (int q = 0; q < VT_W; q++) v[q] = VTW(load)(src + (i0 + q) * si);
        TRANSPOSE_TILE(v);
        for (int q = 0; q < VT_W; q++) VTW(store)(dst + q * da + i0, v[q]);
      } else {
        for (long q = 0; q < na; q++)
          for (long i = 0; i < ni; i++) memcpy(dst + q * da + i0 + i, src + (i0 + i) * si + q, 4);
      }
    }
  }
}

/* The axis a tiled transpose runs along (source stride 1, not the output's inner axis), or -1 when the job is not one. */
static long tiled_axis(const job_ctx* c) {
  const int r = (int)c->rank;
  if (c->es != 4 || r < 2 || c->ds[r - 1] != 1 || c->ss[r - 1] == 1 || c->dims[r - 1] < VT_W) return -1;
  for (int d = r - 2; d >= 0; d--) if (c->ss[d] == 1 && c->dims[d] >= VT_W) return d;
  return -1;
}
#endif

/*
 * The same job with its outer axes ordered by source stride, largest first, so that rows are read in
 * the order they lie in memory (any order of the outer axes copies the same rows). For a transpose
 * of whole rows, [1,128,16,64] to [1,16,128,64] (BERT's heads), the output's order read rows 4 KiB
 * apart, one page each, and ran 4x slower than the reverse transpose, which reads in order and
 * writes 4 KiB apart.
 */
static job_ctx in_source_order(job_ctx c, int64_t* dims, int64_t* ss, int64_t* ds) {
  const int r = (int)c.rank;
  int order[MAX_RANK];
  for (int d = 0; d < r; d++) order[d] = d;
  for (int i = 1; i < r - 1; i++) /* insertion sort, stable: equal strides keep the output's order */
    for (int j = i; j > 0 && llabs(c.ss[order[j - 1]]) < llabs(c.ss[order[j]]); j--) { int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t; }
  for (int d = 0; d < r; d++) { dims[d] = c.dims[order[d]]; ss[d] = c.ss[order[d]]; ds[d] = c.ds[order[d]]; }
  c.dims = dims; c.ss = ss; c.ds = ds;
  return c;
}

static void fill(void* out, long n, int kind, double v) {
  switch (kind) {
    case VT_F32: { float x = (float)v; float* o = out; for (long i = 0; i < n; i++) o[i] = x; break; }
    case VT_F64: { double* o = out; for (long i = 0; i < n; i++) o[i] = v; break; }
    case VT_I32: { int32_t x = to_i32(v), *o = out; for (long i = 0; i < n; i++) o[i] = x; break; }
    case VT_I64: { int64_t x = to_i64(v), *o = out; for (long i = 0; i < n; i++) o[i] = x; break; }
    case VT_I16: { int16_t x = to_i16(v), *o = out; for (long i = 0; i < n; i++) o[i] = x; break; }
    case VT_U16: { uint16_t x = to_u16(v), *o = out; for (long i = 0; i < n; i++) o[i] = x; break; }
    case VT_I8: memset(out, (unsigned char)to_i8(v), (size_t)n); break;
    case VT_BOOL: memset(out, v != 0.0, (size_t)n); break;
    default: memset(out, to_u8(v), (size_t)n);
  }
}

int vt_op_strided_copy(const vt_step* s) {
  const int64_t* k = s->ints;
  long es = k[0], n_jobs = k[3];
  if (k[1] >= 0) fill(s->out[0], k[2], (int)k[1], s->floats[0]);
  const int64_t* j = k + 4;
  for (long q = 0; q < n_jobs; q++) {
    long src_i = j[0], dst_i = j[1], rank = j[4];
    if (rank < 1 || rank > MAX_RANK || src_i >= s->n_in || dst_i >= s->n_out) { snprintf(s->err, VT_ERR_LEN, "strided copy: malformed job %ld", q); return 1; }
    job_ctx c = { (const char*)s->in[src_i] + j[2] * es, (char*)s->out[dst_i] + j[3] * es, es, rank, j + 5, j + 5 + rank, j + 5 + 2 * rank };
    int64_t dims[MAX_RANK], ss[MAX_RANK], ds[MAX_RANK];
    if (rank > 2 && c.ss[rank - 1] == 1 && c.ds[rank - 1] == 1) c = in_source_order(c, dims, ss, ds);
    long rows = 1;
    for (long d = 0; d < rank - 1; d++) rows *= c.dims[d];
    long row_bytes = c.dims[rank - 1] * es;
#if VT_W > 1
    long a = tiled_axis(&c);
    if (a >= 0) {
      tile_ctx t = { (const float*)c.src, (float*)c.dst, rank, a, (c.dims[a] + VT_W - 1) / VT_W, c.dims, c.ss, c.ds };
      long tasks = rows / c.dims[a] * t.a_tiles;
      vt_parallel(tasks, s->threads, 1 + 65536 / (row_bytes * VT_W + 1), tile_rows, &t);
      j += 5 + 3 * rank;
      continue;
    }
#endif
    vt_parallel(rows, s->threads, 1 + 65536 / (row_bytes + 1), job_rows, &c);
    j += 5 + 3 * rank;
  }
  return 0;
}

int vt_op_gather(const vt_step* s) {
  const int64_t* k = s->ints;
  long outer = k[0], dim = k[1], inner = k[2], n = k[3], ib = k[4], es = k[5];
  const char* data = s->in[0];
  const char* idx = s->in[1];
  char* out = s->out[0];
  size_t row = (size_t)(inner * es);
  for (long j = 0; j < n; j++) {
    long v = ib == 8 ? (long)((const int64_t*)idx)[j] : (long)((const int32_t*)idx)[j];
    if (v < 0) v += dim;
    if (v < 0 || v >= dim) {
      long bad = ib == 8 ? (long)((const int64_t*)idx)[j] : (long)((const int32_t*)idx)[j];
      snprintf(s->err, VT_ERR_LEN, "gather: index %ld (position %ld) is out of range for an axis of %ld", bad, j, dim);
      return 1;
    }
    for (long o = 0; o < outer; o++) memcpy(out + ((o * n + j) * inner) * es, data + ((o * dim + v) * inner) * es, row);
  }
  return 0;
}

static double load(const void* p, long i, int kind) {
  switch (kind) {
    case VT_F32: return ((const float*)p)[i];
    case VT_F64: return ((const double*)p)[i];
    case VT_I32: return ((const int32_t*)p)[i];
    case VT_I64: return (double)((const int64_t*)p)[i];
    case VT_I8: return ((const int8_t*)p)[i];
    case VT_I16: return ((const int16_t*)p)[i];
    case VT_U16: return ((const uint16_t*)p)[i];
    default: return ((const uint8_t*)p)[i];
  }
}

static void store(void* p, long i, int kind, double v) {
  switch (kind) {
    case VT_F32: ((float*)p)[i] = (float)v; break;
    case VT_F64: ((double*)p)[i] = v; break;
    case VT_I32: ((int32_t*)p)[i] = to_i32(v); break;
    case VT_I64: ((int64_t*)p)[i] = to_i64(v); break;
    case VT_I8: ((int8_t*)p)[i] = to_i8(v); break;
    case VT_I16: ((int16_t*)p)[i] = to_i16(v); break;
    case VT_U16: ((uint16_t*)p)[i] = to_u16(v); break;
    case VT_BOOL: ((uint8_t*)p)[i] = v != 0.0; break;
    default: ((uint8_t*)p)[i] = to_u8(v);
  }
}

int vt_op_cast(const vt_step* s) {
  const int64_t* k = s->ints;
  long n = k[0];
  int from = (int)k[1], to = (int)k[2];
  if (from == VT_I64 && to == VT_I64) { memmove(s->out[0], s->in[0], (size_t)n * 8); return 0; }
  for (long i = 0; i < n; i++) store(s->out[0], i, to, load(s->in[0], i, from));
  return 0;
}
