/*
 * Calibration probes for the interference levels. A long-lived child pinned to one kernel core,
 * its buffers allocated and touched once at start, so each measurement times only the probe.
 * Commands on stdin, one per line; one JSON line on stdout per command:
 *   cache MS   — repeated blocked sums over a buffer that fits L2 (compute, cache-resident)
 *   l3 MS      — repeated sums over a buffer larger than L2 but well inside L3
 *   stream MS  — sums over consecutive 16 MiB chunks of a buffer much larger than L3, walked
 *                cyclically (DRAM-bandwidth bound)
 * Each sample is the nanoseconds of one timed unit (~1 ms: a descheduled unit is an outlier the
 * median ignores, not a whole sample lost); units repeat until MS milliseconds have passed.
 * cpuShare = thread CPU time / wall time over the command: below ~0.95 the probe was descheduled,
 * i.e. the machine is oversubscribed and a slowdown is CPU contention, not cache contention.
 *   {"kind":"cache","bytes":…,"passes":…,"cpuShare":0.99,"samplesNs":[...]}
 *
 *   probe --core 0 --cache-bytes 262144 --l3-bytes 8388608 --stream-bytes 1073741824
 * Build: cc -O2 -march=native probe.c
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <signal.h>
#include <time.h>

#define MAX_SAMPLES 100000
#define STREAM_UNIT ((size_t)16 << 20)

static volatile float sink;

static uint64_t clock_ns(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}
static uint64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static void fail(const char *what) {
  printf("{\"error\":\"%s\"}\n", what);
  fflush(stdout);
  fprintf(stderr, "probe: %s\n", what);
  exit(2);
}

static float *alloc_floats(size_t bytes) {
  if (bytes == 0) return NULL;
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("cannot allocate probe buffer");
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);
#endif
  float *f = p;
  for (size_t i = 0; i < bytes / sizeof(float); i++) f[i] = (float)(i % 97) * 0.01f;
  return f;
}

/* Eight independent accumulators so the sum is bound by load bandwidth, not add latency. */
static float sum_pass(const float *x, size_t n) {
#if defined(__AVX512F__)
  __m512 a[8];
  for (int k = 0; k < 8; k++) a[k] = _mm512_setzero_ps();
  for (size_t i = 0; i + 128 <= n; i += 128)
    for (int k = 0; k < 8; k++) a[k] = _mm512_add_ps(a[k], _mm512_load_ps(x + i + 16 * k));
  for (int k = 1; k < 8; k++) a[0] = _mm512_add_ps(a[0], a[k]);
  return _mm512_reduce_add_ps(a[0]);
#elif defined(__AVX2__)
  __m256 a[8];
  for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_ps();
  for (size_t i = 0; i + 64 <= n; i += 64)
    for (int k = 0; k < 8; k++) a[k] = _mm256_add_ps(a[k], _mm256_load_ps(x + i + 8 * k));
  for (int k = 1; k < 8; k++) a[0] = _mm256_add_ps(a[0], a[k]);
  float t[8];
  _mm256_storeu_ps(t, a[0]);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
#else
  float a[8] = {0};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) a[k] += x[i + k];
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
#endif
}

/*
 * Time units of `passes` passes over `unit` bytes until min_ms elapsed; print the samples. When
 * unit < bytes, successive units walk the buffer cyclically (every unit misses the caches).
 */
static void measure(const char *kind, const float *x, size_t bytes, size_t unit, int passes, double min_ms) {
  static uint64_t samples[MAX_SAMPLES];
  static size_t offset;
  if (!x || unit == 0) fail("probe buffer has size 0");
  size_t count = 0;
  uint64_t start = now_ns(), cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID), limit = (uint64_t)(min_ms * 1e6);
  float acc = 0;
  do {
    if (offset + unit > bytes) offset = 0;
    const float *base = x + offset / sizeof(float);
    uint64_t t0 = now_ns();
    for (int p = 0; p < passes; p++) acc += sum_pass(base, unit / sizeof(float));
    samples[count++] = now_ns() - t0;
    if (unit < bytes) offset += unit;
  } while (now_ns() - start < limit && count < MAX_SAMPLES);
  double share = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start) / (double)(now_ns() - start);
  sink = acc;
  printf("{\"kind\":\"%s\",\"bytes\":%zu,\"unitBytes\":%zu,\"passes\":%d,\"cpuShare\":%.4f,\"samplesNs\":[",
         kind, bytes, unit, passes, share);
  for (size_t i = 0; i < count; i++) printf("%s%llu", i ? "," : "", (unsigned long long)samples[i]);
  printf("]}\n");
  fflush(stdout);
}

int main(int argc, char **argv) {
  int core = 0;
  size_t cache_bytes = 256 << 10, l3_bytes = 8 << 20, stream_bytes = (size_t)1 << 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--core")) {
      char *end;
      long c = strtol(argv[i + 1], &end, 10);
      if (end == argv[i + 1] || *end || c < 0 || c >= CPU_SETSIZE) fail("--core expects one core id");
      core = (int)c;
    }
    else if (!strcmp(argv[i], "--cache-bytes")) cache_bytes = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--l3-bytes")) l3_bytes = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--stream-bytes")) stream_bytes = strtoull(argv[i + 1], NULL, 10);
    else fail("unknown option");
  }
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set); /* core < CPU_SETSIZE: checked when parsed */
  if (sched_setaffinity(0, sizeof set, &set)) fail("cannot pin to the requested core");
  float *cache = alloc_floats(cache_bytes), *l3 = alloc_floats(l3_bytes), *stream = alloc_floats(stream_bytes);
  /* Units near 1 ms: short enough for many samples, long enough for the clock. */
  int cache_passes = cache_bytes ? (int)(100000000ULL / cache_bytes) + 1 : 1;
  int l3_passes = l3_bytes ? (int)(40000000ULL / l3_bytes) + 1 : 1;
  printf("{\"event\":\"ready\",\"core\":%d}\n", core);
  fflush(stdout);
  char line[128];
  while (fgets(line, sizeof line, stdin)) {
    char kind[16];
    double ms;
    if (sscanf(line, "%15s %lf", kind, &ms) != 2) {
      if (!strncmp(line, "quit", 4)) break;
      fail("bad command");
    }
    size_t stream_unit = stream_bytes < STREAM_UNIT ? stream_bytes : STREAM_UNIT;
    if (!strcmp(kind, "cache")) measure("cache", cache, cache_bytes, cache_bytes, cache_passes, ms);
    else if (!strcmp(kind, "l3")) measure("l3", l3, l3_bytes, l3_bytes, l3_passes, ms);
    else if (!strcmp(kind, "stream")) measure("stream", stream, stream_bytes, stream_unit, 1, ms);
    else fail("unknown probe kind");
  }
  return 0;
}
