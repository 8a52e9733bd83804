/*
 * Measured FMA peak: one thread per given core, pinned, each running a tight loop of independent
 * FMAs — 16 accumulators (AVX-512: 32 registers) or 12 (AVX2: 16 registers), enough to cover FMA
 * latency (4-5 cycles) times two FMA ports, so the loop is throughput-bound, not latency-bound.
 * Threads start together at a barrier; each rep prints one JSON line with every thread's GFLOP/s.
 *
 *   peak --cores 0,1 --ms 50 --reps 7
 *   {"rep":0,"isa":"avx512","gflops":[...per thread...]}
 *
 * Build: cc -O2 -march=native -pthread peak.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CORES 1024
#define BLOCK 4096 /* loop iterations between clock reads */

#if defined(__AVX512F__)
#define ISA "avx512"
#define ACCS 16
#define LANES 16
typedef __m512 vec;
#define VSET(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VSUM(v) _mm512_reduce_add_ps(v)
#elif defined(__AVX2__) && defined(__FMA__)
#define ISA "avx2"
#define ACCS 12
#define LANES 8
typedef __m256 vec;
#define VSET(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float VSUM(__m256 v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#else
#define ISA "scalar"
#define ACCS 8
#define LANES 1
typedef float vec;
#define VSET(x) (x)
#define VFMA(a, b, c) __builtin_fmaf(a, b, c)
#define VSUM(v) (v)
#endif

struct job {
  pthread_t thread;
  int core;
  double seconds;
  uint64_t iterations;
};

static int ncores;
static int cores[MAX_CORES];
static double min_seconds = 0.05;
static pthread_barrier_t barrier;
static volatile float sink;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fail(const char *what) {
  printf("{\"error\":\"%s\"}\n", what);
  fflush(stdout);
  fprintf(stderr, "peak: %s\n", what);
  exit(2);
}

static void *run(void *arg) {
  struct job *j = arg;
  /* x ← x·m + c with m just below 1 stays finite and normal for any run length. */
  const vec m = VSET(0.999999f), c = VSET(1e-6f);
  vec acc[ACCS];
  for (int a = 0; a < ACCS; a++) acc[a] = VSET(0.5f + 0.01f * (float)a);
  pthread_barrier_wait(&barrier);
  double start = now_s(), elapsed;
  uint64_t iterations = 0;
  do {
    for (int i = 0; i < BLOCK; i++) {
#pragma GCC unroll 16
      for (int a = 0; a < ACCS; a++) acc[a] = VFMA(acc[a], m, c);
    }
    iterations += BLOCK;
    elapsed = now_s() - start;
  } while (elapsed < min_seconds);
  float total = 0;
  for (int a = 0; a < ACCS; a++) total += VSUM(acc[a]);
  sink = total;
  j->seconds = elapsed;
  j->iterations = iterations;
  return NULL;
}

static void parse_cores(const char *s) {
  const char *p = s;
  while (*p) {
    char *end;
    long c = strtol(p, &end, 10);
    if (end == p || c < 0 || c >= CPU_SETSIZE || ncores == MAX_CORES || (*end && *end != ',')) fail("--cores expects a list of core ids");
    cores[ncores++] = (int)c;
    p = *end == ',' ? end + 1 : end;
  }
}

int main(int argc, char **argv) {
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--cores")) parse_cores(argv[i + 1]);
    else if (!strcmp(argv[i], "--ms")) min_seconds = atof(argv[i + 1]) / 1000.0;
    else if (!strcmp(argv[i], "--reps")) reps = (int)strtol(argv[i + 1], NULL, 10);
    else fail("unknown option");
  }
  if (ncores == 0) fail("--cores is required");
  if (reps < 1 || min_seconds <= 0) fail("--reps and --ms must be positive");
  struct job *jobs = calloc((size_t)ncores, sizeof *jobs);
  if (!jobs) fail("out of memory");
  for (int r = 0; r < reps; r++) {
    pthread_barrier_init(&barrier, NULL, (unsigned)ncores);
    for (int t = 0; t < ncores; t++) {
      jobs[t].core = cores[t];
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cores[t], &set);
      int rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
      if (!rc) rc = pthread_create(&jobs[t].thread, &attr, run, &jobs[t]);
      pthread_attr_destroy(&attr);
      if (rc) fail("cannot start a thread pinned to a requested core");
    }
    for (int t = 0; t < ncores; t++) pthread_join(jobs[t].thread, NULL);
    pthread_barrier_destroy(&barrier);
    printf("{\"rep\":%d,\"isa\":\"%s\",\"accumulators\":%d,\"gflops\":[", r, ISA, ACCS);
    for (int t = 0; t < ncores; t++) {
      double flops = (double)jobs[t].iterations * ACCS * LANES * 2.0;
      printf("%s%.3f", t ? "," : "", flops / jobs[t].seconds / 1e9);
    }
    printf("]}\n");
    fflush(stdout);
  }
  return 0;
}
