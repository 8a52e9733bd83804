/*
 * Measured copy bandwidth: what a plain memcpy moves per second on the given cores, for buffers of
 * each given size (read N bytes, write N bytes: 2N bytes moved per copy). One thread per core,
 * pinned; each copies its own contiguous share of the buffers over and over for at least --ms, the
 * threads released together at a barrier, and a repetition's rate is the sum of the threads' rates.
 * The buffers stay allocated and warm across copies, so a size that fits a cache level measures
 * that level: the reference for a runtime op that reads what the step before it just wrote.
 *
 *   copybw --cores 0,1 --ms 20 --reps 5 --bytes 65536,1048576
 *   {"bytes":65536,"gbps":[...one per rep...]}
 *
 * Build: cc -O2 -pthread copybw.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CORES 1024
#define MAX_SIZES 4096

typedef struct {
  int core;
  char* src;
  char* dst;
  size_t len;
  double ms;
  pthread_barrier_t* start;
  long copies;
  double seconds;
  int error;
} job;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void* run(void* p) {
  job* j = p;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(j->core, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) j->error = errno;
  memset(j->src, 1, j->len);
  memset(j->dst, 2, j->len);
  for (int w = 0; w < 3; w++) memcpy(j->dst, j->src, j->len);
  pthread_barrier_wait(j->start);
  /* Copies between clock reads: enough that the clock costs nothing against them. */
  long batch = j->len >= (1 << 20) ? 1 : (long)((1 << 20) / (j->len + 1)) + 1;
  double t0 = now(), t = t0;
  long n = 0;
  do {
    for (long i = 0; i < batch; i++) {
      memcpy(j->dst, j->src, j->len);
      __asm__ volatile("" : : "r"(j->dst) : "memory");
    }
    n += batch;
    t = now();
  } while ((t - t0) * 1e3 < j->ms);
  j->copies = n;
  j->seconds = t - t0;
  return NULL;
}

static int parse_list(const char* s, long* out, int max) {
  int n = 0;
  while (*s && n < max) {
    char* end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0) return -1;
    out[n++] = v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return n;
}

int main(int argc, char** argv) {
  long cores[MAX_CORES], sizes[MAX_SIZES];
  int ncores = 0, nsizes = 0, reps = 5;
  double ms = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--cores")) ncores = parse_list(argv[i + 1], cores, MAX_CORES);
    else if (!strcmp(argv[i], "--bytes")) nsizes = parse_list(argv[i + 1], sizes, MAX_SIZES);
    else if (!strcmp(argv[i], "--ms")) ms = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else { printf("{\"error\":\"unknown option %s\"}\n", argv[i]); return 2; }
  }
  if (ncores < 1 || nsizes < 1 || reps < 1 || ms <= 0) {
    printf("{\"error\":\"usage: copybw --cores 0,1 --bytes N[,N...] [--ms 20] [--reps 5]\"}\n");
    return 2;
  }
  for (int s = 0; s < nsizes; s++) {
    size_t total = (size_t)sizes[s], share = (total / (size_t)ncores + 63) & ~(size_t)63;
    if (share == 0) share = 64;
    printf("{\"bytes\":%zu,\"gbps\":[", total);
    for (int r = 0; r < reps; r++) {
      pthread_barrier_t start;
      pthread_barrier_init(&start, NULL, (unsigned)ncores);
      job jobs[MAX_CORES];
      pthread_t th[MAX_CORES];
      for (int c = 0; c < ncores; c++) {
        char *src = aligned_alloc(64, share), *dst = aligned_alloc(64, share);
        if (!src || !dst) { printf("]}\n{\"error\":\"out of memory for %zu bytes\"}\n", share); return 1; }
        jobs[c] = (job){ .core = (int)cores[c], .src = src, .dst = dst, .len = share, .ms = ms, .start = &start };
        pthread_create(&th[c], NULL, run, &jobs[c]);
      }
      double slowest = 0, moved = 0;
      int error = 0;
      for (int c = 0; c < ncores; c++) {
        pthread_join(th[c], NULL);
        if (jobs[c].error) error = jobs[c].error;
        /* Each thread's rate over its own time; the sum is what the cores moved together. */
        moved += 2.0 * (double)jobs[c].len * (double)jobs[c].copies / jobs[c].seconds;
        if (jobs[c].seconds > slowest) slowest = jobs[c].seconds;
        free(jobs[c].src);
        free(jobs[c].dst);
      }
      pthread_barrier_destroy(&start);
      if (error) { printf("]}\n{\"error\":\"cannot pin to a core: %s\"}\n", strerror(error)); return 1; }
      printf("%s%.3f", r ? "," : "", moved / 1e9);
    }
    printf("]}\n");
  }
  return 0;
}
