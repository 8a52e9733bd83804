/*
 * Measured FMA peak: one thread per given core, pinned, each running a tight loop of independent
 * FMAs — 16 accumulators (AVX-512: 32 registers) or 12 (AVX2: 16 registers), enough to cover FMA
 * latency (4-5 cycles) times two FMA ports, so the loop is throughput-bound, not latency-bound.
 * Threads start together at a barrier; each rep prints one JSON line with every thread's GFLOP/s.
 * --kind int8 measures the u8×s8 dot-product peak the INT8 kernels are held to instead: vpdpbusd
 * (AVX-512 VNNI, else AVX-VNNI), else AVX2's vpmaddubsw + vpmaddwd + vpaddd, in giga-operations per
 * second (2 per multiply-add, as GFLOP/s counts an FMA).
 *
 *   peak --cores 0,1 --ms 50 --reps 7 [--kind fp32|int8]
 *   {"rep":0,"isa":"avx512","gflops":[...per thread...]}
 *   {"rep":0,"isa":"avx512-vnni","gops":[...per thread...]}
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

/* The INT8 dot product: u8 bytes of `a` times s8 bytes of `b`, four per 32-bit lane, added to acc. */
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
#define ISA8 "avx512-vnni"
#define ACCS8 16
#define MACS8 64 /* per instruction: 16 lanes × 4 */
typedef __m512i ivec;
#define ISET(x) _mm512_set1_epi32(x)
#define IDOT(acc, a, b) _mm512_dpbusd_epi32(acc, a, b)
#define ILANE0(v) _mm_cvtsi128_si32(_mm512_castsi512_si128(v))
#elif defined(__AVXVNNI__)
#define ISA8 "avx-vnni"
#define ACCS8 12
#define MACS8 32
typedef __m256i ivec;
#define ISET(x) _mm256_set1_epi32(x)
#define IDOT(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#define ILANE0(v) _mm_cvtsi128_si32(_mm256_castsi256_si128(v))
#elif defined(__AVX2__)
#define ISA8 "avx2"
#define ACCS8 8
#define MACS8 32
typedef __m256i ivec;
#define ISET(x) _mm256_set1_epi32(x)
/* What the portable INT8 path does: pairs to s16 (saturating), pairs of those to s32, then add. */
#define IDOT(acc, a, b) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)))
#define ILANE0(v) _mm_cvtsi128_si32(_mm256_castsi256_si128(v))
#else
#define ISA8 "scalar"
#define ACCS8 8
#define MACS8 4
typedef int32_t ivec;
#define ISET(x) (x)
static int32_t IDOT(int32_t acc, int32_t a, int32_t b) {
  for (int i = 0; i < 4; i++) acc += (int32_t)(uint8_t)(a >> (8 * i)) * (int32_t)(int8_t)(b >> (8 * i));
  return acc;
}
#define ILANE0(v) (v)
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
static volatile int32_t isink;
static int int8_kind;

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

static void *run_int8(void *arg) {
  struct job *j = arg;
  /* u8 ones against s8 bytes +1, -1, +1, -1: every dot product adds 0, so no accumulator ever overflows. */
  const ivec a = ISET(0x01010101), b = ISET((int32_t)0xff01ff01);
  ivec acc[ACCS8];
  for (int k = 0; k < ACCS8; k++) acc[k] = ISET(k);
  pthread_barrier_wait(&barrier);
  double start = now_s(), elapsed;
  uint64_t iterations = 0;
  do {
    for (int i = 0; i < BLOCK; i++) {
#pragma GCC unroll 16
      for (int k = 0; k < ACCS8; k++) {
        ivec ak = a;
        __asm__("" : "+x"(ak)); /* opaque: AVX2's products would otherwise be hoisted out of the loop */
        acc[k] = IDOT(acc[k], ak, b);
      }
    }
    iterations += BLOCK;
    elapsed = now_s() - start;
  } while (elapsed < min_seconds);
  int32_t total = 0;
  for (int k = 0; k < ACCS8; k++) total += ILANE0(acc[k]);
  isink = total;
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
    else if (!strcmp(argv[i], "--kind") && (!strcmp(argv[i + 1], "fp32") || !strcmp(argv[i + 1], "int8"))) int8_kind = !strcmp(argv[i + 1], "int8");
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
      if (!rc) rc = pthread_create(&jobs[t].thread, &attr, int8_kind ? run_int8 : run, &jobs[t]);
      pthread_attr_destroy(&attr);
      if (rc) fail("cannot start a thread pinned to a requested core");
    }
    for (int t = 0; t < ncores; t++) pthread_join(jobs[t].thread, NULL);
    pthread_barrier_destroy(&barrier);
    if (int8_kind) printf("{\"rep\":%d,\"isa\":\"%s\",\"accumulators\":%d,\"gops\":[", r, ISA8, ACCS8);
    else printf("{\"rep\":%d,\"isa\":\"%s\",\"accumulators\":%d,\"gflops\":[", r, ISA, ACCS);
    for (int t = 0; t < ncores; t++) {
      double ops = (double)jobs[t].iterations * (int8_kind ? ACCS8 * MACS8 : ACCS * LANES) * 2.0;
      printf("%s%.3f", t ? "," : "", ops / jobs[t].seconds / 1e9);
    }
    printf("]}\n");
    fflush(stdout);
  }
  return 0;
}
