/*
 * The N-API addon: veltair's only bridge between TypeScript and the native runtime.
 *
 * Why a hand-written C N-API addon (and not node-gyp or an FFI library): it is compiled with the
 * same `cc` that builds every kernel, on first use, into the content-addressed cache (no build step
 * at install, no new npm dependency, no second toolchain); and the hot loop is native, so JS
 * crosses into C once per inference — the per-call cost of any binding mechanism is irrelevant,
 * only the per-step dispatch inside executor.c matters.
 *
 * Exports (synchronous unless said otherwise; an executor is used from one JS thread at a time):
 *   create(blob: Float64Array, kernelsPath: string|null, symbols: string[], params: TypedArray[])
 *        -> handle (params are copied into 64-byte-aligned buffers once)
 *   info(handle) -> { steps, inputBytes: number[], outputBytes: number[] }
 *   run(handle, inputs: TypedArray[], outputs: TypedArray[])   copies in, runs, copies out
 *   setVersion(handle, step, version), setThreads(handle, step, threads)
 *   setProfiling(handle, on), stepTimes(handle) -> Float64Array (ns per step, last profiled run)
 *   setTeams(handle, on): run consecutive team-safe steps in one parallel region (default on; executor.c run_team)
 *   versions(handle) -> Int32Array (per step: the version index the executor runs, -1 for non-kernel steps)
 *   close(handle)
 *   copy(handle, inputs|null, outputs|null)   inputs into the arena / outputs out of it
 *   runBlock(handle, from, to, cores[]) -> Promise<{cpus, startNs, endNs}>   async: steps pinned to cores
 *   runChain(handle, from, to, cores[], stops: Int32Array, preempted?: boolean) -> Promise<{cpus, startNs, endNs, stoppedAt}>
 *        async: like runBlock, but a chain of blocks back to back on the worker; at each stop (a step
 *        index in (from, to), ascending) the worker reads the handle's preemption flag and, if it is
 *        raised, ends there (stoppedAt = that stop; to when it ran through)
 *   preempt(handle)   raise the preemption flag of the chain in flight (allowed while busy; no-op when
 *        idle: every runBlock/runChain starts with the flag lowered)
 *   clone(handle) -> handle   another instance (own arena) sharing the plan, kernels and weights
 *   setBlockNice(n)   every thread of a block runs at nice n (0..19) and, for n > 0, the batch policy,
 *        from the next block on
 *   setBackgroundThread(n)   the calling thread (and the threads it starts later) at nice n (1..19) and the
 *        batch policy, as block threads are; -> true when both held (a baseline's inference threads use it)
 *   abiDigest: string   VT_ABI_DIGEST of the generated vt_abi.h it was built with (checked at load)
 * Errors are thrown as Error with `code`: VT_KERNELS (dlopen/dlsym/kernel mismatch), VT_PLAN
 * (malformed plan), VT_ARGUMENT (wrong call), VT_RUN (a step failed at run time), VT_BUSY (a call
 * on a handle whose block is still running).
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#define VT_NAPI_WHO "veltair runtime"
#include "napi/vt_napi.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vt_rt.h"

/*
 * One handle per executor instance. Blocks run asynchronously on the handle's own worker thread
 * (started on first use): it is the master of the instance's OpenMP team, pins the team to the
 * block's cores, runs the steps and hands the result back to the JS thread through a thread-safe
 * function. A handle runs one block at a time (`busy`); while one runs, every other call on it is
 * refused, so two requests are never interleaved in one arena. Why a thread per instance rather
 * than libuv's pool: the pool has 4 threads by default, fixed at its first use, and every
 * concurrently running block needs its own OpenMP master.
 */
typedef struct handle {
  vt_exec* e;
  int busy, closing;
  /* the worker */
  int started, stop, has_job;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  napi_threadsafe_function tsfn;
  /* the job in flight; stops: where a chain may end early (n_stops 0: a plain block) */
  int from, to, n_cores, rc, stopped_at;
  int* stops;
  int n_stops, cap_stops;
  /* the preemption flag: raised by preempt() on the JS thread, read by the worker at each stop */
  atomic_int preempt;
  double start_ns, end_ns;
  int cores[VT_MAX_CORES];
  char err[VT_ERR_LEN];
  napi_deferred deferred;
  napi_ref self;
} handle_t;

static void stop_worker(handle_t* h) {
  if (!h->started) return;
  pthread_mutex_lock(&h->mu);
  h->stop = 1;
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
  pthread_join(h->thread, NULL);
  napi_release_threadsafe_function(h->tsfn, napi_tsfn_release);
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  h->started = 0;
}

static double monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/*
 * The nice value of block threads (each worker's OpenMP team; vt_exec_bind applies it, with the
 * batch policy: vt_background_thread). Why: a block is CPU-bound on its cores, and the JS thread
 * that parses requests and hands back finished blocks shares those cores. At equal priority it
 * waits for the kernel's time slice (tens of ms seen live on 2 cores), and every request behind it
 * is late. A higher nice lets the event loop in when it wakes; batch keeps a worker that the event
 * loop has just woken from taking the event loop's core (stalls of 1-5 ms inside runChain's wake-up
 * seen live on 2 cores). Raising nice and entering batch need no privilege; lowering nice again may
 * fail (RLIMIT_NICE), which leaves the thread as it is.
 */
static atomic_int block_nice = 0;

static void* worker(void* arg) {
  handle_t* h = arg;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (!h->has_job && !h->stop) pthread_cond_wait(&h->cv, &h->mu);
    if (!h->has_job) break;
    pthread_mutex_unlock(&h->mu);
    h->start_ns = monotonic_ns();
    int rc = vt_exec_bind(h->e, h->cores, h->n_cores, atomic_load(&block_nice));
    /* A chain runs its segments back to back: the hand-off to JS is paid once, when it ends or is preempted. */
    int at = h->from, preempted = 0;
    for (int i = 0; !rc && !preempted && i < h->n_stops; i++) {
      rc = vt_exec_run_range(h->e, at, h->stops[i], h->n_cores);
      if (!rc) at = h->stops[i];
      preempted = atomic_load_explicit(&h->preempt, memory_order_acquire);
    }
    if (!rc && !preempted) {
      rc = vt_exec_run_range(h->e, at, h->to, h->n_cores);
      if (!rc) at = h->to;
    }
    h->stopped_at = at;
    h->end_ns = monotonic_ns();
    if (rc) snprintf(h->err, VT_ERR_LEN, "%s", vt_exec_error(h->e));
    h->rc = rc;
    pthread_mutex_lock(&h->mu);
    h->has_job = 0;
    pthread_mutex_unlock(&h->mu);
    napi_call_threadsafe_function(h->tsfn, h, napi_tsfn_blocking);
    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

static napi_value throw_code(napi_env env, const char* code, const char* msg) {
  napi_throw_error(env, code, msg);
  return NULL;
}

static void finalize(napi_env env, void* data, void* hint) {
  (void)env; (void)hint;
  handle_t* h = data;
  stop_worker(h);
  vt_exec_destroy(h->e);
  free(h->stops);
  free(h);
}

static napi_value wrap_handle(napi_env env, vt_exec* e) {
  handle_t* h = calloc(1, sizeof *h);
  napi_value r = NULL;
  if (!h) { vt_exec_destroy(e); napi_throw_error(env, "VT_ARGUMENT", "out of memory"); return NULL; }
  h->e = e;
  if (napi_create_external(env, h, finalize, NULL, &r) != napi_ok) { vt_exec_destroy(e); free(h); return NULL; }
  return r;
}

static handle_t* get_handle(napi_env env, napi_value v) {
  handle_t* h = vt_external(env, v, "not a veltair executor handle");
  if (!h) return NULL;
  if (!h->e || h->closing) { napi_throw_error(env, "VT_ARGUMENT", "this veltair executor was closed"); return NULL; }
  return h;
}

/* A handle that is not running a block (otherwise a pending VT_BUSY exception and NULL). */
static handle_t* idle_handle(napi_env env, napi_value v) {
  handle_t* h = get_handle(env, v);
  if (h && h->busy) { napi_throw_error(env, "VT_BUSY", "this executor is running a block; wait for it before using it again"); return NULL; }
  return h;
}

static napi_value create(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  if (!vt_args_min(env, info, 4, argv, "create(blob, kernelsPath, symbols, params) takes 4 arguments")) return NULL;
  void* blob; size_t blob_bytes;
  if (!vt_view(env, argv[0], &blob, &blob_bytes)) return NULL;
  napi_valuetype t;
  VT_CHECK(napi_typeof(env, argv[1], &t));
  char path[4096] = { 0 };
  int has_path = t == napi_string;
  if (has_path) {
    size_t len;
    VT_CHECK(napi_get_value_string_utf8(env, argv[1], path, sizeof path, &len));
    if (len >= sizeof path - 1) return throw_code(env, "VT_ARGUMENT", "kernels path is too long");
  }
  uint32_t n_sym = 0, n_par = 0;
  VT_CHECK(napi_get_array_length(env, argv[2], &n_sym));
  VT_CHECK(napi_get_array_length(env, argv[3], &n_par));
  char** syms = calloc(n_sym + 1, sizeof(char*));
  vt_param* params = calloc(n_par + 1, sizeof(vt_param));
  napi_value r = NULL;
  int ok = syms && params;
  for (uint32_t i = 0; ok && i < n_sym; i++) {
    napi_value s;
    size_t len;
    syms[i] = calloc(128, 1);
    ok = syms[i] && napi_get_element(env, argv[2], i, &s) == napi_ok
      && napi_get_value_string_utf8(env, s, syms[i], 128, &len) == napi_ok && len < 100;
  }
  if (!ok) { napi_throw_error(env, "VT_ARGUMENT", "symbols must be short strings"); goto done; }
  for (uint32_t i = 0; i < n_par; i++) {
    napi_value p;
    void* data; size_t bytes;
    if (napi_get_element(env, argv[3], i, &p) != napi_ok || !vt_view(env, p, &data, &bytes)) { ok = 0; break; }
    params[i].data = vt_aligned_copy(data, bytes);
    params[i].bytes = bytes;
    if (!params[i].data) { napi_throw_error(env, "VT_ARGUMENT", "out of memory copying the weights"); ok = 0; break; }
  }
  if (!ok) { for (uint32_t i = 0; i < n_par; i++) free(params[i].data); free(params); params = NULL; goto done; }
  {
    char err[VT_ERR_LEN] = { 0 };
    vt_exec* e = vt_exec_create(blob, blob_bytes / sizeof(double), has_path ? path : NULL, (const char* const*)syms,
                                (int)n_sym, params, (int)n_par, err);
    params = NULL; /* owned by the executor now, even on failure */
    if (!e) {
      int kernel = strstr(err, "kernel") != NULL;
      napi_throw_error(env, kernel ? "VT_KERNELS" : "VT_PLAN", err);
      goto done;
    }
    r = wrap_handle(env, e);
  }
done:
  if (syms) for (uint32_t i = 0; i < n_sym; i++) free(syms[i]);
  free(syms);
  free(params);
  return r;
}

static napi_value number_array(napi_env env, int n, size_t (*get)(const vt_exec*, int), const vt_exec* e) {
  napi_value a, x;
  napi_create_array_with_length(env, (size_t)n, &a);
  for (int i = 0; i < n; i++) { napi_create_double(env, (double)get(e, i), &x); napi_set_element(env, a, (uint32_t)i, x); }
  return a;
}

static napi_value info_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1], o, x;
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  handle_t* h = argc ? get_handle(env, argv[0]) : NULL;
  if (!h) return argc ? NULL : throw_code(env, "VT_ARGUMENT", "info(handle)");
  VT_CHECK(napi_create_object(env, &o));
  napi_create_int32(env, vt_exec_n_steps(h->e), &x);
  napi_set_named_property(env, o, "steps", x);
  napi_set_named_property(env, o, "inputBytes", number_array(env, vt_exec_n_inputs(h->e), vt_exec_input_bytes, h->e));
  napi_set_named_property(env, o, "outputBytes", number_array(env, vt_exec_n_outputs(h->e), vt_exec_output_bytes, h->e));
  return o;
}

static napi_value run(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  if (!vt_args_min(env, info, 3, argv, "run(handle, inputs, outputs) takes 3 arguments")) return NULL;
  handle_t* h = idle_handle(env, argv[0]);
  if (!h) return NULL;
  uint32_t ni, no;
  VT_CHECK(napi_get_array_length(env, argv[1], &ni));
  VT_CHECK(napi_get_array_length(env, argv[2], &no));
  if ((int)ni != vt_exec_n_inputs(h->e) || (int)no != vt_exec_n_outputs(h->e)) return throw_code(env, "VT_ARGUMENT", "run: wrong number of inputs or outputs");
  for (uint32_t i = 0; i < ni; i++) {
    napi_value v; void* d; size_t b;
    VT_CHECK(napi_get_element(env, argv[1], i, &v));
    if (!vt_view(env, v, &d, &b)) return NULL;
    if (b != vt_exec_input_bytes(h->e, (int)i)) return throw_code(env, "VT_ARGUMENT", "run: an input has the wrong byte size");
    if (b) memcpy(vt_exec_input_ptr(h->e, (int)i), d, b); /* an empty typed array's data may be NULL */
  }
  if (vt_exec_run(h->e)) return throw_code(env, "VT_RUN", vt_exec_error(h->e));
  for (uint32_t i = 0; i < no; i++) {
    napi_value v; void* d; size_t b;
    VT_CHECK(napi_get_element(env, argv[2], i, &v));
    if (!vt_view(env, v, &d, &b)) return NULL;
    if (b != vt_exec_output_bytes(h->e, (int)i)) return throw_code(env, "VT_ARGUMENT", "run: an output buffer has the wrong byte size");
    if (b) memcpy(d, vt_exec_output_ptr(h->e, (int)i), b);
  }
  return NULL;
}

static napi_value set_int(napi_env env, napi_callback_info info, int (*setter)(vt_exec*, int, int)) {
  napi_value argv[3];
  int32_t a = 0, b = 0;
  if (!vt_args_min(env, info, 3, argv, "expected (handle, step, value)")) return NULL;
  handle_t* h = idle_handle(env, argv[0]);
  if (!h) return NULL;
  if (napi_get_value_int32(env, argv[1], &a) != napi_ok || napi_get_value_int32(env, argv[2], &b) != napi_ok) {
    return throw_code(env, "VT_ARGUMENT", "step and value must be integers");
  }
  if (setter(h->e, a, b)) return throw_code(env, "VT_ARGUMENT", vt_exec_error(h->e));
  return NULL;
}

static napi_value set_version(napi_env env, napi_callback_info info) { return set_int(env, info, vt_exec_set_version); }
static napi_value set_threads(napi_env env, napi_callback_info info) { return set_int(env, info, vt_exec_set_threads); }

/* (handle, on): an on/off switch of an idle executor. */
static napi_value set_flag(napi_env env, napi_callback_info info, void (*set)(vt_exec*, int), const char* usage) {
  napi_value argv[2];
  bool on = false;
  const int argc = vt_args(env, info, 2, argv);
  if (argc < 0) return NULL;
  handle_t* h = argc ? idle_handle(env, argv[0]) : NULL;
  if (!h) return argc ? NULL : throw_code(env, "VT_ARGUMENT", usage);
  if (argc > 1) napi_get_value_bool(env, argv[1], &on);
  set(h->e, on);
  return NULL;
}

static napi_value set_profiling(napi_env env, napi_callback_info info) {
  return set_flag(env, info, vt_exec_set_profiling, "setProfiling(handle, on)");
}
static napi_value set_teams(napi_env env, napi_callback_info info) { return set_flag(env, info, vt_exec_set_teams, "setTeams(handle, on)"); }

static napi_value step_times(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  handle_t* h = argc ? idle_handle(env, argv[0]) : NULL;
  if (!h) return argc ? NULL : throw_code(env, "VT_ARGUMENT", "stepTimes(handle)");
  napi_value arr = vt_copy_typed(env, napi_float64_array, vt_exec_step_ns(h->e), (size_t)vt_exec_n_steps(h->e));
  return arr ? arr : throw_code(env, "VT_ARGUMENT", "stepTimes: out of memory");
}

static napi_value versions_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  handle_t* h = argc ? get_handle(env, argv[0]) : NULL;
  if (!h) return argc ? NULL : throw_code(env, "VT_ARGUMENT", "versions(handle)");
  int n = vt_exec_n_steps(h->e);
  void* data;
  napi_value arr = vt_new_typed(env, napi_int32_array, (size_t)n, &data);
  if (!arr) return throw_code(env, "VT_ARGUMENT", "versions: out of memory");
  for (int s = 0; s < n; s++) ((int32_t*)data)[s] = vt_exec_step_version(h->e, s);
  return arr;
}

static napi_value close_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  void* data = NULL;
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  if (argc < 1 || napi_get_value_external(env, argv[0], &data) != napi_ok || !data) return throw_code(env, "VT_ARGUMENT", "close(handle)");
  handle_t* h = data;
  if (h->busy) { h->closing = 1; return NULL; } /* the block in flight finishes first; its completion closes */
  stop_worker(h);
  vt_exec_destroy(h->e);
  h->e = NULL;
  return NULL;
}

/* copy(handle, inputs | null, outputs | null): inputs into the arena, and/or outputs out of it (sync). */
static napi_value copy_io(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  if (!vt_args_min(env, info, 3, argv, "copy(handle, inputs, outputs) takes 3 arguments")) return NULL;
  handle_t* h = idle_handle(env, argv[0]);
  if (!h) return NULL;
  for (int dir = 0; dir < 2; dir++) {
    napi_valuetype t;
    VT_CHECK(napi_typeof(env, argv[1 + dir], &t));
    if (t == napi_null || t == napi_undefined) continue;
    uint32_t n;
    VT_CHECK(napi_get_array_length(env, argv[1 + dir], &n));
    int want = dir == 0 ? vt_exec_n_inputs(h->e) : vt_exec_n_outputs(h->e);
    if ((int)n != want) return throw_code(env, "VT_ARGUMENT", "copy: wrong number of inputs or outputs");
    for (uint32_t i = 0; i < n; i++) {
      napi_value v; void* d; size_t b;
      VT_CHECK(napi_get_element(env, argv[1 + dir], i, &v));
      if (!vt_view(env, v, &d, &b)) return NULL;
      size_t expect = dir == 0 ? vt_exec_input_bytes(h->e, (int)i) : vt_exec_output_bytes(h->e, (int)i);
      if (b != expect) return throw_code(env, "VT_ARGUMENT", "copy: a buffer has the wrong byte size");
      if (dir == 0) memcpy(vt_exec_input_ptr(h->e, (int)i), d, b);
      else memcpy(d, vt_exec_output_ptr(h->e, (int)i), b);
    }
  }
  return NULL;
}

static void finish_block(napi_env env, napi_value js_cb, void* context, void* data) {
  (void)js_cb; (void)context;
  handle_t* h = data;
  if (env != NULL) {
    napi_value result = NULL;
    if (h->rc) {
      napi_value msg, code;
      napi_create_string_utf8(env, h->err, NAPI_AUTO_LENGTH, &msg);
      napi_create_string_utf8(env, "VT_RUN", NAPI_AUTO_LENGTH, &code);
      napi_create_error(env, code, msg, &result);
      napi_reject_deferred(env, h->deferred, result);
    } else {
      int cpus[VT_MAX_CORES];
      int n = vt_exec_bound_cpus(h->e, cpus, VT_MAX_CORES);
      napi_value x, list;
      napi_create_object(env, &result);
      napi_create_array_with_length(env, (size_t)n, &list);
      for (int i = 0; i < n; i++) { napi_create_int32(env, cpus[i], &x); napi_set_element(env, list, (uint32_t)i, x); }
      napi_set_named_property(env, result, "cpus", list);
      napi_create_double(env, h->start_ns, &x);
      napi_set_named_property(env, result, "startNs", x);
      napi_create_double(env, h->end_ns, &x);
      napi_set_named_property(env, result, "endNs", x);
      napi_create_int32(env, h->stopped_at, &x);
      napi_set_named_property(env, result, "stoppedAt", x);
      napi_resolve_deferred(env, h->deferred, result);
    }
    napi_unref_threadsafe_function(env, h->tsfn);
  }
  h->busy = 0;
  napi_ref self = h->self;
  h->self = NULL;
  if (h->closing) {
    stop_worker(h);
    vt_exec_destroy(h->e);
    h->e = NULL;
  }
  if (env != NULL && self) napi_delete_reference(env, self);
}

/*
 * runBlock(handle, from, to, cores: number[]) -> Promise<{ cpus, startNs, endNs }>: on the handle's
 * worker thread, pin the OpenMP team to `cores`, run steps [from, to) with at most cores.length
 * threads each, and resolve with the CPU each team thread was on and the block's CLOCK_MONOTONIC
 * start and end (reject with code VT_RUN if a step failed).
 */
static napi_value start_job(napi_env env, napi_value* argv, int chained, int start_preempted) {
  napi_value promise;
  handle_t* h = idle_handle(env, argv[0]);
  if (!h) return NULL;
  int32_t from, to;
  uint32_t n;
  bool is_array = false;
  if (napi_get_value_int32(env, argv[1], &from) != napi_ok || napi_get_value_int32(env, argv[2], &to) != napi_ok) {
    return throw_code(env, "VT_ARGUMENT", "runBlock: from and to must be integers");
  }
  VT_CHECK(napi_is_array(env, argv[3], &is_array));
  if (!is_array) return throw_code(env, "VT_ARGUMENT", "runBlock: cores must be an array of core ids");
  VT_CHECK(napi_get_array_length(env, argv[3], &n));
  if (n < 1 || n > VT_MAX_CORES) return throw_code(env, "VT_ARGUMENT", "runBlock: a block needs at least one core");
  if (from < 0 || to > vt_exec_n_steps(h->e) || from > to) return throw_code(env, "VT_ARGUMENT", "runBlock: [from, to) is not a range of steps");
  for (uint32_t i = 0; i < n; i++) {
    napi_value c;
    int32_t core;
    VT_CHECK(napi_get_element(env, argv[3], i, &c));
    if (napi_get_value_int32(env, c, &core) != napi_ok || core < 0) return throw_code(env, "VT_ARGUMENT", "runBlock: core ids are integers >= 0");
    h->cores[i] = core;
  }
  h->n_stops = 0;
  if (chained) {
    void* data; size_t bytes;
    napi_typedarray_type tt;
    bool typed = false;
    VT_CHECK(napi_is_typedarray(env, argv[4], &typed));
    if (!typed) return throw_code(env, "VT_ARGUMENT", "runChain: stops must be an Int32Array of step indices");
    VT_CHECK(napi_get_typedarray_info(env, argv[4], &tt, NULL, &data, NULL, NULL));
    if (tt != napi_int32_array || !vt_view(env, argv[4], &data, &bytes))
        return throw_code(env, "VT_ARGUMENT", "runChain: stops must be an Int32Array of step indices");
    int n_stops = (int)(bytes / sizeof(int32_t));
    if (n_stops > h->cap_stops) {
      int* grown = realloc(h->stops, (size_t)n_stops * sizeof(int));
      if (!grown) return throw_code(env, "VT_ARGUMENT", "runChain: out of memory");
      h->stops = grown;
      h->cap_stops = n_stops;
    }
    for (int i = 0; i < n_stops; i++) {
      int s = ((const int32_t*)data)[i];
      if (s <= from || s >= to || (i > 0 && s <= h->stops[i - 1]))
        return throw_code(env, "VT_ARGUMENT", "runChain: stops are ascending step indices strictly inside (from, to)");
      h->stops[i] = s;
    }
    h->n_stops = n_stops;
  }
  if (!h->started) {
    napi_value name;
    VT_CHECK(napi_create_string_utf8(env, "veltair block", NAPI_AUTO_LENGTH, &name));
    VT_CHECK(napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, NULL, NULL, finish_block, &h->tsfn));
    VT_CHECK(napi_unref_threadsafe_function(env, h->tsfn));
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->stop = 0;
    if (pthread_create(&h->thread, NULL, worker, h) != 0) {
      napi_release_threadsafe_function(h->tsfn, napi_tsfn_abort);
      return throw_code(env, "VT_ARGUMENT", "runBlock: cannot start the worker thread");
    }
    h->started = 1;
  }
  VT_CHECK(napi_create_promise(env, &h->deferred, &promise));
  VT_CHECK(napi_create_reference(env, argv[0], 1, &h->self));
  VT_CHECK(napi_ref_threadsafe_function(env, h->tsfn));
  h->busy = 1;
  /* the worker is idle (idle_handle), so its team is not binding while it is moved */
  vt_exec_prepin(h->e, h->cores, (int)n);
  pthread_mutex_lock(&h->mu);
  h->from = from; h->to = to; h->n_cores = (int)n; h->rc = 0; h->err[0] = 0; h->stopped_at = from;
  atomic_store_explicit(&h->preempt, start_preempted, memory_order_release);
  h->has_job = 1;
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
  return promise;
}

static napi_value run_block(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  if (!vt_args_min(env, info, 4, argv, "runBlock(handle, from, to, cores) takes 4 arguments")) return NULL;
  return start_job(env, argv, 0, 0);
}

/*
 * runChain(handle, from, to, cores, stops: Int32Array) -> Promise<{ cpus, startNs, endNs, stoppedAt }>:
 * runBlock over [from, to) that may end early: at each stop the worker reads the preemption flag
 * (preempt(), or `preempted` raises it from the start) and, raised, resolves with stoppedAt = that
 * stop. Unpreempted, stoppedAt = to. The
 * segments between stops run exactly as runBlock would run them (same ranges, same team).
 */
static napi_value run_chain(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  const int argc = vt_args(env, info, 6, argv);
  if (argc < 0) return NULL;
  if (argc < 5) return throw_code(env, "VT_ARGUMENT", "runChain(handle, from, to, cores, stops[, preempted]) takes 5 or 6 arguments");
  bool preempted = false;
  napi_valuetype t;
  VT_CHECK(napi_typeof(env, argv[5], &t));
  if (t == napi_boolean) VT_CHECK(napi_get_value_bool(env, argv[5], &preempted));
  return start_job(env, argv, 1, preempted ? 1 : 0);
}

/* preempt(handle): the chain in flight ends at its next stop. Never refused for a busy handle: that is its use. */
static napi_value preempt_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  handle_t* h = argc ? get_handle(env, argv[0]) : NULL;
  if (!h) return argc ? NULL : throw_code(env, "VT_ARGUMENT", "preempt(handle)");
  atomic_store_explicit(&h->preempt, 1, memory_order_release);
  return NULL;
}

/* clone(handle) -> a new handle: its own arena and steps, the same plan, kernels and weights. */
static napi_value clone_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  /* A running block only reads the step tables (only this thread writes them): cloning is safe meanwhile. */
  handle_t* h = argc ? get_handle(env, argv[0]) : NULL;
  if (!h) return argc ? NULL : throw_code(env, "VT_ARGUMENT", "clone(handle)");
  char err[VT_ERR_LEN] = { 0 };
  vt_exec* c = vt_exec_clone(h->e, err);
  if (!c) return throw_code(env, "VT_PLAN", err);
  return wrap_handle(env, c);
}

static napi_value set_block_nice(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t n;
  if (vt_args(env, info, 1, argv) != 1 || napi_get_value_int32(env, argv[0], &n) != napi_ok || n < 0 || n > 19) {
    return throw_code(env, "VT_ARGUMENT", "setBlockNice(n): n is an integer from 0 to 19");
  }
  atomic_store(&block_nice, n);
  return NULL;
}

static napi_value set_background_thread(napi_env env, napi_callback_info info) {
  napi_value argv[1], held;
  int32_t n;
  if (vt_args(env, info, 1, argv) != 1 || napi_get_value_int32(env, argv[0], &n) != napi_ok || n < 1 || n > 19) {
    return throw_code(env, "VT_ARGUMENT", "setBackgroundThread(n): n is an integer from 1 to 19");
  }
  VT_CHECK(napi_get_boolean(env, vt_background_thread(0, n) == 0, &held));
  return held;
}

NAPI_MODULE_INIT() {
  napi_value digest;
  if (napi_create_string_utf8(env, VT_ABI_DIGEST, NAPI_AUTO_LENGTH, &digest) != napi_ok) return NULL;
  napi_property_descriptor props[] = {
    { "abiDigest", NULL, NULL, NULL, NULL, digest, napi_enumerable, NULL },
    VT_METHOD("create", create),
    VT_METHOD("info", info_fn),
    VT_METHOD("run", run),
    VT_METHOD("setVersion", set_version),
    VT_METHOD("setThreads", set_threads),
    VT_METHOD("setProfiling", set_profiling),
    VT_METHOD("setTeams", set_teams),
    VT_METHOD("stepTimes", step_times),
    VT_METHOD("versions", versions_fn),
    VT_METHOD("close", close_fn),
    VT_METHOD("copy", copy_io),
    VT_METHOD("runBlock", run_block),
    VT_METHOD("runChain", run_chain),
    VT_METHOD("preempt", preempt_fn),
    VT_METHOD("clone", clone_fn),
    VT_METHOD("setBlockNice", set_block_nice),
    VT_METHOD("setBackgroundThread", set_background_thread),
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
