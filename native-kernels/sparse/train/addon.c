/*
 * The N-API add-on of sparse training, built on first use like the runtime's from this folder and
 * the shared core in native-kernels/sparse/ (src/sparse/native-build.ts); the serving head has its
 * own add-on (../head/addon.c). JavaScript owns the data arrays (the add-on keeps references and
 * reads them in place: a data set is never copied) and orchestrates epochs, schedules and files;
 * every loop over samples, neurons or weights is in C.
 *
 * Exports (synchronous unless named Async; one JS thread drives a model):
 *   isa() -> "avx512" | "avx2" | "scalar"
 *   codes() -> {activation, hash, mode}: the enum values compiled in (checked by src/sparse/native.ts at load)
 *   create({inputDim, seed, threads, layers:[{dim, act, sparse, sparsity, family, K, L, R}]}) -> model
 *   dataset(row F64, idx I32, val F32, lrow F64, labels I32, inputDim, outputDim) -> data
 *   shuffle(order I32, seed, epoch)
 *   backprop(model, data, order, start, count, threads, epoch, opts) -> F64 stats
 *   adamStep(model, threads, opts); index(model, threads, all, round)
 *     opts: {lr, beta1, beta2, eps, aln, optimizer, pass?}; with optimizer "adam" rows behind are caught up (adam.c);
 *     pass: 0 per sample, 1 (or absent) neuron-major where the network fits, 2 the same with the output layer's
 *     Adam step taken in backprop (its gradients never stored; adamStep must follow every backprop) (batched.c)
 *     before evaluate, scores, index, getTensor and setTensor read or write them
 *   evaluate(model, data, start, count, threads, mode, sparsity) -> F64 stats
 *   scores(model, data, start, count, threads, mode, sparsity) -> F32 [count x out]
 *   getTensor(model, layer, name) -> F32 copy; setTensor(model, layer, name, F32)
 *   getStep(model), setStep(model, step)
 *   setAlways(model, layer, ids I32)  neurons every training sample computes on a sparse layer (pass.c)
 *   hashInfo(model, layer) -> {family, K, L, R, dim, rowBytes, perTable, seed: bigint, signs?: U8, bins?: I32}
 *   tables(model, layer) -> {offsets: U32 [L*2^K+1], ids: U32, seen: U32 [L*2^K]}
 *   query(model, layer, x F32) -> {ids: U32, codes: U32}
 *   profile(model, reset) -> F64 [VS_PH_N thread-seconds summed over threads, VS_WL_N wall seconds] (profile.c)
 *   close(model)                      frees the model now (later calls throw)
 * Errors are thrown with code VT_ARGUMENT (a wrong call) or VT_MEMORY (allocation failed).
 * The index-inspection bindings (hashInfo, tables, query) are in index.c, the epoch profile's in profile.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../vs.h"
#include "../vs_napi.h"
#include "../vs_model.h"
#include "bindings.h"

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

static void* external(napi_env env, napi_value v) { return vt_external(env, v, "not a veltair sparse handle"); }

vs_model* vs_napi_model(napi_env env, napi_value v) {
  model_h* h = external(env, v);
  if (h && !h->m) napi_throw_error(env, "VT_ARGUMENT", "this veltair sparse model was closed");
  return h ? h->m : NULL;
}

/* Free a model's memory now rather than at garbage collection (a benchmark creates many). */
static napi_value close_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  model_h* h = argc ? external(env, argv[0]) : NULL;
  if (!h) return NULL;
  vs_model_free(h->m);
  h->m = NULL;
  return NULL;
}

/* The enum values this build was compiled with, so the loader can refuse a build whose codes differ from src/sparse/native.ts. */
static napi_value codes_fn(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value o;
  VT_CHECK(napi_create_object(env, &o));
  static const char* const acts[] = { "relu", "linear", "tanh", "softmax", "sigmoid" };
  static const int act_v[] = { VS_ACT_RELU, VS_ACT_LINEAR, VS_ACT_TANH, VS_ACT_SOFTMAX, VS_ACT_SIGMOID };
  static const char* const hashes[] = { "simhash", "dwta" };
  static const int hash_v[] = { VS_HASH_SIMHASH, VS_HASH_DWTA };
  static const char* const modes[] = { "dense", "sparse" };
  static const int mode_v[] = { VS_MODE_DENSE, VS_MODE_SPARSE };
  static const char* const opts[] = { "adam", "lazy-adam", "dense-adam" };
  static const int opt_v[] = { VS_OPT_ADAM, VS_OPT_LAZY, VS_OPT_DENSE };
  vs_put_codes(env, o, "activation", acts, act_v, 5);
  vs_put_codes(env, o, "hash", hashes, hash_v, 2);
  vs_put_codes(env, o, "mode", modes, mode_v, 2);
  vs_put_codes(env, o, "optimizer", opts, opt_v, 3);
  static const char* const passes[] = { "sample", "neuron", "neuron-adam" };
  static const int pass_v[] = { VS_PASS_SAMPLE, VS_PASS_NEURON, VS_PASS_NEURON_ADAM };
  vs_put_codes(env, o, "pass", passes, pass_v, 3);
  return o;
}

static napi_value create_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1], layers, r;
  if (!vt_args_min(env, info, 1, argv, "create(config)")) return NULL;
  const double input = vt_prop_num(env, argv[0], "inputDim"), seed = vt_prop_num(env, argv[0], "seed"), threads = vt_prop_num(env, argv[0], "threads");
  VT_CHECK(napi_get_named_property(env, argv[0], "layers", &layers));
  uint32_t n = 0;
  VT_CHECK(napi_get_array_length(env, layers, &n));
  if (n < 1 || n > VS_MAX_LAYERS || !(input >= 1) || !(threads >= 1) || !(seed >= 0)) {
    VT_FAIL("VT_ARGUMENT", "create: bad inputDim, seed, threads or layer count");
  }
  vs_layer_spec specs[VS_MAX_LAYERS];
  for (uint32_t i = 0; i < n; i++) {
    napi_value o;
    VT_CHECK(napi_get_element(env, layers, i, &o));
    specs[i].out = (int)vt_prop_num(env, o, "dim");
    specs[i].act = (int)vt_prop_num(env, o, "act");
    specs[i].sparse = vt_prop_num(env, o, "sparse") > 0;
    specs[i].sparsity = (float)vt_prop_num(env, o, "sparsity");
    specs[i].family = (int)vt_prop_num(env, o, "family");
    specs[i].K = (int)vt_prop_num(env, o, "K");
    specs[i].L = (int)vt_prop_num(env, o, "L");
    specs[i].R = (int)vt_prop_num(env, o, "R");
    if (specs[i].out < 1 || !(specs[i].sparsity > 0 && specs[i].sparsity <= 1)) VT_FAIL("VT_ARGUMENT", "create: a layer has a bad dim or sparsity");
    if (specs[i].sparse && (specs[i].K < 1 || specs[i].L < 1 || specs[i].R < 1)) VT_FAIL("VT_ARGUMENT", "create: a sparse layer needs K, L, R >= 1");
  }
  char err[VS_ERR_LEN] = { 0 };
  vs_model* m = vs_model_create((int)input, (int)n, specs, (uint64_t)seed, (int)threads, err);
  if (!m) VT_FAIL("VT_MEMORY", err);
  model_h* h = calloc(1, sizeof *h);
  if (!h) { vs_model_free(m); VT_FAIL("VT_MEMORY", "out of memory"); }
  h->m = m;
  if (napi_create_external(env, h, model_finalize, NULL, &r) != napi_ok) { vs_model_free(m); free(h); return NULL; }
  return r;
}

static napi_value dataset_fn(napi_env env, napi_callback_info info) {
  napi_value argv[7], r;
  if (!vt_args_min(env, info, 7, argv, "dataset(row, idx, val, lrow, labels, inputDim, outputDim)")) return NULL;
  void *row, *idx, *val, *lrow, *labels;
  size_t nrow, nidx, nval, nlrow, nlab;
  if (!vt_typed(env, argv[0], napi_float64_array, &row, &nrow) || !vt_typed(env, argv[1], napi_int32_array, &idx, &nidx)
      || !vt_typed(env, argv[2], napi_float32_array, &val, &nval) || !vt_typed(env, argv[3], napi_float64_array, &lrow, &nlrow)
      || !vt_typed(env, argv[4], napi_int32_array, &labels, &nlab)) return NULL;
  const int input = (int)vt_num(env, argv[5]), output = (int)vt_num(env, argv[6]);
  if (nrow < 1 || nrow != nlrow || nidx < nval) VT_FAIL("VT_ARGUMENT", "dataset: row and label offsets differ in length");
  const double* R = row;
  const double* LR = lrow;
  const int64_t n = (int64_t)nrow - 1;
  if (R[0] != 0 || LR[0] != 0 || R[n] > (double)nval || LR[n] > (double)nlab) VT_FAIL("VT_ARGUMENT", "dataset: offsets out of range");
  for (int64_t i = 0; i < n; i++) if (R[i + 1] < R[i] || LR[i + 1] < LR[i]) VT_FAIL("VT_ARGUMENT", "dataset: offsets decrease");
  const int32_t* I = idx;
  const int32_t* Y = labels;
  const float* V = val;
  for (size_t k = 0; k < (size_t)R[n]; k++)
    if (I[k] < 0 || I[k] >= input || !isfinite(V[k])) VT_FAIL("VT_ARGUMENT", "dataset: a feature index or value is out of range");
  for (size_t k = 0; k < (size_t)LR[n]; k++) if (Y[k] < 0 || Y[k] >= output) VT_FAIL("VT_ARGUMENT", "dataset: a label is out of range");
  data_h* h = calloc(1, sizeof *h);
  if (!h) VT_FAIL("VT_MEMORY", "out of memory");
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
  napi_value argv[3];
  const int argc = vt_args(env, info, 3, argv);
  if (argc < 0) return NULL;
  void* p; size_t n;
  if (argc < 3 || !vt_typed(env, argv[0], napi_int32_array, &p, &n)) return NULL;
  int32_t* o = p;
  vs_rng r = { vs_key((uint64_t)vt_num(env, argv[1]), 0x5E1Full, (uint64_t)vt_num(env, argv[2])) };
  for (size_t i = 0; i < n; i++) o[i] = (int32_t)i;
  for (size_t i = n; i > 1; i--) {
    size_t j = vs_below(&r, (uint32_t)i);
    int32_t t = o[i - 1]; o[i - 1] = o[j]; o[j] = t;
  }
  return NULL;
}

/* The optimiser's options, recorded in the model; 0 with a pending exception. */
static int read_opts(napi_env env, napi_value o, vs_model* m, int threads, vs_train_opts* t) {
  t->lr = (float)vt_prop_num(env, o, "lr");
  t->beta1 = (float)vt_prop_num(env, o, "beta1");
  t->beta2 = (float)vt_prop_num(env, o, "beta2");
  t->eps = (float)vt_prop_num(env, o, "eps");
  t->aln = vt_prop_num(env, o, "aln") > 0;
  const double uniform = vt_prop_num(env, o, "uniform"); /* absent (NaN) or 0: none */
  t->uniform = uniform > 0 && uniform < 1 ? (float)uniform : 0.0f;
  t->logq = vt_prop_num(env, o, "logq") > 0;
  const double pass = vt_prop_num(env, o, "pass"); /* absent: neuron-major where it fits (batched.c) */
  t->pass = pass == VS_PASS_SAMPLE || pass == VS_PASS_NEURON_ADAM ? (int)pass : VS_PASS_NEURON;
  const double opt = vt_prop_num(env, o, "optimizer");
  t->optimizer = (int)opt;
  if (!(opt == VS_OPT_ADAM || opt == VS_OPT_LAZY || opt == VS_OPT_DENSE)) {
    napi_throw_error(env, "VT_ARGUMENT", "opts.optimizer is not an optimizer code");
    return 0;
  }
  if (!(t->lr > 0) || !(t->beta1 >= 0 && t->beta1 < 1) || !(t->beta2 >= 0 && t->beta2 < 1) || !(t->eps >= 0)) {
    napi_throw_error(env, "VT_ARGUMENT", "opts: lr > 0, 0 <= beta1, beta2 < 1 and eps >= 0");
    return 0;
  }
  if (vs_adam_prepare(m, t, threads)) {
    napi_throw_error(env, "VT_MEMORY", "out of memory for the optimiser's tables");
    return 0;
  }
  return 1;
}

static napi_value backprop_fn(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  if (!vt_args_min(env, info, 8, argv, "backprop(model, data, order, start, count, threads, epoch, opts)")) return NULL;
  vs_model* m = vs_napi_model(env, argv[0]);
  data_h* d = external(env, argv[1]);
  if (!check_pair(env, m, d)) return NULL;
  void* p; size_t n;
  if (!vt_typed(env, argv[2], napi_int32_array, &p, &n)) return NULL;
  const int64_t start = (int64_t)vt_num(env, argv[3]);
  const int count = (int)vt_num(env, argv[4]);
  if (start < 0 || count < 1 || (size_t)(start + count) > n) VT_FAIL("VT_ARGUMENT", "backprop: batch outside the order array");
  const int32_t* order = p;
  for (int i = 0; i < count; i++) if (order[start + i] < 0 || order[start + i] >= d->n) VT_FAIL("VT_ARGUMENT", "backprop: order names a missing sample");
  vs_train_opts o;
  if (!read_opts(env, argv[7], m, (int)vt_num(env, argv[5]), &o)) return NULL;
  vs_pass_stats st;
  vs_backprop(m, &d->d, order, start, count, (int)vt_num(env, argv[5]), (uint64_t)vt_num(env, argv[6]), &o, &st);
  double out[9] = { st.loss, st.samples, st.unlabelled, st.union_sum, st.filled_sum, st.active_sum, st.queries, st.label_missed, st.aln_inserts };
  return vt_copy_typed(env, napi_float64_array, out, 9);
}

static napi_value adam_fn(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  if (!vt_args_min(env, info, 3, argv, "adamStep(model, threads, opts)")) return NULL;
  vs_model* m = vs_napi_model(env, argv[0]);
  if (!m) return NULL;
  vs_train_opts o;
  if (!read_opts(env, argv[2], m, (int)vt_num(env, argv[1]), &o)) return NULL;
  vs_adam_step(m, (int)vt_num(env, argv[1]));
  return NULL;
}

static napi_value index_fn(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  if (!vt_args_min(env, info, 4, argv, "index(model, threads, all, round)")) return NULL;
  vs_model* m = vs_napi_model(env, argv[0]);
  if (!m) return NULL;
  bool all = false;
  napi_get_value_bool(env, argv[2], &all);
  const double t0 = vs_now();
  for (int l = 0; l < m->n_layers; l++) {
    if (!m->layers[l].sparse) continue;
    vs_flush(m, l, (int)vt_num(env, argv[1])); /* the tables hash the weights: current ones */
    vs_layer_index(m, l, all, (int)vt_num(env, argv[1]), (uint64_t)vt_num(env, argv[3]));
  }
  m->prof_wall[VS_WL_INDEX] += vs_now() - t0;
  return NULL;
}

/* The arguments evaluate and scores share: (model, data, start, count, threads, mode, sparsity), checked. */
typedef struct { vs_model* m; data_h* d; int64_t start, count; int threads, mode; float sparsity; } rows_args;

static int rows_args_of(napi_env env, napi_callback_info info, const char* usage, const char* what, rows_args* a) {
  napi_value argv[7];
  char msg[96];
  if (!vt_args_min(env, info, 7, argv, usage)) return 0;
  a->m = vs_napi_model(env, argv[0]);
  a->d = external(env, argv[1]);
  if (!check_pair(env, a->m, a->d)) return 0;
  a->start = (int64_t)vt_num(env, argv[2]);
  a->count = (int64_t)vt_num(env, argv[3]);
  a->threads = (int)vt_num(env, argv[4]);
  a->mode = (int)vt_num(env, argv[5]);
  const double s = vt_num(env, argv[6]);
  a->sparsity = (float)s;
  if (a->start < 0 || a->count < 0 || a->start + a->count > a->d->n) {
    snprintf(msg, sizeof msg, "%s: rows outside the data set", what);
    napi_throw_error(env, "VT_ARGUMENT", msg);
    return 0;
  }
  if ((a->mode != VS_MODE_DENSE && a->mode != VS_MODE_SPARSE) || !(s > 0 && s <= 1)) {
    snprintf(msg, sizeof msg, "%s: bad mode or sparsity", what);
    napi_throw_error(env, "VT_ARGUMENT", msg);
    return 0;
  }
  return 1;
}

static napi_value evaluate_fn(napi_env env, napi_callback_info info) {
  rows_args a;
  if (!rows_args_of(env, info, "evaluate(model, data, start, count, threads, mode, sparsity)", "evaluate", &a)) return NULL;
  vs_eval_stats st;
  vs_flush(a.m, -1, a.threads);
  vs_evaluate(a.m, &a.d->d, a.start, a.count, a.threads, a.mode, a.sparsity, &st);
  double out[7] = { st.counted, st.p1, st.p5, st.r5, st.loss, st.loss_counted, st.active_sum };
  return vt_copy_typed(env, napi_float64_array, out, 7);
}

static napi_value scores_fn(napi_env env, napi_callback_info info) {
  rows_args a;
  if (!rows_args_of(env, info, "scores(model, data, start, count, threads, mode, sparsity)", "scores", &a)) return NULL;
  const size_t width = (size_t)a.m->layers[a.m->n_layers - 1].out;
  void* data;
  napi_value arr = vt_new_typed(env, napi_float32_array, (size_t)a.count * width, &data);
  if (!arr) VT_FAIL("VT_MEMORY", "scores: out of memory");
  vs_flush(a.m, -1, a.threads);
  vs_scores(a.m, &a.d->d, a.start, (int)a.count, a.threads, a.mode, a.sparsity, data);
  return arr;
}

/* (model, layer, name): the named tensor of a layer and its length; NULL with a pending exception. */
static float* tensor_of(napi_env env, napi_value* argv, const char* what, size_t* n) {
  char name[8] = { 0 }, msg[64];
  size_t len;
  vs_model* m = vs_napi_model(env, argv[0]);
  if (!m) return NULL;
  if (napi_get_value_string_utf8(env, argv[2], name, sizeof name, &len) != napi_ok) {
    napi_throw_error(env, "VT_ARGUMENT", "veltair sparse: the tensor name must be a string");
    return NULL;
  }
  const int layer = (int)vt_num(env, argv[1]);
  float* t = vs_tensor(m, layer, name, n);
  if (t) vs_flush(m, layer, m->threads_alloc); /* read or overwritten: every row current first */
  if (!t) {
    snprintf(msg, sizeof msg, "%s: no such layer or tensor", what);
    napi_throw_error(env, "VT_ARGUMENT", msg);
  }
  return t;
}

static napi_value get_tensor_fn(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  size_t n = 0;
  if (!vt_args_min(env, info, 3, argv, "getTensor(model, layer, name)")) return NULL;
  const float* t = tensor_of(env, argv, "getTensor", &n);
  if (!t) return NULL;
  napi_value arr = vt_copy_typed(env, napi_float32_array, t, n);
  if (!arr) VT_FAIL("VT_MEMORY", "getTensor: out of memory");
  return arr;
}

static napi_value set_tensor_fn(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  size_t n = 0, given = 0;
  void* src;
  if (!vt_args_min(env, info, 4, argv, "setTensor(model, layer, name, values)")) return NULL;
  float* t = tensor_of(env, argv, "setTensor", &n);
  if (!t) return NULL;
  if (!vt_typed(env, argv[3], napi_float32_array, &src, &given)) return NULL;
  if (given != n) VT_FAIL("VT_ARGUMENT", "setTensor: wrong element count");
  memcpy(t, src, n * 4);
  return NULL;
}

static napi_value get_step_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1], r;
  const int argc = vt_args(env, info, 1, argv);
  if (argc < 0) return NULL;
  vs_model* m = argc ? vs_napi_model(env, argv[0]) : NULL;
  if (!m) return NULL;
  VT_CHECK(napi_create_double(env, m->adam_step, &r));
  return r;
}

static napi_value set_step_fn(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  const int argc = vt_args(env, info, 2, argv);
  if (argc < 0) return NULL;
  vs_model* m = argc == 2 ? vs_napi_model(env, argv[0]) : NULL;
  if (!m) return NULL;
  const double step = vt_num(env, argv[1]);
  if (!(step >= 0 && step < 4294967295.0) || step != floor(step)) VT_FAIL("VT_ARGUMENT", "setStep: the step is not a whole number below 2^32 - 1");
  vs_adam_set_step(m, step);
  return NULL;
}

static napi_value set_always_fn(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  if (!vt_args_min(env, info, 3, argv, "setAlways(model, layer, ids)")) return NULL;
  vs_model* m = vs_napi_model(env, argv[0]);
  if (!m) return NULL;
  const int l = (int)vt_num(env, argv[1]);
  void* p; size_t n;
  if (!vt_typed(env, argv[2], napi_int32_array, &p, &n)) return NULL;
  if (l < 0 || l >= m->n_layers || !m->layers[l].sparse) VT_FAIL("VT_ARGUMENT", "setAlways: not a sparse layer");
  vs_layer* L = &m->layers[l];
  const int32_t* ids = p;
  if (n > (size_t)L->out) VT_FAIL("VT_ARGUMENT", "setAlways: more ids than neurons");
  for (size_t i = 0; i < n; i++) if (ids[i] < 0 || ids[i] >= L->out) VT_FAIL("VT_ARGUMENT", "setAlways: an id is out of range");
  int32_t* copy = malloc((n ? n : 1) * sizeof *copy);
  if (!copy) VT_FAIL("VT_MEMORY", "out of memory");
  memcpy(copy, ids, n * sizeof *copy);
  free(L->always);
  L->always = copy;
  L->n_always = (int)n;
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
    VT_METHOD("isa", isa_fn),
    VT_METHOD("codes", codes_fn),
    VT_METHOD("create", create_fn),
    VT_METHOD("dataset", dataset_fn),
    VT_METHOD("shuffle", shuffle_fn),
    VT_METHOD("backprop", backprop_fn),
    VT_METHOD("adamStep", adam_fn),
    VT_METHOD("index", index_fn),
    VT_METHOD("evaluate", evaluate_fn),
    VT_METHOD("scores", scores_fn),
    VT_METHOD("getTensor", get_tensor_fn),
    VT_METHOD("setTensor", set_tensor_fn),
    VT_METHOD("getStep", get_step_fn),
    VT_METHOD("setStep", set_step_fn),
    VT_METHOD("setAlways", set_always_fn),
    VT_METHOD("hashInfo", hash_info_fn),
    VT_METHOD("tables", tables_fn),
    VT_METHOD("query", query_fn),
    VT_METHOD("profile", profile_fn),
    VT_METHOD("close", close_fn),
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
