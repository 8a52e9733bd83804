/*
 * The N-API add-on of the sparse serving head: sparse inference over one large output layer
 * (infer.c, vs_head.h), built on first use from this folder and the shared core in
 * native-kernels/sparse/ (src/sparse/native-build.ts); the runtime loads it for a bundle's
 * sparse/head.json, the compiler to build and time the head's versions. JavaScript owns the arrays
 * (the head reads them in place).
 *
 * Exports (synchronous unless named Async):
 *   isa() -> "avx512" | "avx2" | "scalar"
 *   codes() -> {hash}: the hash-family codes compiled in (checked by src/sparse/native.ts at load)
 *   headTables({family, K, L, R, seed: bigint, threads}, w F32 [n x d], n, d)
 *     -> {signs?: U8, bins?: I32, rowBytes, perTable, offsets: U32, ids: U32}   (hash functions drawn, neurons hashed)
 *   headCreate({n, d, family, K, L, seed: bigint, rowBytes, perTable}, w F32, b F32, signs U8 | null, bins I32 | null, offsets U32, ids U32,
 *              always U32 | null)
 *     -> head (keeps references to the arrays: nothing is copied or rehashed; always: distinct neuron ids a sparse query may score first)
 *   headTopK(head, x F32 [rows x d], rows, k, budget, always, tables) -> {values: F32 [rows x k], indices: I32 [rows x k], scored}
 *     (a sparse budget scores the first `always` ids of the always list, then the candidates of the first `tables` tables
 *      (0: all) in the budget left)
 *   headTopKAsync(head, x, rows, k, budget, always, tables) -> Promise of the same, computed on a libuv worker thread
 *   pinCallingThread(core | -1) -> bool   pins the calling (JS) thread to one core; -1 restores the mask it had before
 * Errors are thrown with code VT_ARGUMENT (a wrong call), VT_MEMORY (allocation failed) or VT_BUSY (a head
 * queried while its asynchronous query runs).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* sched_setaffinity, CPU_SET */
#endif
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "../vs_napi.h"
#include "vs_head.h"

/* The hash-family codes this build was compiled with (a head uses no activation or mode code). */
static napi_value codes_fn(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value o;
  VT_CHECK(napi_create_object(env, &o));
  static const char* const hashes[] = { "simhash", "dwta" };
  static const int hash_v[] = { VS_HASH_SIMHASH, VS_HASH_DWTA };
  vs_put_codes(env, o, "hash", hashes, hash_v, 2);
  return o;
}

/* busy: a headTopKAsync job holds the head's query scratch (one query at a time per head). */
typedef struct { vs_head h; napi_ref refs[7]; int live; int busy; } head_h;

static void head_finalize(napi_env env, void* data, void* hint) {
  (void)hint;
  head_h* h = data;
  if (h->live) vs_head_free(&h->h);
  for (int i = 0; i < 7; i++) if (h->refs[i]) napi_delete_reference(env, h->refs[i]);
  free(h);
}

static int prop_u64(napi_env env, napi_value o, const char* name, uint64_t* out) {
  napi_value v;
  bool lossless = false;
  if (napi_get_named_property(env, o, name, &v) != napi_ok || napi_get_value_bigint_uint64(env, v, out, &lossless) != napi_ok || !lossless) {
    napi_throw_error(env, "VT_ARGUMENT", "veltair sparse: the seed must be a u64 bigint");
    return 0;
  }
  return 1;
}

static napi_value head_tables_fn(napi_env env, napi_callback_info info) {
  napi_value argv[4], o;
  if (!vt_args_min(env, info, 4, argv, "headTables(config, w, n, d)")) return NULL;
  void* w; size_t nw;
  uint64_t seed;
  if (!vt_typed(env, argv[1], napi_float32_array, &w, &nw) || !prop_u64(env, argv[0], "seed", &seed)) return NULL;
  const int family = (int)vt_prop_num(env, argv[0], "family"), K = (int)vt_prop_num(env, argv[0], "K"), L = (int)vt_prop_num(env, argv[0], "L");
  const int R = (int)vt_prop_num(env, argv[0], "R"), threads = (int)vt_prop_num(env, argv[0], "threads");
  const int n = (int)vt_num(env, argv[2]), d = (int)vt_num(env, argv[3]);
  if (n < 1 || d < 1 || nw != (size_t)n * d || R < 1 || threads < 1) VT_FAIL("VT_ARGUMENT", "headTables: w is not n x d, or R or threads < 1");
  char err[VS_ERR_LEN] = { 0 };
  vs_hash hash;
  if (vs_hash_init(&hash, family, K, L, d, seed, err)) VT_FAIL("VT_ARGUMENT", err);
  uint32_t *offsets = NULL, *ids = NULL;
  size_t n_ids = 0;
  if (vs_head_build_tables(w, n, d, &hash, R, threads, &offsets, &ids, &n_ids, err)) { vs_hash_free(&hash); VT_FAIL("VT_MEMORY", err); }
  const size_t n_off = (size_t)L * ((size_t)1 << K) + 1;
  void *po, *pi, *ph = NULL;
  napi_value off = vt_new_typed(env, napi_uint32_array, n_off, &po);
  napi_value idv = vt_new_typed(env, napi_uint32_array, n_ids, &pi);
  napi_value hv = family == VS_HASH_SIMHASH ? vt_new_typed(env, napi_uint8_array, (size_t)d * hash.row_bytes, &ph)
                                            : vt_new_typed(env, napi_int32_array, (size_t)L * hash.per_table * VS_DWTA_BIN, &ph);
  if (off && idv && hv) {
    memcpy(po, offsets, n_off * 4);
    memcpy(pi, ids, n_ids * 4);
    if (family == VS_HASH_SIMHASH) memcpy(ph, hash.signs, (size_t)d * hash.row_bytes);
    else memcpy(ph, hash.bins, (size_t)L * hash.per_table * VS_DWTA_BIN * 4);
  }
  free(offsets); free(ids);
  const int row_bytes = hash.row_bytes, per_table = hash.per_table;
  vs_hash_free(&hash);
  if (!off || !idv || !hv) VT_FAIL("VT_MEMORY", "headTables: out of memory");
  napi_value rb, pt;
  VT_CHECK(napi_create_object(env, &o));
  napi_create_int32(env, row_bytes, &rb);
  napi_create_int32(env, per_table, &pt);
  napi_set_named_property(env, o, family == VS_HASH_SIMHASH ? "signs" : "bins", hv);
  napi_set_named_property(env, o, "rowBytes", rb);
  napi_set_named_property(env, o, "perTable", pt);
  napi_set_named_property(env, o, "offsets", off);
  napi_set_named_property(env, o, "ids", idv);
  return o;
}

static napi_value head_create_fn(napi_env env, napi_callback_info info) {
  napi_value argv[8], r;
  if (!vt_args_min(env, info, 8, argv, "headCreate(config, w, b, signs, bins, offsets, ids, always)")) return NULL;
  const int n = (int)vt_prop_num(env, argv[0], "n"), d = (int)vt_prop_num(env, argv[0], "d"), family = (int)vt_prop_num(env, argv[0], "family");
  const int K = (int)vt_prop_num(env, argv[0], "K"), L = (int)vt_prop_num(env, argv[0], "L");
  const int row_bytes = (int)vt_prop_num(env, argv[0], "rowBytes"), per_table = (int)vt_prop_num(env, argv[0], "perTable");
  uint64_t seed;
  if (!prop_u64(env, argv[0], "seed", &seed)) return NULL;
  void *w, *b, *signs = NULL, *bins = NULL, *offsets, *ids, *always = NULL;
  size_t nw, nbias, ns = 0, nbins = 0, noff, nids, nalways = 0;
  if (!vt_typed(env, argv[1], napi_float32_array, &w, &nw) || !vt_typed(env, argv[2], napi_float32_array, &b, &nbias)) return NULL;
  if (!vt_is_nullish(env, argv[3]) && !vt_typed(env, argv[3], napi_uint8_array, &signs, &ns)) return NULL;
  if (!vt_is_nullish(env, argv[4]) && !vt_typed(env, argv[4], napi_int32_array, &bins, &nbins)) return NULL;
  if (!vt_typed(env, argv[5], napi_uint32_array, &offsets, &noff) || !vt_typed(env, argv[6], napi_uint32_array, &ids, &nids)) return NULL;
  if (!vt_is_nullish(env, argv[7]) && !vt_typed(env, argv[7], napi_uint32_array, &always, &nalways)) return NULL;
  if (n < 1 || d < 1 || nw != (size_t)n * d || nbias != (size_t)n) VT_FAIL("VT_ARGUMENT", "headCreate: w is not n x d or b not n long");
  if (family == VS_HASH_SIMHASH && ns != (size_t)d * row_bytes) VT_FAIL("VT_ARGUMENT", "headCreate: the simhash signs are not d x rowBytes");
  if (family == VS_HASH_DWTA && nbins != (size_t)L * per_table * VS_DWTA_BIN) VT_FAIL("VT_ARGUMENT", "headCreate: the DWTA bins are not L x perTable x 8");
  char err[VS_ERR_LEN] = { 0 };
  vs_hash hash;
  if (vs_hash_wrap(&hash, family, K, L, d, seed, signs, row_bytes, bins, per_table, err)) VT_FAIL("VT_ARGUMENT", err);
  head_h* h = calloc(1, sizeof *h);
  if (!h) VT_FAIL("VT_MEMORY", "out of memory");
  if (vs_head_init(&h->h, n, d, w, b, &hash, offsets, noff, ids, nids, err)) { free(h); VT_FAIL("VT_ARGUMENT", err); }
  if (nalways > (size_t)n || vs_head_set_always(&h->h, always, (int)nalways, err)) {
    vs_head_free(&h->h); free(h);
    VT_FAIL("VT_ARGUMENT", nalways > (size_t)n ? "headCreate: more always-scored ids than neurons" : err);
  }
  h->live = 1;
  /* the head reads w, b, signs/bins, offsets, ids and the always list in place: hold them for its lifetime */
  for (int i = 0; i < 7; i++) if (!vt_is_nullish(env, argv[i + 1])) napi_create_reference(env, argv[i + 1], 1, &h->refs[i]);
  if (napi_create_external(env, h, head_finalize, NULL, &r) != napi_ok) { head_finalize(env, h, NULL); return NULL; }
  return r;
}

/* The arguments both headTopK forms share, checked on the JS thread: 0 with a pending exception. */
typedef struct { head_h* h; napi_value head_value, x_value; const float* x; int rows, k, budget, always, tables; } topk_args;

static int topk_args_of(napi_env env, napi_callback_info info, const char* usage, topk_args* a) {
  napi_value argv[7];
  if (!vt_args_min(env, info, 7, argv, usage)) return 0;
  a->h = vt_external(env, argv[0], "not a veltair sparse head");
  if (!a->h) return 0;
  a->head_value = argv[0];
  if (a->h->busy) { napi_throw_error(env, "VT_BUSY", "headTopK: this head is answering another query (one at a time per head)"); return 0; }
  void* x; size_t nx;
  if (!vt_typed(env, argv[1], napi_float32_array, &x, &nx)) return 0;
  a->x_value = argv[1];
  a->x = x;
  a->rows = (int)vt_num(env, argv[2]); a->k = (int)vt_num(env, argv[3]); a->budget = (int)vt_num(env, argv[4]); a->always = (int)vt_num(env, argv[5]);
  a->tables = (int)vt_num(env, argv[6]);
  if (a->rows < 1 || nx != (size_t)a->rows * a->h->h.d) { napi_throw_error(env, "VT_ARGUMENT", "headTopK: x is not rows x d"); return 0; }
  if (a->k < 1 || a->k > a->h->h.n || a->budget < 0 || a->always < 0 || a->tables < 0) {
    napi_throw_error(env, "VT_ARGUMENT", "headTopK: k must be 1..n, budget, always and tables >= 0");
    return 0;
  }
  return 1;
}

static double topk_rows(head_h* h, const float* x, int rows, int k, int budget, int always, int tables, float* values, int32_t* indices) {
  double scored = 0;
  for (int r = 0; r < rows; r++) {
    scored += vs_head_topk(&h->h, x + (size_t)r * h->h.d, k, budget, always, tables, values + (size_t)r * k, indices + (size_t)r * k);
  }
  return scored;
}

static napi_value topk_result(napi_env env, napi_value values, napi_value indices, double scored) {
  napi_value o, sv;
  if (napi_create_object(env, &o) != napi_ok || napi_create_double(env, scored, &sv) != napi_ok) return NULL;
  napi_set_named_property(env, o, "values", values);
  napi_set_named_property(env, o, "indices", indices);
  napi_set_named_property(env, o, "scored", sv);
  return o;
}

static napi_value head_topk_fn(napi_env env, napi_callback_info info) {
  topk_args a;
  if (!topk_args_of(env, info, "headTopK(head, x, rows, k, budget, always, tables)", &a)) return NULL;
  void *pv, *pi;
  napi_value values = vt_new_typed(env, napi_float32_array, (size_t)a.rows * a.k, &pv);
  napi_value indices = vt_new_typed(env, napi_int32_array, (size_t)a.rows * a.k, &pi);
  if (!values || !indices) VT_FAIL("VT_MEMORY", "headTopK: out of memory");
  return topk_result(env, values, indices, topk_rows(a.h, a.x, a.rows, a.k, a.budget, a.always, a.tables, pv, pi));
}

/*
 * headTopKAsync: the same query on a libuv worker thread, so that a server's event loop keeps
 * accepting and queueing requests while a dense 500k-class head scores for tens of milliseconds
 * (the degrade rule can only see requests the loop has read). The head, x and the output arrays
 * are referenced until the job completes; the head refuses other queries meanwhile (VT_BUSY).
 */
typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref head_ref, x_ref, values_ref, indices_ref;
  topk_args a;
  float* values;
  int32_t* indices;
  double scored;
} topk_job;

static void topk_execute(napi_env env, void* data) {
  (void)env;
  topk_job* j = data;
  j->scored = topk_rows(j->a.h, j->a.x, j->a.rows, j->a.k, j->a.budget, j->a.always, j->a.tables, j->values, j->indices);
}

/* Drop what a job holds (references, the work) and free it; every field may still be unset. */
static void topk_release(napi_env env, topk_job* j) {
  napi_ref refs[4] = { j->head_ref, j->x_ref, j->values_ref, j->indices_ref };
  for (int i = 0; i < 4; i++) if (refs[i]) napi_delete_reference(env, refs[i]);
  if (j->work) napi_delete_async_work(env, j->work);
  free(j);
}

static void topk_complete(napi_env env, napi_status status, void* data) {
  topk_job* j = data;
  j->a.h->busy = 0;
  napi_value values, indices, result = NULL, error, code, msg;
  if (status == napi_ok && napi_get_reference_value(env, j->values_ref, &values) == napi_ok
      && napi_get_reference_value(env, j->indices_ref, &indices) == napi_ok) {
    result = topk_result(env, values, indices, j->scored);
  }
  if (result) {
    napi_resolve_deferred(env, j->deferred, result);
  } else {
    napi_create_string_utf8(env, "VT_ARGUMENT", NAPI_AUTO_LENGTH, &code);
    napi_create_string_utf8(env, "headTopKAsync: the query was cancelled or its result could not be built", NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, code, msg, &error);
    napi_reject_deferred(env, j->deferred, error);
  }
  topk_release(env, j);
}

static napi_value head_topk_async_fn(napi_env env, napi_callback_info info) {
  napi_value promise, name;
  topk_job* j = calloc(1, sizeof *j);
  if (!j) VT_FAIL("VT_MEMORY", "headTopKAsync: out of memory");
  if (!topk_args_of(env, info, "headTopKAsync(head, x, rows, k, budget, always, tables)", &j->a)) { free(j); return NULL; }
  void *pv, *pi;
  napi_value values = vt_new_typed(env, napi_float32_array, (size_t)j->a.rows * j->a.k, &pv);
  napi_value indices = vt_new_typed(env, napi_int32_array, (size_t)j->a.rows * j->a.k, &pi);
  if (!values || !indices) { free(j); VT_FAIL("VT_MEMORY", "headTopKAsync: out of memory"); }
  j->values = pv;
  j->indices = pi;
  int ok = napi_create_reference(env, j->a.head_value, 1, &j->head_ref) == napi_ok && napi_create_reference(env, j->a.x_value, 1, &j->x_ref) == napi_ok
      && napi_create_reference(env, values, 1, &j->values_ref) == napi_ok && napi_create_reference(env, indices, 1, &j->indices_ref) == napi_ok
      && napi_create_string_utf8(env, "veltair sparse head", NAPI_AUTO_LENGTH, &name) == napi_ok
      && napi_create_async_work(env, NULL, name, topk_execute, topk_complete, j, &j->work) == napi_ok
      && napi_create_promise(env, &j->deferred, &promise) == napi_ok;
  if (ok && napi_queue_async_work(env, j->work) == napi_ok) {
    j->a.h->busy = 1;
    return promise;
  }
  /* Nothing was queued: the caller gets the thrown error, so a promise already made is settled
   * quietly (resolved: a rejection nobody holds would be an unhandled one). */
  if (j->deferred) {
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_resolve_deferred(env, j->deferred, undefined);
  }
  topk_release(env, j);
  VT_FAIL("VT_ARGUMENT", "headTopKAsync: N-API could not start the query");
}

/* Timing a head under a co-runner needs the timed thread on a known core, away from the noise. */
static cpu_set_t saved_mask;
static int saved = 0;

static napi_value pin_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1], r;
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  const int core = argc ? (int)vt_num(env, argv[0]) : -1;
  int ok;
  if (core < 0) {
    ok = saved && sched_setaffinity(0, sizeof saved_mask, &saved_mask) == 0;
    saved = 0;
  } else {
    if (!saved) saved = sched_getaffinity(0, sizeof saved_mask, &saved_mask) == 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    ok = saved && sched_setaffinity(0, sizeof set, &set) == 0;
  }
  VT_CHECK(napi_get_boolean(env, ok, &r));
  return r;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
    VT_METHOD("isa", isa_fn),
    VT_METHOD("codes", codes_fn),
    VT_METHOD("headTables", head_tables_fn),
    VT_METHOD("headCreate", head_create_fn),
    VT_METHOD("headTopK", head_topk_fn),
    VT_METHOD("headTopKAsync", head_topk_async_fn),
    VT_METHOD("pinCallingThread", pin_fn),
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
