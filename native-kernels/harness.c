/*
 * veltair measurement harness: runs in a child process, one or more jobs serially.
 *   harness [--cores 0,1] [--min-time-ms 100] [--min-repeats 3] [--max-repeats 1000] [--flush 0|1]
 *           [--seed N] [--handshake] [--ref-cache DIR] --job SO SYMBOL THREADS [--job …]
 * Per job: prints {"job":i,"event":"ready"}; with --handshake waits for one line on stdin (the
 * caller starts/stops interference around it; "skip" answers {"job":i,"event":"result","status":
 * "skipped"} and runs nothing); loads the candidate, packs seeded random operands,
 * checks the output against the reference (tolerance below), then times: one warm-up call, then
 * repeats until --min-time-ms and --min-repeats are both reached. Without --flush a repeat runs
 * the kernel `number` times (number chosen so a repeat lasts ≥ 1 ms) and reports the per-call
 * time; with --flush every call is timed alone after clflush of the packed weights and input.
 * Prints {"job":i,"event":"result","status":"ok"|"wrong"|"crash",…} on one line, flushed.
 * Tolerance: |out - ref| ≤ 1e-5 · sqrt(K) · max(1, max|ref|) element-wise (K = reduction length),
 * compared in the blocked layout so padded channels must be exactly zero too.
 * The kernel's workspace (desc->workspace_bytes) is allocated once per candidate, filled with NaN
 * bytes so a kernel that reads scratch it did not write fails verification, and reused by every call.
 * Verified once: a job naming the same kernel (SO, symbol, threads) as the last job this child
 * verified ok (the same candidate at the next interference level) skips the check; its first
 * call is then the warm-up. The operands and the check are the same, so a second check adds time only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>
#include "veltair_kernel.h"
#include "reference.h"

typedef struct { const char* so; const char* sym; int threads; } job_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static float* falloc(size_t n) {
  size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
  float* p = aligned_alloc(64, bytes ? bytes : 64);
  if (!p) { fprintf(stderr, "out of memory (%zu floats)\n", n); exit(3); }
  memset(p, 0, bytes ? bytes : 64);
  return p;
}

static uint64_t rng_state;
static float urand(void) { /* xorshift64*, uniform in [-1, 1) */
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  return (float)((rng_state * 2685821657736338717ULL) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}
static void fill(float* p, size_t n) { for (size_t i = 0; i < n; ++i) p[i] = urand(); }

static void flush_lines(const void* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) _mm_clflush((const char*)p + off);
  _mm_mfence();
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Runtime values for the parameterised epilogue steps, chosen to exercise both sides of each. */
static void epilogue_params(const vt_desc* d, float* p) {
  int k = 0;
  for (int s = 0; s < d->n_epi; ++s) {
    if (d->epi[s] == VT_EPI_CLIP) { p[k++] = -0.25f; p[k++] = 0.5f; }
    else if (d->epi[s] == VT_EPI_LEAKY_RELU) p[k++] = 0.1f;
    else if (d->epi[s] == VT_EPI_HARD_SIGMOID) { p[k++] = 0.2f; p[k++] = 0.5f; }
  }
}

/* Natural [groups][C] → blocked [groups][Cpad] (bias: groups = 1; gates: one row per batch entry). */
static void pad_rows(const float* src, float* dst, size_t rows, size_t c, size_t cpad) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < cpad; ++j) dst[r * cpad + j] = j < c ? src[r * c + j] : 0.0f;
}

/*
 * Natural operands and the reference output of the last workload seen, kept across jobs: a batch
 * usually measures many schedules of one workload, and the naive reference is the slow part.
 */
typedef struct {
  int key[64];
  int nkey;
  uint64_t seed;
  float *in, *w, *bias, *res, *gate, *ref;
  double ref_ms;
  int from_disk; /* ref was read from --ref-cache, not computed by this child */
} operands_t;

static int workload_key(const vt_desc* d, int* k) {
  int n = 0;
  const int fields[] = {d->op, d->n, d->cin, d->h, d->w, d->cout, d->kh, d->kw, d->stride_h, d->stride_w, d->pad_t,
    d->pad_l, d->pad_b, d->pad_r, d->dil_h, d->dil_w, d->groups, d->oh, d->ow, d->batch, d->m, d->k, d->nn,
    d->trans_b, d->n_epi};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) k[n++] = fields[i];
  for (int i = 0; i < d->n_epi && i < VT_MAX_EPI; ++i) k[n++] = d->epi[i];
  return n;
}

/*
 * The reference outputs across children (--ref-cache DIR): one tuning pass starts a child per batch,
 * and the naive reference of a large layer takes a few hundred ms, so each workload's is computed
 * once per pass and then read back. DIR is named after this harness build (the caller's job), so a
 * changed reference.c never reads old outputs. A file holds its key, seed and a checksum of its floats
 * ahead of them, all checked on read: a collision, a torn or a damaged file is a miss. Written under a
 * unique temp name (mkstemp) and renamed, so readers see whole files only. And a reference read from
 * disk never condemns a kernel alone: a check that fails against it is repeated against one computed
 * here (run_job). Cheap references are not written. The cache only ever makes a child faster: any
 * failure to read or write it is a miss.
 */
static const char* ref_cache_dir;
#define REF_CACHE_MIN_MS 20.0
#define REF_PATH_MAX 4096

typedef struct { uint32_t magic; int32_t nkey; uint64_t seed; uint64_t nout; uint64_t sum; int32_t key[64]; } ref_header_t;
#define REF_MAGIC 0x32465256u /* "VRF2" */

static uint64_t fnv1a(const void* p, size_t bytes) {
  const unsigned char* b = p;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; ++i) { h ^= b[i]; h *= 1099511628211ULL; }
  return h;
}

/* 0 when the path does not fit: no cache for this one. */
static int ref_cache_path(const int* key, int n, uint64_t seed, char* out, size_t cap) {
  if (!ref_cache_dir) return 0;
  const uint64_t h = fnv1a(key, sizeof(int) * (size_t)n) ^ seed;
  const int len = snprintf(out, cap, "%s/ref-%016llx.f32", ref_cache_dir, (unsigned long long)h);
  return len > 0 && (size_t)len < cap - 16; /* room for the temp suffix */
}

static int ref_cache_read(const int* key, int n, uint64_t seed, float* ref, size_t nout) {
  char path[REF_PATH_MAX];
  if (!ref_cache_path(key, n, seed, path, sizeof path)) return 0;
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  ref_header_t hd;
  int ok = fread(&hd, sizeof hd, 1, f) == 1 && hd.magic == REF_MAGIC && hd.nkey == n && hd.seed == seed && hd.nout == nout
    && !memcmp(hd.key, key, sizeof(int) * (size_t)n) && fread(ref, sizeof(float), nout, f) == nout
    && fnv1a(ref, sizeof(float) * nout) == hd.sum;
  fclose(f);
  return ok;
}

static void ref_cache_write(const int* key, int n, uint64_t seed, const float* ref, size_t nout) {
  char path[REF_PATH_MAX], temp[REF_PATH_MAX];
  if (!ref_cache_path(key, n, seed, path, sizeof path)) return;
  snprintf(temp, sizeof temp, "%s.XXXXXX", path);
  ref_header_t hd;
  memset(&hd, 0, sizeof hd);
  hd.magic = REF_MAGIC; hd.nkey = n; hd.seed = seed; hd.nout = nout; hd.sum = fnv1a(ref, sizeof(float) * nout);
  memcpy(hd.key, key, sizeof(int) * (size_t)n);
  const int fd = mkstemp(temp);
  if (fd < 0) return;
  FILE* f = fdopen(fd, "wb");
  if (!f) { close(fd); remove(temp); return; }
  int ok = fwrite(&hd, sizeof hd, 1, f) == 1 && fwrite(ref, sizeof(float), nout, f) == nout;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(temp, path) != 0) remove(temp);
}

/* fresh: compute the reference here even when the cache has it. */
static const operands_t* operands_for(const vt_desc* d, uint64_t seed, int fresh) {
  static operands_t c;
  int key[64];
  const int n = workload_key(d, key);
  if (!fresh && c.ref && c.nkey == n && c.seed == seed && !memcmp(c.key, key, sizeof(int) * (size_t)n)) return &c;
  free(c.in); free(c.w); free(c.bias); free(c.res); free(c.gate); free(c.ref);
  memcpy(c.key, key, sizeof key);
  c.nkey = n;
  c.seed = seed;
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
  const size_t nin = vt_ref_input_floats(d), nw = vt_ref_weight_floats(d), nout = vt_ref_output_floats(d);
  const size_t nch = vt_ref_out_channels(d), ngate = vt_ref_chanmul_floats(d);
  c.in = falloc(nin); c.w = falloc(nw); c.bias = falloc(nch); c.res = falloc(nout); c.gate = falloc(ngate);
  c.ref = falloc(nout);
  fill(c.in, nin); fill(c.w, nw); fill(c.bias, nch); fill(c.res, nout); fill(c.gate, ngate);
  float params[2 * VT_MAX_EPI];
  epilogue_params(d, params);
  const double t0 = now_ms();
  c.from_disk = !fresh && ref_cache_read(key, n, seed, c.ref, nout);
  if (c.from_disk) {
    c.ref_ms = 0;
    return &c;
  }
  vt_reference(d, c.in, c.w, c.bias, c.res, c.gate, params, c.ref);
  c.ref_ms = now_ms() - t0;
  if (c.ref_ms >= REF_CACHE_MIN_MS) ref_cache_write(key, n, seed, c.ref, nout);
  return &c;
}

static void* alloc_bytes(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = aligned_alloc(64, rounded ? rounded : 64);
  if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", bytes); exit(3); }
  memset(p, 0xff, rounded ? rounded : 64); /* all-ones floats are NaN: unwritten scratch shows */
  return p;
}

static void* sym_of(void* h, const char* sym, const char* suffix) {
  char name[128];
  snprintf(name, sizeof name, "%s%s", sym, suffix);
  return dlsym(h, name);
}

static size_t round_up(size_t x, size_t v) { return (x + v - 1) / v * v; }

/*
 * The sizes a descriptor must state for the output/bias layouts the ABI fixes, and the least it may
 * state for input and weight (their layouts may vary by schedule). A kernel built against another
 * vt_desc layout fails this instead of sending the harness through garbage sizes (SIGSEGV).
 */
static const char* desc_mismatch(const vt_desc* d) {
  if (d->op < VT_OP_CONV2D || d->op > VT_OP_BATCH_MATMUL) return "bad op";
  if (d->vec != 1 && d->vec != 8 && d->vec != 16) return "bad vec";
  if (d->n_epi < 0 || d->n_epi > VT_MAX_EPI) return "bad n_epi";
  const size_t v = (size_t)d->vec;
  size_t out, bias;
  if (d->op == VT_OP_CONV2D) {
    if (d->n < 1 || d->cin < 1 || d->cout < 1 || d->groups < 1 || d->oh < 1 || d->ow < 1) return "bad conv dims";
    bias = round_up((size_t)d->cout, v);
    out = (size_t)d->n * bias * d->oh * d->ow;
  } else {
    const size_t b = d->op == VT_OP_DENSE ? 1 : (size_t)d->batch;
    if (b < 1 || d->m < 1 || d->k < 1 || d->nn < 1) return "bad matmul dims";
    bias = round_up((size_t)d->nn, v);
    out = b * d->m * bias;
  }
  const size_t gate = (d->op == VT_OP_BATCH_MATMUL ? (size_t)d->batch : d->op == VT_OP_CONV2D ? (size_t)d->n : 1) * bias;
  if (d->output_floats != out || d->bias_floats != bias) return "output/bias sizes disagree with the ABI layout";
  if (d->chanmul_floats != gate) return "chanmul size disagrees with the ABI layout";
  if (d->input_floats < vt_ref_input_floats(d) || d->weight_floats < vt_ref_weight_floats(d)) return "input/weight sizes too small";
  if (d->workspace_bytes > ((size_t)1 << 40)) return "workspace size implausible";
  return 0;
}

/* The last job this child verified ok: a later job for the same kernel needs no second check. */
static const job_t* last_verified;
static double last_verified_err;

static int same_kernel(const job_t* a, const job_t* b) {
  return a && b && a->threads == b->threads && !strcmp(a->so, b->so) && !strcmp(a->sym, b->sym);
}

/* |out - ref| <= 1e-5 * sqrt(K) * max(1, max|ref|) (K: the reduction length), element-wise. */
static double tolerance_of(const vt_desc* d, const float* bref) {
  double max_ref = 1.0;
  for (size_t i = 0; i < d->output_floats; ++i) if (fabs(bref[i]) > max_ref) max_ref = fabs(bref[i]);
  return 1e-5 * sqrt((double)vt_ref_reduction_length(d)) * max_ref;
}

static int matches(const vt_desc* d, const float* bout, const float* bref, double tol, double* max_err) {
  int ok = 1;
  *max_err = 0.0;
  for (size_t i = 0; i < d->output_floats; ++i) {
    double e = fabs((double)bout[i] - (double)bref[i]);
    if (!(e <= tol)) { ok = 0; if (isnan(e)) { *max_err = INFINITY; break; } }
    if (e > *max_err) *max_err = e;
  }
  return ok;
}

static void run_job(int idx, const job_t* j, double min_ms, int min_rep, int max_rep, int flush, uint64_t seed) {
  void* h = dlopen(j->so, RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("{\"job\":%d,\"event\":\"result\",\"status\":\"crash\",\"message\":\"dlopen failed\"}\n", idx); fflush(stdout); return; }
  vt_desc_fn desc_fn = (vt_desc_fn)sym_of(h, j->sym, "_desc");
  vt_pack_fn pin = (vt_pack_fn)sym_of(h, j->sym, "_pack_input"), pw = (vt_pack_fn)sym_of(h, j->sym, "_pack_weight");
  vt_pack_fn pout = (vt_pack_fn)sym_of(h, j->sym, "_pack_output");
  vt_run_fn run = (vt_run_fn)sym_of(h, j->sym, "_run");
  if (!desc_fn || !pin || !pw || !pout || !run || desc_fn()->abi_version != VT_ABI_VERSION) {
    printf("{\"job\":%d,\"event\":\"result\",\"status\":\"crash\",\"message\":\"symbol missing or ABI mismatch\"}\n", idx);
    fflush(stdout); return;
  }
  const vt_desc* d = desc_fn();
  const char* bad = desc_mismatch(d);
  if (bad) {
    printf("{\"job\":%d,\"event\":\"result\",\"status\":\"crash\",\"message\":\"descriptor inconsistent (%s): "
           "kernel built against other headers?\"}\n", idx, bad);
    fflush(stdout); return;
  }
  const operands_t* o = operands_for(d, seed, 0);
  const size_t nch = vt_ref_out_channels(d), ngate = vt_ref_chanmul_floats(d);
  float params[2 * VT_MAX_EPI];
  epilogue_params(d, params);
  const float *in = o->in, *w = o->w, *bias = o->bias, *res = o->res, *gate = o->gate, *ref = o->ref;
  double ref_ms = o->ref_ms;

  float *bin = falloc(d->input_floats), *bw = falloc(d->weight_floats), *bout = falloc(d->output_floats);
  float *bres = falloc(d->output_floats), *bref = falloc(d->output_floats);
  float *bbias = falloc(d->bias_floats), *bgate = falloc(d->chanmul_floats);
  void* ws = d->workspace_bytes ? alloc_bytes(d->workspace_bytes) : NULL;
  pin(in, bin); pw(w, bw); pout(res, bres); pout(ref, bref);
  pad_rows(bias, bbias, 1, nch, d->bias_floats);
  pad_rows(gate, bgate, ngate / nch, nch, d->bias_floats);
  for (size_t i = 0; i < d->output_floats; ++i) bout[i] = NAN;

  run(bin, bw, bbias, bres, bgate, params, bout, ws, j->threads);
  double tol = tolerance_of(d, bref), max_err = 0.0;
  int ok = 1, ref_cached = o->from_disk;
  const int verified_before = same_kernel(last_verified, j);
  if (!verified_before) {
    ok = matches(d, bout, bref, tol, &max_err);
    if (!ok && o->from_disk) { /* a stored reference never condemns a kernel alone: check against one computed here */
      o = operands_for(d, seed, 1);
      ref_ms = o->ref_ms;
      ref_cached = 0;
      pout(o->ref, bref);
      tol = tolerance_of(d, bref);
      ok = matches(d, bout, bref, tol, &max_err);
    }
  } else {
    max_err = last_verified_err; /* reported as measured by the check it reuses */
  }
  last_verified = ok ? j : NULL;
  last_verified_err = max_err;
  if (!ok) {
    /* %g prints inf (a NaN output) as "inf", which is not JSON: the result would be lost as a crash. */
    if (isfinite(max_err))
      printf("{\"job\":%d,\"event\":\"result\",\"status\":\"wrong\",\"maxAbsErr\":%g,\"tolerance\":%g}\n", idx, max_err, tol);
    else
      printf("{\"job\":%d,\"event\":\"result\",\"status\":\"wrong\",\"message\":\"non-finite output\",\"tolerance\":%g}\n", idx, tol);
    fflush(stdout);
  } else {
    run(bin, bw, bbias, bres, bgate, params, bout, ws, j->threads); /* warm-up */
    double one = now_ms();
    run(bin, bw, bbias, bres, bgate, params, bout, ws, j->threads);
    one = now_ms() - one;
    int number = flush || one >= 1.0 ? 1 : (int)ceil(1.0 / (one > 1e-6 ? one : 1e-6));
    double* reps = malloc(sizeof(double) * (size_t)max_rep);
    int n = 0;
    double total = 0;
    while (n < max_rep && (n < min_rep || total < min_ms)) {
      if (flush) { flush_lines(bw, d->weight_floats * 4); flush_lines(bin, d->input_floats * 4); }
      double s = now_ms();
      for (int k = 0; k < number; ++k) run(bin, bw, bbias, bres, bgate, params, bout, ws, j->threads);
      double e = now_ms() - s;
      total += e;
      reps[n++] = e / number;
    }
    double* sorted = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (n > 0) memcpy(sorted, reps, sizeof(double) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(double), cmp_double);
    /* main() keeps max_rep >= min_rep >= 1, so n >= 1; a zero count still never indexes sorted[-1]. */
    double median = n == 0 ? NAN : n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    printf("{\"job\":%d,\"event\":\"result\",\"status\":\"ok\",\"medianMs\":%.6g,\"number\":%d,\"maxAbsErr\":%g,"
           "\"tolerance\":%g,\"referenceMs\":%.4g,\"referenceCached\":%s,\"repeatsMs\":[", idx, median, number, max_err, tol, ref_ms,
           ref_cached ? "true" : "false");
    for (int k = 0; k < n; ++k) printf("%s%.6g", k ? "," : "", reps[k]);
    printf("]}\n");
    fflush(stdout);
    free(reps); free(sorted);
  }
  free(bin); free(bw); free(bout); free(bres); free(bref); free(bbias); free(bgate); free(ws);
}

/* A decimal integer in [lo, hi] filling the whole string; 0 and *ok = 0 otherwise (atoi has neither). */
static long parse_long(const char* s, long lo, long hi, int* ok) {
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end != '\0' || v < lo || v > hi) { *ok = 0; return 0; }
  return v;
}

static double parse_ms(const char* s, int* ok) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= 0 && v <= 3.6e6)) { *ok = 0; return 0; }
  return v;
}

/* CPU_SET on a core outside the set's CPU_SETSIZE bits writes past it: every number is checked first. */
static int pin_cores(const char* list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  char* copy = strdup(list);
  int ok = copy != NULL, any = 0;
  for (char* tok = copy ? strtok(copy, ",") : NULL; ok && tok; tok = strtok(NULL, ",")) {
    long core = parse_long(tok, 0, CPU_SETSIZE - 1, &ok);
    if (ok) { CPU_SET((int)core, &set); any = 1; }
  }
  free(copy);
  if (!ok || !any) { fprintf(stderr, "harness: --cores %s is not a list of core numbers 0..%d\n", list, CPU_SETSIZE - 1); return 0; }
  if (sched_setaffinity(0, sizeof set, &set) != 0) perror("sched_setaffinity");
  return 1;
}

int main(int argc, char** argv) {
  double min_ms = 100;
  int min_rep = 3, max_rep = 1000, flush = 0, handshake = 0, njobs = 0;
  uint64_t seed = 1;
  job_t* jobs = calloc((size_t)argc, sizeof(job_t));
  int ok = 1;
  for (int i = 1; ok && i < argc; ++i) {
    if (!strcmp(argv[i], "--cores") && i + 1 < argc) ok = pin_cores(argv[++i]);
    else if (!strcmp(argv[i], "--min-time-ms") && i + 1 < argc) min_ms = parse_ms(argv[++i], &ok);
    else if (!strcmp(argv[i], "--min-repeats") && i + 1 < argc) min_rep = (int)parse_long(argv[++i], 1, 1000000, &ok);
    else if (!strcmp(argv[i], "--max-repeats") && i + 1 < argc) max_rep = (int)parse_long(argv[++i], 1, 1000000, &ok);
    else if (!strcmp(argv[i], "--flush") && i + 1 < argc) flush = (int)parse_long(argv[++i], 0, 1, &ok);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = (uint64_t)parse_long(argv[++i], 0, LONG_MAX, &ok);
    else if (!strcmp(argv[i], "--handshake")) handshake = 1;
    else if (!strcmp(argv[i], "--ref-cache") && i + 1 < argc) ref_cache_dir = argv[++i];
    else if (!strcmp(argv[i], "--job") && i + 3 < argc) {
      jobs[njobs].so = argv[i + 1]; jobs[njobs].sym = argv[i + 2]; jobs[njobs].threads = (int)parse_long(argv[i + 3], 1, 4096, &ok);
      ++njobs; i += 3;
    } else { fprintf(stderr, "harness: bad argument %s\n", argv[i]); return 2; }
    if (!ok) { fprintf(stderr, "harness: bad value for %s\n", argv[i]); return 2; }
  }
  if (!ok) return 2;
  if (max_rep < min_rep) max_rep = min_rep;
  for (int i = 0; i < njobs; ++i) {
    printf("{\"job\":%d,\"event\":\"ready\"}\n", i);
    fflush(stdout);
    if (handshake) {
      char line[64];
      if (!fgets(line, sizeof line, stdin)) return 0;
      if (!strncmp(line, "skip", 4)) {
        printf("{\"job\":%d,\"event\":\"result\",\"status\":\"skipped\"}\n", i);
        fflush(stdout);
        continue;
      }
    }
    run_job(i, &jobs[i], min_ms, min_rep, max_rep, flush, seed);
  }
  return 0;
}
