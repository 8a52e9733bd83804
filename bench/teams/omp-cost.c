/*
 * The cost of OpenMP's fork/join and barrier, of the runtime's own team barrier, and of reading
 * what the other core wrote, on this machine. Run under the benchmark lock:
 *   out=$(mktemp) && gcc -O2 -fopenmp bench/teams/omp-cost.c -o "$out" && flock -x "$BENCH_LOCK" "$out"
 */
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(void) {
  int N = 100000; volatile long x = 0;
  double t0 = now();
  for (int i = 0; i < N; i++) {
#pragma omp parallel num_threads(2)
    { x += omp_get_thread_num(); }
  }
  printf("empty 2-thread region (fork + join) %.2f us\n", (now() - t0) / N / 1e3);
  t0 = now();
#pragma omp parallel num_threads(2)
  for (int i = 0; i < N; i++) {
#pragma omp barrier
  }
  printf("barrier inside a region %.2f us\n", (now() - t0) / N / 1e3);
  /* the runtime's team barrier (ops_common.c team_wait): a counter and a phase on their own lines */
  static struct { _Alignas(64) int arrived; _Alignas(64) int phase; } bar;
  t0 = now();
#pragma omp parallel num_threads(2)
  {
    int phase = 0;
    for (int i = 0; i < N; i++) {
      phase ^= 1;
      if (__atomic_add_fetch(&bar.arrived, 1, __ATOMIC_ACQ_REL) == 2) {
        __atomic_store_n(&bar.arrived, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&bar.phase, phase, __ATOMIC_RELEASE);
      } else {
        while (__atomic_load_n(&bar.phase, __ATOMIC_ACQUIRE) != phase) __builtin_ia32_pause();
      }
    }
  }
  printf("the runtime's spin barrier inside a region %.2f us\n", (now() - t0) / N / 1e3);
  size_t B = 100 * 1024 / 4; float *a = aligned_alloc(64, B * 4 * 2), *b = aligned_alloc(64, B * 4 * 2);
  memset(a, 1, B * 8); memset(b, 1, B * 8);
  for (int mode = 0; mode < 3; mode++) {
    double tot = 0; int R = 20000;
    for (int r = 0; r < R; r++) {
      /* thread t writes half h of a: its own half (mode 0, 2) or the other's (mode 1) */
#pragma omp parallel num_threads(2)
      { int t = omp_get_thread_num(); size_t h = mode == 1 ? 1 - t : t; memset(a + h * B / 2, r, B * 2); }
      double s = now();
      if (mode == 2) { memcpy(b, a, B * 4); } else {
#pragma omp parallel num_threads(2)
        { int t = omp_get_thread_num(); memcpy(b + t * B / 2, a + t * B / 2, B * 2); }
      }
      tot += now() - s;
    }
    const char* what[] = { "2 threads, each its own half", "2 threads, each the half the other core wrote", "1 thread, half written by the other core" };
    printf("copy 100 KB, %s: %.2f us\n", what[mode], tot / R / 1e3);
  }
  return 0;
}
