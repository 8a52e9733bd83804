/*
 * veltair interference generator (co-runner). One thread per given core, each pinned, applying
 * L3 / memory-bandwidth pressure from a random read-modify-write region and/or a streaming region.
 * All sizes come from argv (src/interference/levels.ts owns the level table); this program only executes
 * them. Protocol on stdout, one JSON object per line:
 *   {"event":"ready",...}   once every thread has touched its buffers (pressure is on from here)
 *   {"event":"stopped",...} on SIGTERM/SIGINT, parent death or --seconds elapsed; then exit 0
 *   {"event":"error",...}   on bad arguments / allocation / pinning failure; then exit 2
 *
 * Build: cc -O2 -march=native -pthread noise.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_CORES 1024
#define LINE 64

enum stream_mode { STREAM_NONE, STREAM_COPY, STREAM_NT };

struct settings {
  int cores[MAX_CORES];
  int ncores;
  size_t random_bytes;      /* total over all threads; each thread owns a disjoint slice */
  size_t stream_bytes;      /* total over all threads; each slice is half source, half destination */
  enum stream_mode mode;
  size_t stream_chunk_bytes; /* streamed per turn before the thread switches to random ops */
  size_t random_ops_per_turn;
  double seconds;            /* 0 = until signalled */
};

struct worker {
  pthread_t thread;
  int core;
  uint8_t *random_base;
  size_t random_len;
  uint8_t *stream_src;
  uint8_t *stream_dst;
  size_t stream_half;
  uint64_t bytes_read, bytes_written, random_ops;
};

static struct settings cfg;
static atomic_int stop_flag;
static atomic_int ready_count;

static void fail(const char *what, const char *detail) {
  printf("{\"event\":\"error\",\"message\":\"%s: %s\"}\n", what, detail);
  fflush(stdout);
  fprintf(stderr, "noise: %s: %s\n", what, detail);
  exit(2);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *isa_name(void) {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__SSE2__)
  return "sse2";
#else
  return "scalar";
#endif
}

/* Anonymous mapping, 2 MiB aligned, asked for huge pages: fewer TLB misses means more misses
 * reach the caches and DRAM per second, i.e. more pressure from the same core. */
static uint8_t *map_region(size_t bytes) {
  if (bytes == 0) return NULL;
  size_t huge = (size_t)2 << 20;
  size_t len = (bytes + huge - 1) / huge * huge + huge;
  uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("mmap", strerror(errno));
  uint8_t *aligned = (uint8_t *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
  madvise(aligned, len - (size_t)(aligned - p), MADV_HUGEPAGE);
#endif
  return aligned;
}

/* Independent addresses (not a pointer chase) so the core keeps many misses in flight. */
static uint64_t random_rmw(uint8_t *base, size_t len, uint64_t *state, size_t ops) {
  uint64_t s = *state, sum = 0;
  uint64_t lines = len / LINE;
  for (size_t i = 0; i < ops; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t line = (uint64_t)(((unsigned __int128)(s >> 16) * lines) >> 48);
    uint64_t *word = (uint64_t *)(base + line * LINE);
    uint64_t v = *word + 1;
    *word = v;
    sum += v;
  }
  *state = s;
  return sum;
}

/* Regular loads and stores: the stores read-for-ownership, so each byte written costs a read too. */
static void stream_copy(const float *src, float *dst, size_t n) {
#if defined(__AVX512F__)
  const __m512 k = _mm512_set1_ps(1.0f);
  for (size_t i = 0; i + 16 <= n; i += 16) _mm512_store_ps(dst + i, _mm512_add_ps(_mm512_load_ps(src + i), k));
#elif defined(__AVX2__)
  const __m256 k = _mm256_set1_ps(1.0f);
  for (size_t i = 0; i + 8 <= n; i += 8) _mm256_store_ps(dst + i, _mm256_add_ps(_mm256_load_ps(src + i), k));
#else
  for (size_t i = 0; i < n; i++) dst[i] = src[i] + 1.0f;
#endif
}

/* Streaming loads + non-temporal stores: write bandwidth without RFO, bypassing (and so not
 * protecting) the caches, the heaviest DRAM traffic one core can issue. */
static void stream_nt(const float *src, float *dst, size_t n) {
#if defined(__AVX512F__)
  const __m512 k = _mm512_set1_ps(1.0f);
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m512 v = _mm512_castsi512_ps(_mm512_stream_load_si512((void *)(src + i)));
    _mm512_stream_ps(dst + i, _mm512_add_ps(v, k));
  }
#elif defined(__AVX2__)
  const __m256 k = _mm256_set1_ps(1.0f);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    __m256 v = _mm256_castsi256_ps(_mm256_stream_load_si256((const __m256i *)(src + i)));
    _mm256_stream_ps(dst + i, _mm256_add_ps(v, k));
  }
#elif defined(__SSE2__)
  const __m128 k = _mm_set1_ps(1.0f);
  for (size_t i = 0; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_add_ps(_mm_load_ps(src + i), k));
#else
  for (size_t i = 0; i < n; i++) dst[i] = src[i] + 1.0f;
#endif
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

static void touch(uint8_t *p, size_t len, uint8_t value) {
  if (len) memset(p, value, len);
}

static volatile uint64_t sink;

static void *run_worker(void *arg) {
  struct worker *w = arg;
  touch(w->random_base, w->random_len, 1);
  touch(w->stream_src, w->stream_half, 0);
  touch(w->stream_dst, w->stream_half, 0);
  atomic_fetch_add(&ready_count, 1);
  /* Start together, so the traffic counted is traffic during the announced interval. */
  while (atomic_load(&ready_count) < cfg.ncores && !atomic_load(&stop_flag)) sched_yield();

  uint64_t state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)w->core * 0xD1B54A32D192ED03ULL, acc = 0;
  size_t offset = 0;
  size_t chunk = cfg.stream_chunk_bytes < w->stream_half ? cfg.stream_chunk_bytes : w->stream_half;
  chunk = chunk / LINE * LINE;
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    if (chunk > 0) {
      if (offset + chunk > w->stream_half) offset = 0;
      const float *src = (const float *)(w->stream_src + offset);
      float *dst = (float *)(w->stream_dst + offset);
      if (cfg.mode == STREAM_NT) stream_nt(src, dst, chunk / sizeof(float));
      else stream_copy(src, dst, chunk / sizeof(float));
      offset += chunk;
      w->bytes_read += chunk;
      w->bytes_written += chunk;
    }
    if (w->random_len >= LINE && cfg.random_ops_per_turn > 0) {
      acc += random_rmw(w->random_base, w->random_len, &state, cfg.random_ops_per_turn);
      w->random_ops += cfg.random_ops_per_turn;
    }
  }
  sink = acc;
  return NULL;
}

static size_t parse_size(const char *s, const char *flag) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-') fail(flag, "expects a non-negative integer");
  return (size_t)v;
}

static void parse_cores(const char *s) {
  const char *p = s;
  while (*p) {
    char *end;
    long c = strtol(p, &end, 10);
    if (end == p || c < 0 || c >= CPU_SETSIZE) fail("--cores", "expects a comma-separated list of core ids");
    if (cfg.ncores == MAX_CORES) fail("--cores", "too many cores");
    cfg.cores[cfg.ncores++] = (int)c;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') fail("--cores", "expects a comma-separated list of core ids");
  }
}

static void parse_args(int argc, char **argv) {
  cfg.stream_chunk_bytes = (size_t)1 << 20;
  cfg.random_ops_per_turn = 4096;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) fail(a, "missing value");
    const char *v = argv[++i];
    if (!strcmp(a, "--cores")) parse_cores(v);
    else if (!strcmp(a, "--random-bytes")) cfg.random_bytes = parse_size(v, a);
    else if (!strcmp(a, "--stream-bytes")) cfg.stream_bytes = parse_size(v, a);
    else if (!strcmp(a, "--stream-chunk-bytes")) cfg.stream_chunk_bytes = parse_size(v, a);
    else if (!strcmp(a, "--random-ops-per-turn")) cfg.random_ops_per_turn = parse_size(v, a);
    else if (!strcmp(a, "--seconds")) cfg.seconds = strtod(v, NULL);
    else if (!strcmp(a, "--stream-mode")) {
      if (!strcmp(v, "none")) cfg.mode = STREAM_NONE;
      else if (!strcmp(v, "copy")) cfg.mode = STREAM_COPY;
      else if (!strcmp(v, "nt")) cfg.mode = STREAM_NT;
      else fail(a, "expects none, copy or nt");
    } else fail(a, "unknown option");
  }
  if (cfg.ncores == 0) fail("--cores", "at least one core is required");
  if (cfg.mode == STREAM_NONE) cfg.stream_bytes = 0;
  if (cfg.random_bytes == 0 && cfg.stream_bytes == 0) fail("settings", "nothing to do: random and stream bytes are both 0");
}

int main(int argc, char **argv) {
  parse_args(argc, argv);
  /* If the parent dies without stopping us, we get SIGTERM: never an orphaned co-runner. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() == 1) return 0;

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL); /* inherited by workers: only main waits */

  int n = cfg.ncores;
  size_t per_random = cfg.random_bytes / (size_t)n / LINE * LINE;
  size_t per_half = cfg.stream_bytes / 2 / (size_t)n / 4096 * 4096;
  if (per_random == 0 && per_half == 0) fail("settings", "buffers too small for the number of cores");
  uint8_t *random_region = map_region(per_random * (size_t)n);
  uint8_t *stream_region = map_region(per_half * 2 * (size_t)n);
  struct worker *workers = calloc((size_t)n, sizeof *workers);
  if (!workers) fail("calloc", strerror(errno));

  for (int i = 0; i < n; i++) {
    struct worker *w = &workers[i];
    w->core = cfg.cores[i];
    w->random_base = random_region ? random_region + (size_t)i * per_random : NULL;
    w->random_len = random_region ? per_random : 0;
    w->stream_half = stream_region ? per_half : 0;
    w->stream_src = stream_region ? stream_region + (size_t)i * 2 * per_half : NULL;
    w->stream_dst = stream_region ? w->stream_src + per_half : NULL;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->core, &set);
    int rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    if (!rc) rc = pthread_create(&w->thread, &attr, run_worker, w);
    pthread_attr_destroy(&attr);
    if (rc) {
      char detail[96];
      snprintf(detail, sizeof detail, "cannot start a thread pinned to core %d (%s)", w->core, strerror(rc));
      atomic_store(&stop_flag, 1);
      for (int j = 0; j < i; j++) pthread_join(workers[j].thread, NULL);
      fail("pin", detail);
    }
  }

  double started = now_s();
  int got_signal = 0;
  struct timespec tick = {0, 1000000};
  while (atomic_load(&ready_count) < n) {
    if (sigtimedwait(&stop_signals, NULL, &tick) > 0) { got_signal = 1; break; }
  }
  double ready_at = now_s();
  if (!got_signal) {
    printf("{\"event\":\"ready\",\"isa\":\"%s\",\"threads\":%d,\"randomBytes\":%zu,\"streamBytes\":%zu,"
           "\"touchSeconds\":%.3f}\n",
           isa_name(), n, per_random * (size_t)n, per_half * 2 * (size_t)n, ready_at - started);
    fflush(stdout);
    for (;;) {
      struct timespec wait = {0, 50000000};
      if (cfg.seconds > 0) {
        double left = cfg.seconds - (now_s() - ready_at);
        if (left <= 0) break;
        if (left < 0.05) wait.tv_nsec = (long)(left * 1e9);
      }
      if (sigtimedwait(&stop_signals, NULL, &wait) > 0) break;
    }
  }
  double stopped_at = now_s();
  atomic_store(&stop_flag, 1);
  uint64_t read = 0, written = 0, ops = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(workers[i].thread, NULL);
    read += workers[i].bytes_read;
    written += workers[i].bytes_written;
    ops += workers[i].random_ops;
  }
  double ran = got_signal ? 0.0 : stopped_at - ready_at;
  printf("{\"event\":\"stopped\",\"seconds\":%.3f,\"streamBytesRead\":%llu,\"streamBytesWritten\":%llu,"
         "\"randomOps\":%llu}\n",
         ran, (unsigned long long)read, (unsigned long long)written, (unsigned long long)ops);
  fflush(stdout);
  return 0;
}
