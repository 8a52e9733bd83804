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
 */
#include <stdio.h>
#include <string.h>
#include "vt_rt.h"

#define MAX_RANK 8

typedef struct { const char* src; char* dst; long es, rank; const int64_t *dims, *ss, *ds; } job_ctx;

static inline void elem_copy(char* d, const char* s, long es) {
  switch (es) {
    case 4: *(uint32_t*)d = *(const uint32_t*)s; break;
    case 8: *(uint64_t*)d = *(const uint64_t*)s; break;
    case 1: *d = *s; break;
    case 2: *(uint16_t*)d = *(const uint16_t*)s; break;
    default: memcpy(d, s, (size_t)es);
  }
}

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

static void fill(void* out, long n, int kind, double v) {
  switch (kind) {
    case VT_F32: { float x = (float)v; float* o = out; for (long i = 0; i < n; i++) o[i] = x; break; }
    case VT_F64: { double* o = out; for (long i = 0; i < n; i++) o[i] = v; break; }
    case VT_I32: { int32_t* o = out; for (long i = 0; i < n; i++) o[i] = (int32_t)v; break; }
    case VT_I64: { int64_t* o = out; for (long i = 0; i < n; i++) o[i] = (int64_t)v; break; }
    case VT_I16: case VT_U16: { int16_t* o = out; for (long i = 0; i < n; i++) o[i] = (int16_t)v; break; }
    default: memset(out, (int)(unsigned char)(int)v, (size_t)n);
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
    long rows = 1;
    for (long d = 0; d < rank - 1; d++) rows *= c.dims[d];
    long row_bytes = c.dims[rank - 1] * es;
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
    case VT_I32: ((int32_t*)p)[i] = (int32_t)v; break;
    case VT_I64: ((int64_t*)p)[i] = (int64_t)v; break;
    case VT_I8: ((int8_t*)p)[i] = (int8_t)v; break;
    case VT_I16: ((int16_t*)p)[i] = (int16_t)v; break;
    case VT_U16: ((uint16_t*)p)[i] = (uint16_t)v; break;
    case VT_BOOL: ((uint8_t*)p)[i] = v != 0.0; break;
    default: ((uint8_t*)p)[i] = (uint8_t)v;
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
