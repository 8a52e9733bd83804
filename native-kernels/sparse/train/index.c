/*
 * The training add-on's window on a model's LSH index (hashInfo, tables, query: what the index
 * file writer and the tests read); the rest of the add-on is addon.c.
 */
#include <stdlib.h>
#include <string.h>
#include "../vs.h"
#include "../vs_napi.h"
#include "../vs_model.h"
#include "bindings.h"

static vs_layer* sparse_layer(napi_env env, napi_value mv, napi_value lv) {
  vs_model* m = vs_napi_model(env, mv);
  if (!m) return NULL;
  int l = (int)vt_num(env, lv);
  if (l < 0 || l >= m->n_layers || !m->layers[l].sparse) { napi_throw_error(env, "VT_ARGUMENT", "not a sparse layer"); return NULL; }
  return &m->layers[l];
}

/* The sparse layer a (model, layer) call names; NULL (with a pending exception unless the call had other than 2 arguments). */
static vs_layer* layer_call(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  const int argc = vt_args(env, info, 2, argv);
  return argc == 2 ? sparse_layer(env, argv[0], argv[1]) : NULL;
}

napi_value hash_info_fn(napi_env env, napi_callback_info info) {
  napi_value o;
  vs_layer* L = layer_call(env, info);
  if (!L) return NULL;
  const vs_hash* h = &L->hash;
  VT_CHECK(napi_create_object(env, &o));
  vt_set_num(env, o, "family", h->family); vt_set_num(env, o, "K", h->K); vt_set_num(env, o, "L", h->L);
  vt_set_num(env, o, "R", L->tables.R); vt_set_num(env, o, "dim", h->dim); vt_set_num(env, o, "rowBytes", h->row_bytes);
  vt_set_num(env, o, "perTable", h->per_table);
  napi_value seed;
  VT_CHECK(napi_create_bigint_uint64(env, h->seed, &seed));
  napi_set_named_property(env, o, "seed", seed);
  void* data;
  if (h->family == VS_HASH_SIMHASH) {
    size_t n = (size_t)h->dim * h->row_bytes;
    napi_value arr = vt_new_typed(env, napi_uint8_array, n, &data);
    if (!arr) VT_FAIL("VT_MEMORY", "hashInfo: out of memory");
    memcpy(data, h->signs, n);
    napi_set_named_property(env, o, "signs", arr);
  } else {
    size_t n = (size_t)h->L * h->per_table * VS_DWTA_BIN;
    napi_value arr = vt_new_typed(env, napi_int32_array, n, &data);
    if (!arr) VT_FAIL("VT_MEMORY", "hashInfo: out of memory");
    memcpy(data, h->bins, n * 4);
    napi_set_named_property(env, o, "bins", arr);
  }
  return o;
}

napi_value tables_fn(napi_env env, napi_callback_info info) {
  napi_value o;
  vs_layer* L = layer_call(env, info);
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
  napi_value off = vt_new_typed(env, napi_uint32_array, nb + 1, &off_p);
  napi_value ids = vt_new_typed(env, napi_uint32_array, total, &ids_p);
  napi_value seen = vt_new_typed(env, napi_uint32_array, nb, &seen_p);
  if (!off || !ids || !seen) VT_FAIL("VT_MEMORY", "tables: out of memory");
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
  VT_CHECK(napi_create_object(env, &o));
  napi_set_named_property(env, o, "offsets", off);
  napi_set_named_property(env, o, "ids", ids);
  napi_set_named_property(env, o, "seen", seen);
  return o;
}

napi_value query_fn(napi_env env, napi_callback_info info) {
  napi_value argv[3], o;
  if (!vt_args_min(env, info, 3, argv, "query(model, layer, x)")) return NULL;
  vs_layer* L = sparse_layer(env, argv[0], argv[1]);
  if (!L) return NULL;
  void* x; size_t n;
  if (!vt_typed(env, argv[2], napi_float32_array, &x, &n)) return NULL;
  if ((int)n != L->in) VT_FAIL("VT_ARGUMENT", "query: x has the wrong length");
  uint32_t* ids = malloc((size_t)L->tables.L * L->tables.R * 4 + 4);
  uint32_t* codes = malloc((size_t)L->tables.L * 4);
  if (!ids || !codes) { free(ids); free(codes); VT_FAIL("VT_MEMORY", "query: out of memory"); }
  int count = vs_query_union(vs_napi_model(env, argv[0]), (int)vt_num(env, argv[1]), x, ids, codes);
  void *a, *b;
  napi_value ia = vt_new_typed(env, napi_uint32_array, (size_t)count, &a);
  napi_value ca = vt_new_typed(env, napi_uint32_array, (size_t)L->tables.L, &b);
  if (ia && ca) { memcpy(a, ids, (size_t)count * 4); memcpy(b, codes, (size_t)L->tables.L * 4); }
  free(ids); free(codes);
  if (!ia || !ca) VT_FAIL("VT_MEMORY", "query: out of memory");
  VT_CHECK(napi_create_object(env, &o));
  napi_set_named_property(env, o, "ids", ia);
  napi_set_named_property(env, o, "codes", ca);
  return o;
}
