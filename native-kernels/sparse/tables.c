/*
 * Hash tables of a sparse layer: L tables of 2^K buckets, each bucket a fixed array of at most R
 * neuron ids filled by reservoir sampling (the n-th id offered to a full bucket replaces a random
 * slot with probability R/n), so a bucket never exceeds R and every id offered since the last
 * rebuild is equally likely to be in it.
 *
 * Two ways the tables follow the weights (scheduled by the training loop, src/sparse/table-refresh.ts):
 *  - rebuild: clear every bucket and insert every neuron from its current weights;
 *  - rehash: re-insert only the neurons updated since the last rehash (their `dirty` flag) into
 *    the buckets of their current codes, unless already there. Old entries stay until the next
 *    rebuild: removing them would need every neuron's previous L codes (4·L·d bytes); a stale
 *    entry only costs one extra candidate. With more than half of the neurons dirty, a rehash is
 *    done as a rebuild instead: cheaper (no bucket scans), and it drops the stale entries.
 * Both hash neurons in chunks, in parallel over neurons, then insert in parallel over tables
 * (one thread owns a table, neurons in order), so the result is the same for any thread count.
 * ALN inserts during training come from many threads at once: `seen` is bumped atomically there,
 * and a slot is one aligned 32-bit store, so a reader sees an old id or a new one, never a torn one.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vs.h"

int vs_tables_init(vs_tables* t, int K, int L, int R, int d, char* err) {
  memset(t, 0, sizeof *t);
  t->K = K; t->L = L; t->R = R; t->d = d;
  t->buckets = (size_t)1 << K;
  size_t nb = (size_t)L * t->buckets;
  t->seen = vs_alloc(nb * sizeof(uint32_t));
  t->slots = vs_alloc(nb * (size_t)R * sizeof(uint32_t));
  if (!t->seen || !t->slots) {
    snprintf(err, VS_ERR_LEN, "tables: out of memory for %d tables x %zu buckets x %d slots", L, t->buckets, R);
    free(t->seen); free(t->slots); t->seen = NULL; t->slots = NULL;
    return 1;
  }
  memset(t->slots, 0xFF, nb * (size_t)R * sizeof(uint32_t));
  return 0;
}

void vs_tables_free(vs_tables* t) {
  free(t->slots); free(t->seen);
  t->slots = NULL; t->seen = NULL;
}

void vs_tables_clear(vs_tables* t, int threads) {
  const size_t per = t->buckets;
  #pragma omp parallel for num_threads(threads) schedule(static)
  for (int table = 0; table < t->L; table++) {
    memset(t->seen + (size_t)table * per, 0, per * sizeof(uint32_t));
    memset(t->slots + (size_t)table * per * t->R, 0xFF, per * (size_t)t->R * sizeof(uint32_t));
  }
}

void vs_tables_insert(vs_tables* t, int table, uint32_t code, uint32_t id, uint64_t rnd, int concurrent) {
  size_t b = (size_t)table * t->buckets + code;
  uint32_t n = concurrent ? __atomic_fetch_add(&t->seen[b], 1u, __ATOMIC_RELAXED) : t->seen[b]++;
  uint32_t* s = t->slots + b * (size_t)t->R;
  if (n < (uint32_t)t->R) {
    __atomic_store_n(&s[n], id, __ATOMIC_RELAXED);
  } else {
    uint64_t r = rnd % ((uint64_t)n + 1);
    if (r < (uint64_t)t->R) __atomic_store_n(&s[r], id, __ATOMIC_RELAXED);
  }
}

size_t vs_tables_fill(const vs_tables* t, int table, uint32_t code) {
  uint32_t n = t->seen[(size_t)table * t->buckets + code];
  return n < (uint32_t)t->R ? n : (size_t)t->R;
}

int vs_tables_contains(const vs_tables* t, int table, uint32_t code, uint32_t id) {
  const uint32_t* s = t->slots + ((size_t)table * t->buckets + code) * (size_t)t->R;
  size_t n = vs_tables_fill(t, table, code);
  for (size_t i = 0; i < n; i++) if (s[i] == id) return 1;
  return 0;
}

#define INDEX_CHUNK 2048

void vs_layer_index(vs_model* m, int l, int all, int threads, uint64_t round) {
  vs_layer* L = &m->layers[l];
  vs_tables* T = &L->tables;
  const int nt = T->L;
  if (threads > m->threads_alloc) threads = m->threads_alloc;
  if (threads < 1) threads = 1;
  if (all) vs_tables_clear(T, threads);
  uint32_t* list = malloc((size_t)L->out * sizeof(uint32_t));
  uint32_t* codes = malloc((size_t)INDEX_CHUNK * nt * sizeof(uint32_t));
  if (!list || !codes) { free(list); free(codes); return; }
  size_t n = 0;
  for (int i = 0; i < L->out; i++) n += L->dirty[i] != 0;
  /* Rehashing most neurons costs more than a rebuild (each insert first scans its bucket) and
   * leaves the stale entries in place; past half of them, rebuild instead. */
  if (!all && 2 * n > (size_t)L->out) { all = 1; vs_tables_clear(T, threads); }
  n = 0;
  for (int i = 0; i < L->out; i++) {
    if (all || L->dirty[i]) list[n++] = (uint32_t)i;
    L->dirty[i] = 0;
  }
  const uint64_t rkey = vs_key(m->seed, 0x7AB1E5ull + (uint64_t)l, round);
  for (size_t start = 0; start < n; start += INDEX_CHUNK) {
    const int count = (int)(n - start < INDEX_CHUNK ? n - start : INDEX_CHUNK);
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < count; i++) {
      vs_work* w = &m->work[omp_get_thread_num()];
      const uint32_t id = list[start + i];
      uint32_t* c = w->codes;
      vs_hash_codes(&L->hash, L->w + (size_t)id * L->in, NULL, 0, c, w->hacc, w->dense_scratch);
      for (int table = 0; table < nt; table++) codes[(size_t)table * INDEX_CHUNK + i] = c[table];
    }
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int table = 0; table < nt; table++) {
      for (int i = 0; i < count; i++) {
        const uint32_t id = list[start + i];
        const uint32_t code = codes[(size_t)table * INDEX_CHUNK + i]; /* table-major: this loop reads it in order */
        if (!all && vs_tables_contains(T, table, code, id)) continue;
        vs_tables_insert(T, table, code, id, vs_key(rkey, (uint64_t)table, id), 0);
      }
    }
  }
  free(list);
  free(codes);
}
