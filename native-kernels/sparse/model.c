/*
 * A network's memory: per layer the weights, biases, their gradients and Adam moments, the
 * touched/dirty flags, and for LSH-sampled layers the hash family and tables; per thread the
 * scratch of one sample. Weights start like PyTorch's nn.Linear (uniform ±1/sqrt(fan_in) for
 * weights and biases), from the model seed, so runs with one seed start from one point.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "vs.h"
#include "vs_model.h"

#define HUGE_PAGE ((size_t)2 << 20)

void* vs_alloc(size_t bytes) {
  if (bytes >= HUGE_PAGE) {
    size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void* p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, rounded) != 0) return NULL;
    madvise(p, rounded, MADV_HUGEPAGE); /* advice only: without THP this is an ordinary allocation */
    memset(p, 0, rounded);
    return p;
  }
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = aligned_alloc(64, rounded ? rounded : 64);
  if (p) memset(p, 0, rounded ? rounded : 64);
  return p;
}

#define zalloc vs_alloc

static int alloc_layer(vs_layer* L, char* err) {
  const size_t n = (size_t)L->in * L->out;
  const size_t rows = L->input_major ? (size_t)L->in : (size_t)L->out;
  L->w = zalloc(n * 4); L->gw = zalloc(n * 4); L->mw = zalloc(n * 4); L->vw = zalloc(n * 4);
  L->b = zalloc((size_t)L->out * 4); L->gb = zalloc((size_t)L->out * 4);
  L->mb = zalloc((size_t)L->out * 4); L->vb = zalloc((size_t)L->out * 4);
  L->touched = zalloc(rows);
  L->dirty = zalloc((size_t)L->out);
  L->last = zalloc(rows * 4);
  if (!L->last || !L->w || !L->gw || !L->mw || !L->vw || !L->b || !L->gb || !L->mb || !L->vb || !L->touched || !L->dirty) {
    snprintf(err, VS_ERR_LEN, "out of memory for a %d x %d layer (%.2f GiB with gradients and Adam moments)",
             L->in, L->out, (double)n * 16 / (1 << 30));
    return 1;
  }
  return 0;
}

static void init_weights(vs_layer* L, uint64_t seed, int l) {
  const float bound = 1.0f / sqrtf((float)L->in);
  vs_rng r = { vs_key(seed, 0x1417ull, (uint64_t)l) };
  const size_t n = (size_t)L->in * L->out;
  for (size_t i = 0; i < n; i++) L->w[i] = (2.0f * vs_uniform(&r) - 1.0f) * bound;
  for (int i = 0; i < L->out; i++) L->b[i] = (2.0f * vs_uniform(&r) - 1.0f) * bound;
}

static int alloc_work(vs_model* m, vs_work* w, char* err) {
  memset(w, 0, sizeof *w);
  int max_out = 1, max_bits = 8, max_L = 1, max_sparse = 1, max_in = 1;
  for (int l = 0; l < m->n_layers; l++) {
    const vs_layer* L = &m->layers[l];
    if (L->out > max_out) max_out = L->out;
    if (l > 0 && L->in > max_in) max_in = L->in;
    if (L->sparse) {
      if (L->hash.row_bytes * 8 > max_bits) max_bits = L->hash.row_bytes * 8;
      if (L->hash.L > max_L) max_L = L->hash.L;
      if (L->out > max_sparse) max_sparse = L->out;
    }
  }
  int ok = 1;
  for (int l = 0; l < m->n_layers; l++) {
    const int out = m->layers[l].out;
    w->act[l] = zalloc((size_t)out * 4);
    w->delta[l] = zalloc((size_t)out * 4);
    w->idx[l] = zalloc((size_t)out * 4);
    ok &= w->act[l] && w->delta[l] && w->idx[l];
  }
  w->dinput = zalloc((size_t)(max_out > max_in ? max_out : max_in) * 4);
  w->hacc = zalloc((size_t)max_bits * 4);
  w->codes = zalloc((size_t)max_L * 4);
  w->hist = zalloc((size_t)(max_L + 2) * 4);
  w->stamp = zalloc((size_t)max_sparse * 4);
  w->stamp_len = max_sparse;
  w->freq = zalloc((size_t)max_sparse * 2);
  w->cand = zalloc((size_t)max_sparse * 4);
  w->pos = zalloc((size_t)max_out * 4);
  w->dense_scratch = zalloc((size_t)max_in * 4);
  ok &= w->dinput && w->hacc && w->codes && w->hist && w->stamp && w->freq && w->cand && w->pos && w->dense_scratch;
  if (!ok) snprintf(err, VS_ERR_LEN, "out of memory for per-thread scratch");
  return !ok;
}

static void free_work(vs_model* m, vs_work* w) {
  for (int l = 0; l < m->n_layers; l++) { free(w->act[l]); free(w->delta[l]); free(w->idx[l]); }
  free(w->dinput); free(w->hacc); free(w->codes); free(w->hist); free(w->stamp); free(w->freq);
  free(w->cand); free(w->pos); free(w->dense_scratch);
}

void vs_model_free(vs_model* m) {
  if (!m) return;
  for (int l = 0; l < m->n_layers; l++) {
    vs_layer* L = &m->layers[l];
    free(L->w); free(L->gw); free(L->mw); free(L->vw); free(L->b); free(L->gb); free(L->mb); free(L->vb);
    free(L->touched); free(L->dirty); free(L->last); free(L->always);
    vs_hash_free(&L->hash);
    vs_tables_free(&L->tables);
  }
  if (m->work) for (int t = 0; t < m->threads_alloc; t++) free_work(m, &m->work[t]);
  free(m->work);
  free(m->pw); free(m->bc);
  vs_batch_release(m->batch);
  free(m);
}

vs_model* vs_model_create(int input_dim, int n_layers, const vs_layer_spec* specs, uint64_t seed, int threads, char* err) {
  if (n_layers < 1 || n_layers > VS_MAX_LAYERS) { snprintf(err, VS_ERR_LEN, "a network has 1 to %d layers, not %d", VS_MAX_LAYERS, n_layers); return NULL; }
  if (input_dim < 1 || threads < 1) { snprintf(err, VS_ERR_LEN, "bad input dim %d or thread count %d", input_dim, threads); return NULL; }
  vs_model* m = calloc(1, sizeof *m);
  if (!m) { snprintf(err, VS_ERR_LEN, "out of memory"); return NULL; }
  m->n_layers = n_layers; m->input_dim = input_dim; m->seed = seed; m->threads_alloc = threads;
  int prev = input_dim;
  for (int l = 0; l < n_layers; l++) {
    const vs_layer_spec* s = &specs[l];
    vs_layer* L = &m->layers[l];
    L->in = prev; L->out = s->out; L->act = s->act; L->input_major = l == 0;
    L->sparse = s->sparse; L->sparsity = s->sparsity;
    L->target = (int)ceil((double)s->sparsity * s->out);
    if (L->target < 1) L->target = 1;
    if (L->target > L->out) L->target = L->out;
    if (s->out < 1) { snprintf(err, VS_ERR_LEN, "layer %d: dim %d", l, s->out); m->n_layers = l; vs_model_free(m); return NULL; }
    if (L->sparse && l == 0) {
      snprintf(err, VS_ERR_LEN, "layer 0 reads the sparse features and cannot be LSH-sampled");
      m->n_layers = l; vs_model_free(m); return NULL;
    }
    if (alloc_layer(L, err)) { m->n_layers = l + 1; vs_model_free(m); return NULL; }
    init_weights(L, seed, l);
    if (L->sparse) {
      if (vs_hash_init(&L->hash, s->family, s->K, s->L, L->in, vs_key(seed, 0x4A54ull, (uint64_t)l), err)
          || vs_tables_init(&L->tables, s->K, s->L, s->R, L->out, err)) { m->n_layers = l + 1; vs_model_free(m); return NULL; }
    }
    prev = s->out;
  }
  m->work = aligned_alloc(128, (size_t)threads * sizeof(vs_work));
  if (m->work) memset(m->work, 0, (size_t)threads * sizeof(vs_work));
  if (!m->work) { snprintf(err, VS_ERR_LEN, "out of memory"); vs_model_free(m); return NULL; }
  for (int t = 0; t < threads; t++) {
    if (alloc_work(m, &m->work[t], err)) { m->threads_alloc = t + 1; vs_model_free(m); return NULL; }
  }
  return m;
}

/* The named parameter array of a layer, and its element count. */
float* vs_tensor(vs_model* m, int l, const char* name, size_t* count) {
  if (l < 0 || l >= m->n_layers) return NULL;
  vs_layer* L = &m->layers[l];
  const size_t n = (size_t)L->in * L->out, o = (size_t)L->out;
  struct { const char* name; float* p; size_t n; } t[] = {
    { "w", L->w, n }, { "b", L->b, o }, { "gw", L->gw, n }, { "gb", L->gb, o },
    { "mw", L->mw, n }, { "vw", L->vw, n }, { "mb", L->mb, o }, { "vb", L->vb, o },
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (strcmp(t[i].name, name) == 0) { *count = t[i].n; return t[i].p; }
  }
  return NULL;
}

const char* vs_isa(void) { return VS_ISA; }
