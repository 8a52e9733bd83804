/*
 * Sparse inference over a large output layer (vs_head.h): hash the input, gather the neurons its
 * buckets hold (each once, counting how many tables returned it), trim them to the version's
 * budget by that count, score the survivors with the SIMD dot product and keep the top k.
 *
 * The dense path (budget >= n) scores every neuron with the same vs_dot and the same top-k
 * insertion, so a sparse query whose candidates cover every neuron returns exactly the dense
 * answer, bit for bit: that is what the tests pin.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vs_head.h"

int vs_head_init(vs_head* h, int n, int d, const float* w, const float* b, const vs_hash* hash,
                 const uint32_t* offsets, size_t n_offsets, const uint32_t* ids, size_t n_ids, char* err) {
  memset(h, 0, sizeof *h);
  if (n < 1 || d < 1 || hash->dim != d) { snprintf(err, VS_ERR_LEN, "head: %d neurons of width %d, hash width %d", n, d, hash->dim); return 1; }
  h->n = n; h->d = d; h->w = w; h->b = b; h->hash = *hash;
  h->buckets = (size_t)1 << hash->K;
  const size_t nb = (size_t)hash->L * h->buckets;
  if (n_offsets != nb + 1) { snprintf(err, VS_ERR_LEN, "head: %zu table offsets, expected %zu", n_offsets, nb + 1); return 1; }
  if (offsets[0] != 0 || offsets[nb] != n_ids) { snprintf(err, VS_ERR_LEN, "head: the offsets do not span the %zu ids", n_ids); return 1; }
  for (size_t i = 0; i < nb; i++) {
    if (offsets[i + 1] < offsets[i]) { snprintf(err, VS_ERR_LEN, "head: table offsets decrease at bucket %zu", i); return 1; }
  }
  for (size_t i = 0; i < n_ids; i++) {
    if (ids[i] >= (uint32_t)n) { snprintf(err, VS_ERR_LEN, "head: id %u at %zu is not a neuron (< %d)", ids[i], i, n); return 1; }
  }
  if (hash->family == VS_HASH_DWTA) {
    const size_t bins = (size_t)hash->L * hash->per_table * VS_DWTA_BIN;
    for (size_t i = 0; i < bins; i++) {
      if (hash->bins[i] < 0 || hash->bins[i] >= d) { snprintf(err, VS_ERR_LEN, "head: DWTA bin dim %d is outside 0..%d", hash->bins[i], d - 1); return 1; }
    }
  }
  h->offsets = offsets; h->ids = ids;
  const int bits = hash->family == VS_HASH_SIMHASH ? (hash->bits + 7) / 8 * 8 : 8;
  h->stamp = calloc((size_t)n, sizeof(uint32_t));
  h->freq = calloc((size_t)n, sizeof(uint16_t));
  h->cand = malloc((size_t)n * sizeof(uint32_t));
  h->hist = calloc((size_t)hash->L + 2, sizeof(uint32_t));
  h->codes = malloc((size_t)hash->L * sizeof(uint32_t));
  h->acc = aligned_alloc(64, ((size_t)bits * sizeof(float) + 63) / 64 * 64);
  if (!h->stamp || !h->freq || !h->cand || !h->hist || !h->codes || !h->acc) {
    vs_head_free(h);
    snprintf(err, VS_ERR_LEN, "head: out of memory for the query scratch of %d neurons", n);
    return 1;
  }
  return 0;
}

void vs_head_free(vs_head* h) {
  free(h->stamp); free(h->freq); free(h->cand); free(h->hist); free(h->codes); free(h->acc); free(h->always_w);
  h->always_w = NULL;
  h->stamp = NULL; h->freq = NULL; h->cand = NULL; h->hist = NULL; h->codes = NULL; h->acc = NULL;
}

static inline int better(float v, int32_t i, float u, int32_t j) { return v > u || (v == u && i < j); }

/* Insert (v, i) into the sorted top list of `have` entries (at most k). */
static inline int offer(float* values, int32_t* indices, int have, int k, float v, int32_t i) {
  if (have == k && !better(v, i, values[k - 1], indices[k - 1])) return have;
  int at = have < k ? have : k - 1;
  while (at > 0 && better(v, i, values[at - 1], indices[at - 1])) { values[at] = values[at - 1]; indices[at] = indices[at - 1]; at--; }
  values[at] = v; indices[at] = i;
  return have < k ? have + 1 : k;
}

/*
 * Scores. The dense path streams the whole weight matrix (batch 1 is memory-bound), so it scores
 * four neurons per pass over x, sharing each load of x; a sparse query scores neurons one by one.
 * Both sum in exactly the same order (one vector accumulator per neuron over x's chunks, then its
 * horizontal sum, then the scalar tail, then the bias), so a neuron's score is the same bits on
 * either path: what lets a sparse version's scores be checked against dense exactly.
 */
static inline float score_row(const vs_head* h, const float* w, uint32_t i, const float* x) {
  int j = 0;
#if VS_W > 1
  vs_v a = VS_(zero)();
  for (; j + VS_W <= h->d; j += VS_W) a = VS_(fma)(VS_(load)(w + j), VS_(load)(x + j), a);
  float s = vs_hsum(a);
#else
  float s = 0.0f;
#endif
  for (; j < h->d; j++) s += w[j] * x[j];
  return s + h->b[i];
}

static inline float score(const vs_head* h, uint32_t i, const float* x) { return score_row(h, h->w + (size_t)i * h->d, i, x); }

/* Four neurons whose rows lie one after another at w (biases of ids[0..3]). */
static inline void score4_rows(const vs_head* h, const float* w, const uint32_t* ids, const float* x, float* out) {
  const size_t d = (size_t)h->d;
  int j = 0;
#if VS_W > 1
  vs_v a0 = VS_(zero)(), a1 = VS_(zero)(), a2 = VS_(zero)(), a3 = VS_(zero)();
  for (; j + VS_W <= h->d; j += VS_W) {
    const vs_v xv = VS_(load)(x + j);
    a0 = VS_(fma)(VS_(load)(w + j), xv, a0);
    a1 = VS_(fma)(VS_(load)(w + d + j), xv, a1);
    a2 = VS_(fma)(VS_(load)(w + 2 * d + j), xv, a2);
    a3 = VS_(fma)(VS_(load)(w + 3 * d + j), xv, a3);
  }
  float s[4] = { vs_hsum(a0), vs_hsum(a1), vs_hsum(a2), vs_hsum(a3) };
#else
  float s[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
#endif
  for (; j < h->d; j++) for (int r = 0; r < 4; r++) s[r] += w[r * d + j] * x[j];
  for (int r = 0; r < 4; r++) out[r] = s[r] + h->b[ids[r]];
}

static inline void score4(const vs_head* h, uint32_t i, const float* x, float* out) {
  const uint32_t ids[4] = { i, i + 1, i + 2, i + 3 };
  score4_rows(h, h->w + (size_t)i * h->d, ids, x, out);
}

int vs_head_set_always(vs_head* h, const uint32_t* always, int n_always, char* err) {
  if (n_always < 0 || n_always > h->n || (n_always > 0 && !always)) {
    snprintf(err, VS_ERR_LEN, "head: %d always-scored neurons of %d", n_always, h->n);
    return 1;
  }
  if (++h->stamp_id == 0) { memset(h->stamp, 0, (size_t)h->n * sizeof(uint32_t)); h->stamp_id = 1; }
  for (int i = 0; i < n_always; i++) {
    if (always[i] >= (uint32_t)h->n) { snprintf(err, VS_ERR_LEN, "head: always-scored id %u at %d is not a neuron (< %d)", always[i], i, h->n); return 1; }
    if (h->stamp[always[i]] == h->stamp_id) { snprintf(err, VS_ERR_LEN, "head: always-scored id %u is listed twice", always[i]); return 1; }
    h->stamp[always[i]] = h->stamp_id;
  }
  free(h->always_w);
  h->always_w = n_always ? aligned_alloc(64, ((size_t)n_always * h->d * sizeof(float) + 63) / 64 * 64) : NULL;
  if (n_always && !h->always_w) { snprintf(err, VS_ERR_LEN, "head: out of memory for %d always-scored rows", n_always); return 1; }
  /* a packed copy of their rows, in list order: the listed neurons are then streamed like the dense path */
  for (int i = 0; i < n_always; i++) memcpy(h->always_w + (size_t)i * h->d, h->w + (size_t)always[i] * h->d, (size_t)h->d * sizeof(float));
  h->always = always; h->n_always = n_always;
  return 0;
}

/* A new query's stamp: neurons stamped with it have been seen by this query. */
static void begin_query(vs_head* h) {
  if (++h->stamp_id == 0) { memset(h->stamp, 0, (size_t)h->n * sizeof(uint32_t)); h->stamp_id = 1; }
}

/* Gather x's candidates into h->cand (each once, h->freq counting its tables); returns how many.
 * Neurons this query already scored (the always list: stamped with freq 0) are skipped. */
static int gather(vs_head* h, const float* x, int tables) {
  const int L = tables > 0 && tables < h->hash.L ? tables : h->hash.L;
  vs_hash_codes_first(&h->hash, x, L, h->codes, h->acc);
  int m = 0;
  for (int t = 0; t < L; t++) {
    const size_t bucket = (size_t)t * h->buckets + h->codes[t];
    for (uint32_t p = h->offsets[bucket]; p < h->offsets[bucket + 1]; p++) {
      const uint32_t id = h->ids[p];
      if (h->stamp[id] != h->stamp_id) { h->stamp[id] = h->stamp_id; h->freq[id] = 1; h->cand[m++] = id; }
      else if (h->freq[id]) h->freq[id]++;
    }
  }
  return m;
}

/* Keep `budget` of the m candidates, those returned by the most tables first (gather order on ties). */
static int trim(vs_head* h, int m, int budget) {
  if (m <= budget) return m;
  if (budget <= 0) return 0;
  const int L = h->hash.L;
  memset(h->hist, 0, (size_t)(L + 2) * sizeof(uint32_t));
  for (int i = 0; i < m; i++) h->hist[h->freq[h->cand[i]]]++;
  int cut = L, above = 0;  /* the count at which the budget runs out, and how many candidates beat it */
  while (cut > 1 && above + (int)h->hist[cut] < budget) above += (int)h->hist[cut--];
  int room = budget - above, kept = 0;
  for (int i = 0; i < m; i++) {
    const uint32_t id = h->cand[i];
    const int f = h->freq[id];
    if (f > cut || (f == cut && room-- > 0)) h->cand[kept++] = id;
  }
  return kept;
}

int vs_head_topk(vs_head* h, const float* x, int k, int budget, int always, int tables, float* values, int32_t* indices) {
  int have = 0, scored = h->n;
  if (budget <= 0 || budget >= h->n) {
    int i = 0;
    float s4[4];
    /* 16 rows ahead: on 50k x 128 here it took the dense path from ~1.6x to ~1.0-1.3x ONNX Runtime's time */
    const size_t ahead = (size_t)16 * h->d;
    for (; i + 4 <= h->n; i += 4) {
      const float* next = h->w + (size_t)i * h->d + ahead;
      if (i + 20 <= h->n) for (size_t p = 0; p < (size_t)4 * h->d; p += 16) __builtin_prefetch(next + p, 0, 0);
      score4(h, (uint32_t)i, x, s4);
      for (int r = 0; r < 4; r++) have = offer(values, indices, have, k, s4[r], i + r);
    }
    for (; i < h->n; i++) have = offer(values, indices, have, k, score(h, (uint32_t)i, x), i);
  } else {
    /* The always list first (stamped, freq 0, so gather skips them), streamed from its packed copy
     * of their rows four at a time, then the buckets' candidates in the budget left: the dense
     * path's sums, so every score is dense's to the bit. */
    int a = always < h->n_always ? always : h->n_always;
    if (a > budget) a = budget;
    begin_query(h);
    int c = 0;
    float s4[4];
    for (; c + 4 <= a; c += 4) {
      score4_rows(h, h->always_w + (size_t)c * h->d, h->always + c, x, s4);
      for (int r = 0; r < 4; r++) {
        const uint32_t id = h->always[c + r];
        h->stamp[id] = h->stamp_id; h->freq[id] = 0;
        have = offer(values, indices, have, k, s4[r], (int32_t)id);
      }
    }
    for (; c < a; c++) {
      const uint32_t id = h->always[c];
      h->stamp[id] = h->stamp_id; h->freq[id] = 0;
      have = offer(values, indices, have, k, score_row(h, h->always_w + (size_t)c * h->d, id, x), (int32_t)id);
    }
    const int m = budget > a ? trim(h, gather(h, x, tables), budget - a) : 0;  /* a list that fills the budget needs no hashing */
    for (int c = 0; c < m; c++) {
      if (c + 1 < m) vs_prefetch_row(h->w + (size_t)h->cand[c + 1] * h->d, h->d);
      have = offer(values, indices, have, k, score(h, h->cand[c], x), (int32_t)h->cand[c]);
    }
    scored = a + m;
  }
  for (int i = have; i < k; i++) { values[i] = -INFINITY; indices[i] = -1; }  /* fewer candidates than k */
  return scored;
}

int vs_head_build_tables(const float* w, int n, int d, const vs_hash* hash, int R, int threads,
                         uint32_t** offsets, uint32_t** ids, size_t* n_ids, char* err) {
  vs_tables t;
  if (vs_tables_init(&t, hash->K, hash->L, R, n, err)) return 1;
  const int L = hash->L;
  uint32_t* codes = malloc((size_t)n * L * sizeof(uint32_t));
  const int bits = hash->family == VS_HASH_SIMHASH ? (hash->bits + 7) / 8 * 8 : 8;
  if (!codes) { vs_tables_free(&t); snprintf(err, VS_ERR_LEN, "head: out of memory for %d x %d codes", n, L); return 1; }
  #pragma omp parallel num_threads(threads)
  {
    float* acc = aligned_alloc(64, ((size_t)bits * sizeof(float) + 63) / 64 * 64);
    #pragma omp for schedule(static)
    for (int i = 0; i < n; i++) if (acc) vs_hash_codes(hash, w + (size_t)i * d, NULL, 0, codes + (size_t)i * L, acc, NULL);
    free(acc);
  }
  /* one thread per table, neurons in order: the same tables for any thread count */
  const uint64_t key = vs_key(hash->seed, 0x4EADull, 0);
  #pragma omp parallel for num_threads(threads) schedule(static)
  for (int table = 0; table < L; table++) {
    for (int i = 0; i < n; i++) vs_tables_insert(&t, table, codes[(size_t)i * L + table], (uint32_t)i, vs_key(key, (uint64_t)table, (uint64_t)i), 0);
  }
  free(codes);
  const size_t nb = (size_t)L * t.buckets;
  size_t total = 0;
  for (size_t b = 0; b < nb; b++) total += vs_tables_fill(&t, (int)(b / t.buckets), (uint32_t)(b % t.buckets));
  *offsets = malloc((nb + 1) * sizeof(uint32_t));
  *ids = malloc((total ? total : 1) * sizeof(uint32_t));
  if (!*offsets || !*ids) {
    free(*offsets); free(*ids); vs_tables_free(&t);
    snprintf(err, VS_ERR_LEN, "head: out of memory for %zu table ids", total);
    return 1;
  }
  size_t at = 0;
  for (size_t b = 0; b < nb; b++) {
    (*offsets)[b] = (uint32_t)at;
    const size_t f = vs_tables_fill(&t, (int)(b / t.buckets), (uint32_t)(b % t.buckets));
    const uint32_t* s = t.slots + b * (size_t)R;
    for (size_t q = 0; q < f; q++) (*ids)[at++] = s[q];
  }
  (*offsets)[nb] = (uint32_t)at;
  *n_ids = at;
  vs_tables_free(&t);
  return 0;
}
