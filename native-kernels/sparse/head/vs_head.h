/*
 * Sparse inference over one large output layer (a "head"): the layer's neuron-major weights, a
 * hash over its input width and the layer's LSH tables in compact form (offsets + ids, as
 * lsh-index.bin and a bundle's sparse/head.bin store them). Every array belongs to the caller;
 * the head only adds its own query scratch. One caller thread at a time per head.
 */
#ifndef VS_HEAD_H
#define VS_HEAD_H
#include "../vs.h"

typedef struct {
  int n, d;                  /* neurons, input width */
  const float* w;            /* [n][d] */
  const float* b;            /* [n] */
  vs_hash hash;              /* wraps the caller's signs or bins (vs_hash_wrap) */
  size_t buckets;            /* 2^K */
  const uint32_t* offsets;   /* [L * 2^K + 1] */
  const uint32_t* ids;       /* [offsets[L * 2^K]] */
  const uint32_t* always;    /* [n_always]: neurons a version may score for every input, most useful first (NULL: none) */
  int n_always;
  float* always_w;           /* [n_always][d]: a packed copy of the listed neurons' rows (owned by the head) */
  /* query scratch */
  uint32_t* stamp;           /* [n]: query id that last saw the neuron */
  uint16_t* freq;            /* [n]: tables that returned it in this query */
  uint32_t* cand;            /* [n] */
  uint32_t* hist;            /* [L + 2] */
  uint32_t* codes;           /* [L] */
  float* acc;                /* simhash accumulators */
  uint32_t stamp_id;
} vs_head;

/* 0 on success; err says why not (a bad array shape or an id out of range). */
int vs_head_init(vs_head* h, int n, int d, const float* w, const float* b, const vs_hash* hash,
                 const uint32_t* offsets, size_t n_offsets, const uint32_t* ids, size_t n_ids, char* err);
void vs_head_free(vs_head* h);

/* A list of distinct neuron ids (checked) that sparse queries may score for every input; the
 * caller owns it. 0 on success. */
int vs_head_set_always(vs_head* h, const uint32_t* always, int n_always, char* err);

/* Top k of one input x[d] into values[k] / indices[k] (score descending, then index ascending).
 * budget >= n (or 0): every neuron is scored, the dense path; else at most `budget` neurons: the
 * first min(always, n_always, budget) of the always list, then candidates from x's buckets in the
 * first `tables` tables (0 or >= L: all), the ones most tables returned first. Returns how many
 * neurons were scored. */
int vs_head_topk(vs_head* h, const float* x, int k, int budget, int always, int tables, float* values, int32_t* indices);

/* Build compact tables for the neurons w[n][d] under `hash`: L tables, each bucket capped at R
 * ids by reservoir sampling (vs_tables). *offsets / *ids are malloc'd; *n_ids is ids' length. */
int vs_head_build_tables(const float* w, int n, int d, const vs_hash* hash, int R, int threads,
                         uint32_t** offsets, uint32_t** ids, size_t* n_ids, char* err);
#endif
