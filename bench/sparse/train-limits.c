/*
 * What the machine allows the sparse training epoch's parts (each part's limit,
 * measured on the machine that ran the profile). Not part of veltair; a probe for bench/RESULTS.md:
 *   out=$(mktemp) && cc -O3 -march=native -fopenmp bench/sparse/train-limits.c -o "$out" && "$out" [threads]
 * (run it under the benchmark lock). It prints, for `threads` threads (default 2):
 *  - stream read and stream read+write bandwidth over 4 arrays of 51.2 MB (the output layer's w, m, v, g);
 *  - random 512-byte rows (128 floats) read and dotted, over a 100000 x 128 matrix: ns per row (the
 *    per-sample pass's access pattern), and the same rows in id order (the neuron-major pass's);
 *  - FMA peak: independent vector FMAs per second per thread (GFLOP/s, 2 flops each).
 * Each figure is the best of 5 repetitions.
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#define ROWS 100000
#define WIDTH 128
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

static float dot(const float* a, const float* b) {
  __m512 s = _mm512_setzero_ps();
  for (int i = 0; i < WIDTH; i += 16) s = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s);
  return _mm512_reduce_add_ps(s);
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 2;
  const size_t n = (size_t)ROWS * WIDTH;
  float* a[4];
  for (int k = 0; k < 4; k++) { a[k] = aligned_alloc(64, n * 4); for (size_t i = 0; i < n; i++) a[k][i] = (float)(i % 7) * 0.1f; }
  float h[WIDTH];
  for (int i = 0; i < WIDTH; i++) h[i] = 0.01f * i;
  uint32_t* idx = malloc(ROWS * 8 * sizeof *idx);
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < ROWS * 8; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; idx[i] = (uint32_t)(x % ROWS); }
  double best_r = 1e9, best_rw = 1e9, best_g = 1e9, best_s = 1e9, best_f = 1e9;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; rep++) {
    double t = now(); float acc = 0;
    #pragma omp parallel for num_threads(threads) reduction(+:acc) schedule(static)
    for (size_t r = 0; r < ROWS; r++) for (int k = 0; k < 4; k++) acc += dot(a[k] + r * WIDTH, h);
    double d = now() - t; if (d < best_r) best_r = d; sink += acc;
    t = now();
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t r = 0; r < ROWS; r++) {
      float* w = a[0] + r * WIDTH; float* m = a[1] + r * WIDTH; float* v = a[2] + r * WIDTH; const float* g = a[3] + r * WIDTH;
      for (int i = 0; i < WIDTH; i += 16) {
        __m512 gi = _mm512_load_ps(g + i);
        __m512 mi = _mm512_fmadd_ps(_mm512_set1_ps(0.9f), _mm512_load_ps(m + i), _mm512_mul_ps(_mm512_set1_ps(0.1f), gi));
        __m512 vi = _mm512_fmadd_ps(_mm512_set1_ps(0.999f), _mm512_load_ps(v + i), _mm512_mul_ps(_mm512_set1_ps(0.001f), _mm512_mul_ps(gi, gi)));
        _mm512_store_ps(w + i, _mm512_sub_ps(_mm512_load_ps(w + i), _mm512_mul_ps(_mm512_set1_ps(1e-9f), _mm512_div_ps(mi, _mm512_add_ps(_mm512_sqrt_ps(vi), _mm512_set1_ps(1e-8f))))));
        _mm512_store_ps(m + i, mi); _mm512_store_ps(v + i, vi);
      }
    }
    d = now() - t; if (d < best_rw) best_rw = d;
    t = now(); acc = 0;
    #pragma omp parallel for num_threads(threads) reduction(+:acc) schedule(static)
    for (int i = 0; i < ROWS * 8; i++) { if (i + 8 < ROWS * 8) for (int c = 0; c < 8; c++) __builtin_prefetch(a[0] + (size_t)idx[i + 8] * WIDTH + 16 * c); acc += dot(a[0] + (size_t)idx[i] * WIDTH, h); }
    d = now() - t; if (d < best_g) best_g = d; sink += acc;
    t = now(); acc = 0;
    #pragma omp parallel for num_threads(threads) reduction(+:acc) schedule(static)
    for (int r = 0; r < ROWS; r++) for (int q = 0; q < 5; q++) acc += dot(a[0] + (size_t)r * WIDTH, h);
    d = now() - t; if (d < best_s) best_s = d; sink += acc;
    t = now();
    #pragma omp parallel num_threads(threads)
    {
      __m512 s[8]; for (int k = 0; k < 8; k++) s[k] = _mm512_set1_ps(k);
      const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
      for (long it = 0; it < 50000000; it++) for (int k = 0; k < 8; k++) s[k] = _mm512_fmadd_ps(s[k], m, c);
      float o = 0; for (int k = 0; k < 8; k++) o += _mm512_reduce_add_ps(s[k]);
      #pragma omp atomic
      sink += o;
    }
    d = now() - t; if (d < best_f) best_f = d;
  }
  const double mb = 4.0 * n * 4 / 1e6;
  printf("threads %d\n", threads);
  printf("stream read, 4 x 51.2 MB: %.1f GB/s (%.2f ms per pass)\n", mb / 1e3 / best_r, best_r * 1e3);
  printf("stream Adam-like (read w,m,v,g; write w,m,v), 4 x 51.2 MB: %.1f GB/s moved (%.2f ms per pass over 100000 rows)\n", 7.0 * n * 4 / 1e9 / best_rw, best_rw * 1e3);
  printf("random 512-B rows read + dot (prefetched 8 ahead): %.1f ns per row (%.1f GB/s)\n", best_g * 1e9 / (ROWS * 8.0), ROWS * 8.0 * 512 / 1e9 / best_g);
  printf("rows in id order, each dotted 5 times: %.1f ns per row-dot\n", best_s * 1e9 / (ROWS * 5.0));
  printf("FMA peak: %.1f GFLOP/s over %d threads (%.1f per thread)\n", 2.0 * 16 * 8 * 50000000.0 * threads / best_f / 1e9, threads, 2.0 * 16 * 8 * 50000000.0 / best_f / 1e9);
  return sink == 12345.0f;
}
