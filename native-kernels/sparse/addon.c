/*
 * The N-API addon of sparse training (built on first use like the runtime's, see
 * src/sparse/native-build.ts). JavaScript owns the data arrays (the addon keeps references and
 * reads them in place: a data set is never copied) and orchestrates epochs, schedules and files;
 * every loop over samples, neurons or weights is in C.
 *
 * Exports (synchronous unless named Async; one JS thread drives a model):
 *   isa() -> "avx512" | "avx2" | "scalar"
 *   codes() -> {activation, hash, mode}: the enum values compiled in (checked by native.ts at load)
 *   create({inputDim, seed, threads, layers:[{dim, act, sparse, sparsity, family, K, L, R}]}) -> model
 *   dataset(row F64, idx I32, val F32, lrow F64, labels I32, inputDim, outputDim) -> data
 *   shuffle(order I32, seed, epoch)
 *   backprop(model, data, order, start, count, threads, epoch, opts) -> F64 stats
 *   adamStep(model, threads, opts); index(model, threads, all, round)
 *   evaluate(model, data, start, count, threads, mode, sparsity) -> F64 stats
 *   scores(model, data, start, count, threads, mode, sparsity) -> F32 [count x out]
 *   getTensor(model, layer, name) -> F32 copy; setTensor(model, layer, name, F32)
 *   getStep(model), setStep(model, step)
 *   hashInfo(model, layer) -> {family, K, L, R, dim, rowBytes, perTable, seed: bigint, signs?: U8, bins?: I32}
 *   tables(model, layer) -> {offsets: U32 [L*2^K+1], ids: U32, seen: U32 [L*2^K]}
 *   query(model, layer, x F32) -> {ids: U32, codes: U32}
 *   close(model)                      frees the model now (later calls throw)
 * Sparse inference over one output layer (infer.c, vs_head.h):
 *   headTables({family, K, L, R, seed: bigint, threads}, w F32 [n x d], n, d)
 *     -> {signs?: U8, bins?: I32, rowBytes, perTable, offsets: U32, ids: U32}   (hash functions drawn, neurons hashed)
 *   headCreate({n, d, family, K, L, seed: bigint, rowBytes, perTable}, w F32, b F32, signs U8 | null, bins I32 | null, offsets U32, ids U32)
 *     -> head (keeps references to the arrays: nothing is copied or rehashed)
 *   headTopK(head, x F32 [rows x d], rows, k, budget) -> {values: F32 [rows x k], indices: I32 [rows x k], scored}
 *   headTopKAsync(head, x, rows, k, budget) -> Promise of the same, computed on a libuv worker thread
 *   pinCallingThread(core | -1) -> bool   pins the calling (JS) thread to one core; -1 restores the mask it had before
 * Errors are thrown with code VT_ARGUMENT (a wrong call), VT_MEMORY (allocation failed) or VT_BUSY (a head
 * queried while its asynchronous query runs).
 */
#define NAPI_VERSION 8
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* sched_setaffinity, CPU_SET */
#endif
#include <sched.h>
#include <node_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "vs.h"
#include "vs_model.h"
#include "vs_head.h"

#define CHECK(call) do { if ((call) != napi_ok) { napi_throw_error(env, "VT_ARGUMENT", "veltair sparse: N-API call failed: " #call); return NULL; } } while (0)
#define FAIL(code, msg) do { napi_throw_error(env, code, msg); return NULL; } while (0)

typedef struct { vs_model* m; } model_h;
typedef struct { vs_data d; napi_ref refs[5]; int64_t n; int input_dim, output_dim; } data_h;

static void model_finalize(napi_env env, void* data, void* hint) {
  (void)env; (void)hint;
  model_h* h = data;
  vs_model_free(h->m);
  free(h);
}

static void data_finalize(napi_env env, void* data, void* hint) {
  (void)hint;
  data_h* h = data;
  for (int i = 0; i < 5; i++) if (h->refs[i]) napi_delete_reference(env, h->refs[i]);
  free(h);
}

static void* external(napi_env env, napi_value v) {
  void* p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok || !p) napi_throw_error(env, "VT_ARGUMENT", "not a veltair sparse handle");
  return p;
}

static vs_model* get_model(napi_env env, napi_value v) {
  model_h* h = external(env, v);
  if (h && !h->m) napi_throw_error(env, "VT_ARGUMENT", "this veltair sparse model was closed");
  return h ? h->m : NULL;
}

/* Free a model's memory now rather than at garbage collection (a benchmark creates many). */
static napi_value close_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  model_h* h = argc ? external(env, argv[0]) : NULL;
  if (!h) return NULL;
  vs_model_free(h->m);
  h->m = NULL;
  return NULL;
}

/* A typed array of the given type: its data and length; 0 with a pending exception otherwise. */
static int typed(napi_env env, napi_value v, napi_typedarray_type want, void** data, size_t* length) {
  bool is = false;
  napi_typedarray_type type;
  napi_value ab;
  size_t offset;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is
      || napi_get_typedarray_info(env, v, &type, length, data, &ab, &offset) != napi_ok || type != want) {
    napi_throw_error(env, "VT_ARGUMENT", "veltair sparse: a typed array of the wrong type");
    return 0;
  }
  return 1;
}

static double num(napi_env env, napi_value v) {
  double x = NAN;
  napi_get_value_double(env, v, &x);
  return x;
}

static double prop_num(napi_env env, napi_value o, const char* name) {
  napi_value v;
  if (napi_get_named_property(env, o, name, &v) != napi_ok) return NAN;
  return num(env, v);
}

static napi_value make_f64(napi_env env, const double* src, size_t n) {
  napi_value ab, arr;
  void* data;
  if (napi_create_arraybuffer(env, n * 8, &data, &ab) != napi_ok) return NULL;
  memcpy(data, src, n * 8);
  napi_create_typedarray(env, napi_float64_array, n, ab, 0, &arr);
  return arr;
}

static napi_value make_typed(napi_env env, napi_typedarray_type type, size_t elem, size_t n, void** data) {
  napi_value ab, arr;
  const size_t bytes = n * elem;
  if (napi_create_arraybuffer(env, bytes > 0 ? bytes : 1, data, &ab) != napi_ok) return NULL;
  if (napi_create_typedarray(env, type, n, ab, 0, &arr) != napi_ok) return NULL;
  return arr;
}

static void put_codes(napi_env env, napi_value o, const char* name, const char* const* names, const int* values, int n) {
  napi_value t, v;
  napi_create_object(env, &t);
  for (int i = 0; i < n; i++) { napi_create_int32(env, values[i], &v); napi_set_named_property(env, t, names[i], v); }
  napi_set_named_property(env, o, name, t);
}

/* The enum values this build was compiled with, so the loader can refuse a build whose codes differ from native.ts. */
static napi_value codes_fn(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value o;
  CHECK(napi_create_object(env, &o));
  static const char* const acts[] = { "relu", "linear", "tanh", "softmax", "sigmoid" };
  static const int act_v[] = { VS_ACT_RELU, VS_ACT_LINEAR, VS_ACT_TANH, VS_ACT_SOFTMAX, VS_ACT_SIGMOID };
  static const char* const hashes[] = { "simhash", "dwta" };
  static const int hash_v[] = { VS_HASH_SIMHASH, VS_HASH_DWTA };
  static const char* const modes[] = { "dense", "sparse" };
  static const int mode_v[] = { VS_MODE_DENSE, VS_MODE_SPARSE };
  put_codes(env, o, "activation", acts, act_v, 5);
  put_codes(env, o, "hash", hashes, hash_v, 2);
  put_codes(env, o, "mode", modes, mode_v, 2);
  return o;
}

static napi_value isa_fn(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value s;
  CHECK(napi_create_string_utf8(env, vs_isa(), NAPI_AUTO_LENGTH, &s));
  return s;
}

static napi_value create_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], layers, r;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1) FAIL("VT_ARGUMENT", "create(config)");
  const double input = prop_num(env, argv[0], "inputDim"), seed = prop_num(env, argv[0], "seed"), threads = prop_num(env, argv[0], "threads");
  CHECK(napi_get_named_property(env, argv[0], "layers", &layers));
  uint32_t n = 0;
  CHECK(napi_get_array_length(env, layers, &n));
  if (n < 1 || n > VS_MAX_LAYERS || !(input >= 1) || !(threads >= 1) || !(seed >= 0)) FAIL("VT_ARGUMENT", "create: bad inputDim, seed, threads or layer count");
  vs_layer_spec specs[VS_MAX_LAYERS];
  for (uint32_t i = 0; i < n; i++) {
    napi_value o;
    CHECK(napi_get_element(env, layers, i, &o));
    specs[i].out = (int)prop_num(env, o, "dim");
    specs[i].act = (int)prop_num(env, o, "act");
    specs[i].sparse = prop_num(env, o, "sparse") > 0;
    specs[i].sparsity = (float)prop_num(env, o, "sparsity");
    specs[i].family = (int)prop_num(env, o, "family");
    specs[i].K = (int)prop_num(env, o, "K");
    specs[i].L = (int)prop_num(env, o, "L");
    specs[i].R = (int)prop_num(env, o, "R");
    if (specs[i].out < 1 || !(specs[i].sparsity > 0 && specs[i].sparsity <= 1)) FAIL("VT_ARGUMENT", "create: a layer has a bad dim or sparsity");
    if (specs[i].sparse && (specs[i].K < 1 || specs[i].L < 1 || specs[i].R < 1)) FAIL("VT_ARGUMENT", "create: a sparse layer needs K, L, R >= 1");
  }
  char err[VS_ERR_LEN] = { 0 };
  vs_model* m = vs_model_create((int)input, (int)n, specs, (uint64_t)seed, (int)threads, err);
  if (!m) FAIL("VT_MEMORY", err);
  model_h* h = calloc(1, sizeof *h);
  if (!h) { vs_model_free(m); FAIL("VT_MEMORY", "out of memory"); }
  h->m = m;
  if (napi_create_external(env, h, model_finalize, NULL, &r) != napi_ok) { vs_model_free(m); free(h); return NULL; }
  return r;
}

static napi_value dataset_fn(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7], r;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) FAIL("VT_ARGUMENT", "dataset(row, idx, val, lrow, labels, inputDim, outputDim)");
  void *row, *idx, *val, *lrow, *labels;
  size_t nrow, nidx, nval, nlrow, nlab;
  if (!typed(env, argv[0], napi_float64_array, &row, &nrow) || !typed(env, argv[1], napi_int32_array, &idx, &nidx)
      || !typed(env, argv[2], napi_float32_array, &val, &nval) || !typed(env, argv[3], napi_float64_array, &lrow, &nlrow)
      || !typed(env, argv[4], napi_int32_array, &labels, &nlab)) return NULL;
  const int input = (int)num(env, argv[5]), output = (int)num(env, argv[6]);
  if (nrow < 1 || nrow != nlrow || nidx < nval) FAIL("VT_ARGUMENT", "dataset: row and label offsets differ in length");
  const double* R = row;
  const double* LR = lrow;
  const int64_t n = (int64_t)nrow - 1;
  if (R[0] != 0 || LR[0] != 0 || R[n] > (double)nval || LR[n] > (double)nlab) FAIL("VT_ARGUMENT", "dataset: offsets out of range");
  for (int64_t i = 0; i < n; i++) if (R[i + 1] < R[i] || LR[i + 1] < LR[i]) FAIL("VT_ARGUMENT", "dataset: offsets decrease");
  const int32_t* I = idx;
  const int32_t* Y = labels;
  const float* V = val;
  for (size_t k = 0; k < (size_t)R[n]; k++)
    if (I[k] < 0 || I[k] >= input || !isfinite(V[k])) FAIL("VT_ARGUMENT", "dataset: a feature index or value is out of range");
  for (size_t k = 0; k < (size_t)LR[n]; k++) if (Y[k] < 0 || Y[k] >= output) FAIL("VT_ARGUMENT", "dataset: a label is out of range");
  data_h* h = calloc(1, sizeof *h);
  if (!h) FAIL("VT_MEMORY", "out of memory");
  h->d = (vs_data){ .n = n, .row = R, .idx = I, .val = V, .lrow = LR, .labels = Y };
  h->n = n; h->input_dim = input; h->output_dim = output;
  for (int i = 0; i < 5; i++) napi_create_reference(env, argv[i], 1, &h->refs[i]);
  if (napi_create_external(env, h, data_finalize, NULL, &r) != napi_ok) { data_finalize(env, h, NULL); return NULL; }
  return r;
}

static int check_pair(napi_env env, vs_model* m, data_h* d) {
  if (!m || !d) return 0;
  if (d->input_dim != m->input_dim || d->output_dim != m->layers[m->n_layers - 1].out) {
    napi_throw_error(env, "VT_ARGUMENT", "the data set's dimensions do not match the network");
    return 0;
  }
  return 1;
}

static napi_value shuffle_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  void* p; size_t n;
  if (argc < 3 || !typed(env, argv[0], napi_int32_array, &p, &n)) return NULL;
  int32_t* o = p;
  vs_rng r = { vs_key((uint64_t)num(env, argv[1]), 0x5E1Full, (uint64_t)num(env, argv[2])) };
  for (size_t i = 0; i < n; i++) o[i] = (int32_t)i;
  for (size_t i = n; i > 1; i--) {
    size_t j = vs_below(&r, (uint32_t)i);
    int32_t t = o[i - 1]; o[i - 1] = o[j]; o[j] = t;
  }
  return NULL;
}

static void read_opts(napi_env env, napi_value o, vs_train_opts* t) {
  t->lr = (float)prop_num(env, o, "lr");
  t->beta1 = (float)prop_num(env, o, "beta1");
  t->beta2 = (float)prop_num(env, o, "beta2");
  t->eps = (float)prop_num(env, o, "eps");
  t->aln = prop_num(env, o, "aln") > 0;
}

static napi_value backprop_fn(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 8) FAIL("VT_ARGUMENT", "backprop(model, data, order, start, count, threads, epoch, opts)");
  vs_model* m = get_model(env, argv[0]);
  data_h* d = external(env, argv[1]);
  if (!check_pair(env, m, d)) return NULL;
  void* p; size_t n;
  if (!typed(env, argv[2], napi_int32_array, &p, &n)) return NULL;
  const int64_t start = (int64_t)num(env, argv[3]);
  const int count = (int)num(env, argv[4]);
  if (start < 0 || count < 1 || (size_t)(start + count) > n) FAIL("VT_ARGUMENT", "backprop: batch outside the order array");
  const int32_t* order = p;
  for (int i = 0; i < count; i++) if (order[start + i] < 0 || order[start + i] >= d->n) FAIL("VT_ARGUMENT", "backprop: order names a missing sample");
  vs_train_opts o;
  read_opts(env, argv[7], &o);
  vs_pass_stats st;
  vs_backprop(m, &d->d, order, start, count, (int)num(env, argv[5]), (uint64_t)num(env, argv[6]), &o, &st);
  double out[9] = { st.loss, st.samples, st.unlabelled, st.union_sum, st.filled_sum, st.active_sum, st.queries, st.label_missed, st.aln_inserts };
  return make_f64(env, out, 9);
}

static napi_value adam_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) FAIL("VT_ARGUMENT", "adamStep(model, threads, opts)");
  vs_model* m = get_model(env, argv[0]);
  if (!m) return NULL;
  vs_train_opts o;
  read_opts(env, argv[2], &o);
  vs_adam_step(m, (int)num(env, argv[1]), &o);
  return NULL;
}

static napi_value index_fn(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 4) FAIL("VT_ARGUMENT", "index(model, threads, all, round)");
  vs_model* m = get_model(env, argv[0]);
  if (!m) return NULL;
  bool all = false;
  napi_get_value_bool(env, argv[2], &all);
  for (int l = 0; l < m->n_layers; l++)
    if (m->layers[l].sparse) vs_layer_index(m, l, all, (int)num(env, argv[1]), (uint64_t)num(env, argv[3]));
  return NULL;
}

static napi_value evaluate_fn(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) FAIL("VT_ARGUMENT", "evaluate(model, data, start, count, threads, mode, sparsity)");
  vs_model* m = get_model(env, argv[0]);
  data_h* d = external(env, argv[1]);
  if (!check_pair(env, m, d)) return NULL;
  const int64_t start = (int64_t)num(env, argv[2]), count = (int64_t)num(env, argv[3]);
  const int mode = (int)num(env, argv[5]);
  const double s = num(env, argv[6]);
  if (start < 0 || count < 0 || start + count > d->n) FAIL("VT_ARGUMENT", "evaluate: rows outside the data set");
  if ((mode != VS_MODE_DENSE && mode != VS_MODE_SPARSE) || !(s > 0 && s <= 1)) FAIL("VT_ARGUMENT", "evaluate: bad mode or sparsity");
  vs_eval_stats st;
  vs_evaluate(m, &d->d, start, count, (int)num(env, argv[4]), mode, (float)s, &st);
  double out[7] = { st.counted, st.p1, st.p5, st.r5, st.loss, st.loss_counted, st.active_sum };
  return make_f64(env, out, 7);
}

static napi_value scores_fn(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) FAIL("VT_ARGUMENT", "scores(model, data, start, count, threads, mode, sparsity)");
  vs_model* m = get_model(env, argv[0]);
  data_h* d = external(env, argv[1]);
  if (!check_pair(env, m, d)) return NULL;
  const int64_t start = (int64_t)num(env, argv[2]);
  const int count = (int)num(env, argv[3]);
  const int mode = (int)num(env, argv[5]);
  const double s = num(env, argv[6]);
  if (start < 0 || count < 0 || start + count > d->n) FAIL("VT_ARGUMENT", "scores: rows outside the data set");
  if ((mode != VS_MODE_DENSE && mode != VS_MODE_SPARSE) || !(s > 0 && s <= 1)) FAIL("VT_ARGUMENT", "scores: bad mode or sparsity");
  const size_t width = (size_t)m->layers[m->n_layers - 1].out;
  void* data;
  napi_value arr = make_typed(env, napi_float32_array, 4, (size_t)count * width, &data);
  if (!arr) FAIL("VT_MEMORY", "scores: out of memory");
  vs_scores(m, &d->d, start, count, (int)num(env, argv[4]), mode, (float)s, data);
  return arr;
}

static napi_value get_tensor_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  char name[8] = { 0 };
  size_t len;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) FAIL("VT_ARGUMENT", "getTensor(model, layer, name)");
  vs_model* m = get_model(env, argv[0]);
  if (!m) return NULL;
  CHECK(napi_get_value_string_utf8(env, argv[2], name, sizeof name, &len));
  size_t n = 0;
  float* t = vs_tensor(m, (int)num(env, argv[1]), name, &n);
  if (!t) FAIL("VT_ARGUMENT", "getTensor: no such layer or tensor");
  void* data;
  napi_value arr = make_typed(env, napi_float32_array, 4, n, &data);
  if (!arr) FAIL("VT_MEMORY", "getTensor: out of memory");
  memcpy(data, t, n * 4);
  return arr;
}

static napi_value set_tensor_fn(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  char name[8] = { 0 };
  size_t len;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 4) FAIL("VT_ARGUMENT", "setTensor(model, layer, name, values)");
  vs_model* m = get_model(env, argv[0]);
  if (!m) return NULL;
  CHECK(napi_get_value_string_utf8(env, argv[2], name, sizeof name, &len));
  size_t n = 0, given = 0;
  float* t = vs_tensor(m, (int)num(env, argv[1]), name, &n);
  void* src;
  if (!t) FAIL("VT_ARGUMENT", "setTensor: no such layer or tensor");
  if (!typed(env, argv[3], napi_float32_array, &src, &given)) return NULL;
  if (given != n) FAIL("VT_ARGUMENT", "setTensor: wrong element count");
  memcpy(t, src, n * 4);
  return NULL;
}

static napi_value get_step_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], r;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  vs_model* m = argc ? get_model(env, argv[0]) : NULL;
  if (!m) return NULL;
  CHECK(napi_create_double(env, m->adam_step, &r));
  return r;
}

static napi_value set_step_fn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  vs_model* m = argc == 2 ? get_model(env, argv[0]) : NULL;
  if (!m) return NULL;
  m->adam_step = num(env, argv[1]);
  return NULL;
}

static vs_layer* sparse_layer(napi_env env, napi_value mv, napi_value lv) {
  vs_model* m = get_model(env, mv);
  if (!m) return NULL;
  int l = (int)num(env, lv);
  if (l < 0 || l >= m->n_layers || !m->layers[l].sparse) { napi_throw_error(env, "VT_ARGUMENT", "not a sparse layer"); return NULL; }
  return &m->layers[l];
}

static void set_num(napi_env env, napi_value o, const char* name, double x) {
  napi_value v;
  napi_create_double(env, x, &v);
  napi_set_named_property(env, o, name, v);
}

static napi_value hash_info_fn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], o;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  vs_layer* L = argc == 2 ? sparse_layer(env, argv[0], argv[1]) : NULL;
  if (!L) return NULL;
  const vs_hash* h = &L->hash;
  CHECK(napi_create_object(env, &o));
  set_num(env, o, "family", h->family); set_num(env, o, "K", h->K); set_num(env, o, "L", h->L);
  set_num(env, o, "R", L->tables.R); set_num(env, o, "dim", h->dim); set_num(env, o, "rowBytes", h->row_bytes);
  set_num(env, o, "perTable", h->per_table);
  napi_value seed;
  CHECK(napi_create_bigint_uint64(env, h->seed, &seed));
  napi_set_named_property(env, o, "seed", seed);
  void* data;
  if (h->family == VS_HASH_SIMHASH) {
    size_t n = (size_t)h->dim * h->row_bytes;
    napi_value arr = make_typed(env, napi_uint8_array, 1, n, &data);
    if (!arr) FAIL("VT_MEMORY", "hashInfo: out of memory");
    memcpy(data, h->signs, n);
    napi_set_named_property(env, o, "signs", arr);
  } else {
    size_t n = (size_t)h->L * h->per_table * VS_DWTA_BIN;
    napi_value arr = make_typed(env, napi_int32_array, 4, n, &data);
    if (!arr) FAIL("VT_MEMORY", "hashInfo: out of memory");
    memcpy(data, h->bins, n * 4);
    napi_set_named_property(env, o, "bins", arr);
  }
  return o;
}

static napi_value tables_fn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], o;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  vs_layer* L = argc == 2 ? sparse_layer(env, argv[0], argv[1]) : NULL;
  if (!L) return NULL;
  const vs_tables* T = &L->tables;
  const size_t nb = (size_t)T->L * T->buckets;
  size_t total = 0;
  for (size_t b = 0; b < nb; b++) {
    const uint32_t* s = T->slots + b * T->R;
    size_t f = T->seen[b] < (uint32_t)T->R ? T->seen[b] : (size_t)T->R;
    for (size_t k = 0; k < f; k++) total += s[k] != VS_EMPTY;
  }
  void *off_p, *ids_p, *seen_p;
  napi_value off = make_typed(env, napi_uint32_array, 4, nb + 1, &off_p);
  napi_value ids = make_typed(env, napi_uint32_array, 4, total, &ids_p);
  napi_value seen = make_typed(env, napi_uint32_array, 4, nb, &seen_p);
  if (!off || !ids || !seen) FAIL("VT_MEMORY", "tables: out of memory");
  uint32_t* offsets = off_p;
  uint32_t* out = ids_p;
  size_t at = 0;
  for (size_t b = 0; b < nb; b++) {
    offsets[b] = (uint32_t)at;
    const uint32_t* s = T->slots + b * T->R;
    size_t f = T->seen[b] < (uint32_t)T->R ? T->seen[b] : (size_t)T->R;
    for (size_t k = 0; k < f; k++) if (s[k] != VS_EMPTY) out[at++] = s[k];
  }
  offsets[nb] = (uint32_t)at;
  memcpy(seen_p, T->seen, nb * 4);
  CHECK(napi_create_object(env, &o));
  napi_set_named_property(env, o, "offsets", off);
  napi_set_named_property(env, o, "ids", ids);
  napi_set_named_property(env, o, "seen", seen);
  return o;
}

static napi_value query_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], o;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) FAIL("VT_ARGUMENT", "query(model, layer, x)");
  vs_layer* L = sparse_layer(env, argv[0], argv[1]);
  if (!L) return NULL;
  void* x; size_t n;
  if (!typed(env, argv[2], napi_float32_array, &x, &n)) return NULL;
  if ((int)n != L->in) FAIL("VT_ARGUMENT", "query: x has the wrong length");
  uint32_t* ids = malloc((size_t)L->tables.L * L->tables.R * 4 + 4);
  uint32_t* codes = malloc((size_t)L->tables.L * 4);
  if (!ids || !codes) { free(ids); free(codes); FAIL("VT_MEMORY", "query: out of memory"); }
  int count = vs_query_union(get_model(env, argv[0]), (int)num(env, argv[1]), x, ids, codes);
  void *a, *b;
  napi_value ia = make_typed(env, napi_uint32_array, 4, (size_t)count, &a);
  napi_value ca = make_typed(env, napi_uint32_array, 4, (size_t)L->tables.L, &b);
  if (ia && ca) { memcpy(a, ids, (size_t)count * 4); memcpy(b, codes, (size_t)L->tables.L * 4); }
  free(ids); free(codes);
  if (!ia || !ca) FAIL("VT_MEMORY", "query: out of memory");
  CHECK(napi_create_object(env, &o));
  napi_set_named_property(env, o, "ids", ia);
  napi_set_named_property(env, o, "codes", ca);
  return o;
}

/* ---- sparse inference heads ---- */
/* busy: a headTopKAsync job holds the head's query scratch (one query at a time per head). */
typedef struct { vs_head h; napi_ref refs[6]; int live; int busy; } head_h;

static void head_finalize(napi_env env, void* data, void* hint) {
  (void)hint;
  head_h* h = data;
  if (h->live) vs_head_free(&h->h);
  for (int i = 0; i < 6; i++) if (h->refs[i]) napi_delete_reference(env, h->refs[i]);
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

static int is_null(napi_env env, napi_value v) {
  napi_valuetype t;
  return napi_typeof(env, v, &t) == napi_ok && (t == napi_null || t == napi_undefined);
}

static napi_value head_tables_fn(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], o;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 4) FAIL("VT_ARGUMENT", "headTables(config, w, n, d)");
  void* w; size_t nw;
  uint64_t seed;
  if (!typed(env, argv[1], napi_float32_array, &w, &nw) || !prop_u64(env, argv[0], "seed", &seed)) return NULL;
  const int family = (int)prop_num(env, argv[0], "family"), K = (int)prop_num(env, argv[0], "K"), L = (int)prop_num(env, argv[0], "L");
  const int R = (int)prop_num(env, argv[0], "R"), threads = (int)prop_num(env, argv[0], "threads");
  const int n = (int)num(env, argv[2]), d = (int)num(env, argv[3]);
  if (n < 1 || d < 1 || nw != (size_t)n * d || R < 1 || threads < 1) FAIL("VT_ARGUMENT", "headTables: w is not n x d, or R or threads < 1");
  char err[VS_ERR_LEN] = { 0 };
  vs_hash hash;
  if (vs_hash_init(&hash, family, K, L, d, seed, err)) FAIL("VT_ARGUMENT", err);
  uint32_t *offsets = NULL, *ids = NULL;
  size_t n_ids = 0;
  if (vs_head_build_tables(w, n, d, &hash, R, threads, &offsets, &ids, &n_ids, err)) { vs_hash_free(&hash); FAIL("VT_MEMORY", err); }
  const size_t n_off = (size_t)L * ((size_t)1 << K) + 1;
  void *po, *pi, *ph = NULL;
  napi_value off = make_typed(env, napi_uint32_array, 4, n_off, &po);
  napi_value idv = make_typed(env, napi_uint32_array, 4, n_ids, &pi);
  napi_value hv = family == VS_HASH_SIMHASH ? make_typed(env, napi_uint8_array, 1, (size_t)d * hash.row_bytes, &ph)
                                            : make_typed(env, napi_int32_array, 4, (size_t)L * hash.per_table * VS_DWTA_BIN, &ph);
  if (off && idv && hv) {
    memcpy(po, offsets, n_off * 4);
    memcpy(pi, ids, n_ids * 4);
    if (family == VS_HASH_SIMHASH) memcpy(ph, hash.signs, (size_t)d * hash.row_bytes);
    else memcpy(ph, hash.bins, (size_t)L * hash.per_table * VS_DWTA_BIN * 4);
  }
  free(offsets); free(ids);
  const int row_bytes = hash.row_bytes, per_table = hash.per_table;
  vs_hash_free(&hash);
  if (!off || !idv || !hv) FAIL("VT_MEMORY", "headTables: out of memory");
  napi_value rb, pt;
  CHECK(napi_create_object(env, &o));
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
  size_t argc = 7;
  napi_value argv[7], r;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) FAIL("VT_ARGUMENT", "headCreate(config, w, b, signs, bins, offsets, ids)");
  const int n = (int)prop_num(env, argv[0], "n"), d = (int)prop_num(env, argv[0], "d"), family = (int)prop_num(env, argv[0], "family");
  const int K = (int)prop_num(env, argv[0], "K"), L = (int)prop_num(env, argv[0], "L");
  const int row_bytes = (int)prop_num(env, argv[0], "rowBytes"), per_table = (int)prop_num(env, argv[0], "perTable");
  uint64_t seed;
  if (!prop_u64(env, argv[0], "seed", &seed)) return NULL;
  void *w, *b, *signs = NULL, *bins = NULL, *offsets, *ids;
  size_t nw, nbias, ns = 0, nbins = 0, noff, nids;
  if (!typed(env, argv[1], napi_float32_array, &w, &nw) || !typed(env, argv[2], napi_float32_array, &b, &nbias)) return NULL;
  if (!is_null(env, argv[3]) && !typed(env, argv[3], napi_uint8_array, &signs, &ns)) return NULL;
  if (!is_null(env, argv[4]) && !typed(env, argv[4], napi_int32_array, &bins, &nbins)) return NULL;
  if (!typed(env, argv[5], napi_uint32_array, &offsets, &noff) || !typed(env, argv[6], napi_uint32_array, &ids, &nids)) return NULL;
  if (n < 1 || d < 1 || nw != (size_t)n * d || nbias != (size_t)n) FAIL("VT_ARGUMENT", "headCreate: w is not n x d or b not n long");
  if (family == VS_HASH_SIMHASH && ns != (size_t)d * row_bytes) FAIL("VT_ARGUMENT", "headCreate: the simhash signs are not d x rowBytes");
  if (family == VS_HASH_DWTA && nbins != (size_t)L * per_table * VS_DWTA_BIN) FAIL("VT_ARGUMENT", "headCreate: the DWTA bins are not L x perTable x 8");
  char err[VS_ERR_LEN] = { 0 };
  vs_hash hash;
  if (vs_hash_wrap(&hash, family, K, L, d, seed, signs, row_bytes, bins, per_table, err)) FAIL("VT_ARGUMENT", err);
  head_h* h = calloc(1, sizeof *h);
  if (!h) FAIL("VT_MEMORY", "out of memory");
  if (vs_head_init(&h->h, n, d, w, b, &hash, offsets, noff, ids, nids, err)) { free(h); FAIL("VT_ARGUMENT", err); }
  h->live = 1;
  /* the head reads w, b, signs/bins, offsets and ids in place: hold them for its lifetime */
  for (int i = 0; i < 6; i++) if (!is_null(env, argv[i + 1])) napi_create_reference(env, argv[i + 1], 1, &h->refs[i]);
  if (napi_create_external(env, h, head_finalize, NULL, &r) != napi_ok) { head_finalize(env, h, NULL); return NULL; }
  return r;
}

/* The arguments both headTopK forms share, checked on the JS thread: 0 with a pending exception. */
typedef struct { head_h* h; napi_value x_value; const float* x; int rows, k, budget; } topk_args;

static int topk_args_of(napi_env env, napi_callback_info info, const char* usage, topk_args* a) {
  size_t argc = 5;
  napi_value argv[5];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5) { napi_throw_error(env, "VT_ARGUMENT", usage); return 0; }
  a->h = external(env, argv[0]);
  if (!a->h) return 0;
  if (a->h->busy) { napi_throw_error(env, "VT_BUSY", "headTopK: this head is answering another query (one at a time per head)"); return 0; }
  void* x; size_t nx;
  if (!typed(env, argv[1], napi_float32_array, &x, &nx)) return 0;
  a->x_value = argv[1];
  a->x = x;
  a->rows = (int)num(env, argv[2]); a->k = (int)num(env, argv[3]); a->budget = (int)num(env, argv[4]);
  if (a->rows < 1 || nx != (size_t)a->rows * a->h->h.d) { napi_throw_error(env, "VT_ARGUMENT", "headTopK: x is not rows x d"); return 0; }
  if (a->k < 1 || a->k > a->h->h.n || a->budget < 0) { napi_throw_error(env, "VT_ARGUMENT", "headTopK: k must be 1..n and budget >= 0"); return 0; }
  return 1;
}

static double topk_rows(head_h* h, const float* x, int rows, int k, int budget, float* values, int32_t* indices) {
  double scored = 0;
  for (int r = 0; r < rows; r++) {
    scored += vs_head_topk(&h->h, x + (size_t)r * h->h.d, k, budget, values + (size_t)r * k, indices + (size_t)r * k);
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
  if (!topk_args_of(env, info, "headTopK(head, x, rows, k, budget)", &a)) return NULL;
  void *pv, *pi;
  napi_value values = make_typed(env, napi_float32_array, 4, (size_t)a.rows * a.k, &pv);
  napi_value indices = make_typed(env, napi_int32_array, 4, (size_t)a.rows * a.k, &pi);
  if (!values || !indices) FAIL("VT_MEMORY", "headTopK: out of memory");
  return topk_result(env, values, indices, topk_rows(a.h, a.x, a.rows, a.k, a.budget, pv, pi));
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
  j->scored = topk_rows(j->a.h, j->a.x, j->a.rows, j->a.k, j->a.budget, j->values, j->indices);
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
  size_t argc = 1;
  napi_value head_value, promise, name;
  CHECK(napi_get_cb_info(env, info, &argc, &head_value, NULL, NULL));
  topk_job* j = calloc(1, sizeof *j);
  if (!j) FAIL("VT_MEMORY", "headTopKAsync: out of memory");
  if (!topk_args_of(env, info, "headTopKAsync(head, x, rows, k, budget)", &j->a)) { free(j); return NULL; }
  void *pv, *pi;
  napi_value values = make_typed(env, napi_float32_array, 4, (size_t)j->a.rows * j->a.k, &pv);
  napi_value indices = make_typed(env, napi_int32_array, 4, (size_t)j->a.rows * j->a.k, &pi);
  if (!values || !indices) { free(j); FAIL("VT_MEMORY", "headTopKAsync: out of memory"); }
  j->values = pv;
  j->indices = pi;
  int ok = napi_create_reference(env, head_value, 1, &j->head_ref) == napi_ok && napi_create_reference(env, j->a.x_value, 1, &j->x_ref) == napi_ok
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
  FAIL("VT_ARGUMENT", "headTopKAsync: N-API could not start the query");
}

/* Timing a head under a co-runner needs the timed thread on a known core, away from the noise. */
static cpu_set_t saved_mask;
static int saved = 0;

static napi_value pin_fn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], r;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  const int core = argc ? (int)num(env, argv[0]) : -1;
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
  CHECK(napi_get_boolean(env, ok, &r));
  return r;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
    { "isa", NULL, isa_fn, NULL, NULL, NULL, napi_default, NULL },
    { "codes", NULL, codes_fn, NULL, NULL, NULL, napi_default, NULL },
    { "create", NULL, create_fn, NULL, NULL, NULL, napi_default, NULL },
    { "dataset", NULL, dataset_fn, NULL, NULL, NULL, napi_default, NULL },
    { "shuffle", NULL, shuffle_fn, NULL, NULL, NULL, napi_default, NULL },
    { "backprop", NULL, backprop_fn, NULL, NULL, NULL, napi_default, NULL },
    { "adamStep", NULL, adam_fn, NULL, NULL, NULL, napi_default, NULL },
    { "index", NULL, index_fn, NULL, NULL, NULL, napi_default, NULL },
    { "evaluate", NULL, evaluate_fn, NULL, NULL, NULL, napi_default, NULL },
    { "scores", NULL, scores_fn, NULL, NULL, NULL, napi_default, NULL },
    { "getTensor", NULL, get_tensor_fn, NULL, NULL, NULL, napi_default, NULL },
    { "setTensor", NULL, set_tensor_fn, NULL, NULL, NULL, napi_default, NULL },
    { "getStep", NULL, get_step_fn, NULL, NULL, NULL, napi_default, NULL },
    { "setStep", NULL, set_step_fn, NULL, NULL, NULL, napi_default, NULL },
    { "hashInfo", NULL, hash_info_fn, NULL, NULL, NULL, napi_default, NULL },
    { "tables", NULL, tables_fn, NULL, NULL, NULL, napi_default, NULL },
    { "query", NULL, query_fn, NULL, NULL, NULL, napi_default, NULL },
    { "close", NULL, close_fn, NULL, NULL, NULL, napi_default, NULL },
    { "headTables", NULL, head_tables_fn, NULL, NULL, NULL, napi_default, NULL },
    { "headCreate", NULL, head_create_fn, NULL, NULL, NULL, napi_default, NULL },
    { "headTopK", NULL, head_topk_fn, NULL, NULL, NULL, napi_default, NULL },
    { "headTopKAsync", NULL, head_topk_async_fn, NULL, NULL, NULL, napi_default, NULL },
    { "pinCallingThread", NULL, pin_fn, NULL, NULL, NULL, napi_default, NULL },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
