/*
 * veltair sparse (BOLT-style) training and inference: the native types every file of
 * native-kernels/sparse/ shares, and the few vector helpers its hot loops use. The files of this
 * folder are the core both add-ons compile (hashing, tables, vector kernels, allocation, the model
 * struct); train/ adds the training passes and their bindings, head/ the serving head's.
 *
 * Vector width: AVX-512 where the compiler targets it, else AVX2 + FMA, else plain C; the
 * primitives come from ../vt_simd.h (the kernels' one ISA layer), so all three paths share
 * one body. Which one a build took is reported by vs_isa() and printed by `veltair train`.
 *
 * Layout decisions (why, not what):
 *  - Layer 0 reads the raw sparse features, so its weights are input-major W[in][out]: a sample
 *    touches only the rows of its non-zero features, contiguously. It is always dense.
 *  - Every later layer is neuron-major W[out][in]: a neuron's weight vector is contiguous, which
 *    is what the hash tables index and what the sparse forward/backward gather.
 *  - Gradients are accumulated lock-free (HOGWILD) by the threads of a batch into gw/gb; Adam
 *    then visits only the rows marked touched, so untouched parameters cost nothing. (A two-layer
 *    network with a sampled output runs neuron-major, train/batched.c: each output neuron is one
 *    thread's, its Adam step taken there.)
 */
#ifndef VS_H
#define VS_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "vt_simd.h"

#define VS_MAX_LAYERS 8
#define VS_EMPTY 0xFFFFFFFFu
#define VS_DWTA_BIN 8       /* dims per DWTA bin: 3 bits per winner-take-all hash */
#define VS_DWTA_BITS 3
#define VS_ERR_LEN 256

enum { VS_ACT_RELU = 0, VS_ACT_LINEAR = 1, VS_ACT_TANH = 2, VS_ACT_SOFTMAX = 3, VS_ACT_SIGMOID = 4 };
enum { VS_HASH_SIMHASH = 0, VS_HASH_DWTA = 1 };
/* The optimiser (train/adam.c): Adam equal to dense Adam with every untouched row caught up when it is
 * next read; the touched-rows-only ("lazy") Adam; and dense Adam over every row every step (the reference). */
enum { VS_OPT_ADAM = 0, VS_OPT_LAZY = 1, VS_OPT_DENSE = 2 };

/* The epoch profile (train/profile.c): seconds each thread spends per phase of a sample's pass
 * (summed over threads), and the wall seconds of the steps around the passes. Always on: a few
 * clock reads per sample (~20 ns each), against hundreds of microseconds a sample costs. */
enum {
  VS_PH_HIDDEN_FWD = 0, /* layer 0: the sample's feature rows summed, activation */
  VS_PH_HASH,           /* a sampled layer's input hashed (L codes) */
  VS_PH_SAMPLE,         /* its buckets' union, labels and frequent labels added, trimmed or filled */
  VS_PH_OUT_FWD,        /* layers >= 1: the active neurons' dot products (and activation) */
  VS_PH_CATCHUP,        /* rows of a sampled layer caught up (Adam) as the forward pass reads them */
  VS_PH_SOFTMAX,        /* the output's softmax */
  VS_PH_OUT_BWD,        /* loss, and backward through layers >= 1: gradient rows and the input gradient */
  VS_PH_HIDDEN_BWD,     /* layer 0's gradient: the sample's feature rows and the bias */
  VS_PH_INVERT,         /* neuron-major pass: the batch's active lists turned into per-neuron lists */
  VS_PH_N
};
enum {
  VS_WL_CATCHUP_BATCH = 0, /* the batch's first-layer rows (and dense later layers) caught up before its pass */
  VS_WL_PASS,              /* the batch's forward/backward passes over the threads */
  VS_WL_ADAM_HIDDEN,       /* the Adam step of layer 0 */
  VS_WL_ADAM_OUT,          /* the Adam step of layers >= 1 */
  VS_WL_INDEX,             /* table rebuilds and rehashes (with the rows they read caught up first) */
  VS_WL_N
};
static inline double vs_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One family of L hash functions of K bits each over vectors of length `dim`. */
typedef struct {
  int family, K, L, dim;
  int bits;          /* simhash: K*L sign bits */
  int row_bytes;     /* simhash: bytes of sign bits per input dim (bits/8 rounded up to 32) */
  uint8_t* signs;    /* simhash: [dim][row_bytes], bit b of dim j = sign of projection b at j */
  int per_table;     /* dwta: winner-take-all hashes per table (ceil(K/3)) */
  int32_t* bins;     /* dwta: [L*per_table][VS_DWTA_BIN] dims sampled per bin */
  uint64_t seed;
} vs_hash;

/* L tables of 2^K buckets of at most R neuron ids; `seen` drives reservoir sampling. */
typedef struct {
  int K, L, R, d;
  size_t buckets;      /* 2^K */
  uint32_t* slots;     /* [L][2^K][R], VS_EMPTY where unused */
  uint32_t* seen;      /* [L][2^K] inserts offered to the bucket since the last rebuild */
} vs_tables;

typedef struct {
  int in, out, act;
  int input_major;     /* layer 0 */
  int sparse;          /* LSH-sampled */
  float sparsity;
  int target;          /* neurons computed per input when sparse: ceil(sparsity * out) */
  float *w, *b, *gw, *gb, *mw, *vw, *mb, *vb;
  uint8_t* touched;    /* per weight row (input row for layer 0, neuron otherwise) this batch */
  uint8_t* dirty;      /* per neuron: updated since the last rehash (sparse layers) */
  uint32_t* last;      /* per weight row: the Adam step its weights and moments (and bias, neuron-major) are current to */
  int32_t* always;     /* neurons every training sample computes (the most frequent labels: pass.c), n_always of them */
  int n_always;
  vs_hash hash;
  vs_tables tables;
} vs_layer;

typedef struct {
  float lr, beta1, beta2, eps;
  int aln;             /* insert missed label neurons into the buckets their input selected */
  int optimizer;       /* VS_OPT_* */
  int pass;            /* VS_PASS_*: how a batch's output layer is computed (train/batched.c) */
  float uniform;       /* fraction of a sampled output layer's target kept for uniformly random negatives (pass.c) */
  int logq;            /* uniformly random negatives' logits get + log(pool / picked), their inverse inclusion odds (pass.c) */
} vs_train_opts;
/* A batch per sample (HOGWILD: each sample forward and backward alone), or neuron-major: every sample's hidden
 * layer and active set first, then each active output neuron's row read once for all the batch's samples that
 * selected it (train/batched.c; two-layer networks with a sampled output; else per sample). NEURON_ADAM also
 * takes the output layer's Adam step there, as each row's gradient is summed (optimizers adam and lazy-adam; the
 * caller must then call vs_adam_step, which does the other layers, before the next batch). */
enum { VS_PASS_SAMPLE = 0, VS_PASS_NEURON = 1, VS_PASS_NEURON_ADAM = 2 };

/* Per-thread scratch, sized once for the network; cache-line padded, as each thread writes its
 * own counters every sample. */
typedef struct __attribute__((aligned(128))) {
  float* act[VS_MAX_LAYERS];       /* outputs: dense [out] or values of the active neurons */
  int32_t* idx[VS_MAX_LAYERS];     /* active neuron ids (sparse layers) */
  int n_active[VS_MAX_LAYERS];
  int listed[VS_MAX_LAYERS];       /* act[l][k] belongs to neuron idx[l][k] (else act[l][n] to neuron n) */
  float* delta[VS_MAX_LAYERS];     /* dLoss/d(pre-activation), aligned with act */
  float* dinput;                   /* dLoss/d(input of the current layer), dense [max width] */
  float* hacc;                     /* simhash accumulators [max bits] */
  uint32_t* codes;                 /* [max L] */
  uint32_t* stamp;                 /* [max sparse out]: query id that last saw the neuron */
  uint16_t* freq;                  /* [max sparse out]: how many tables returned it */
  uint32_t* cand;                  /* [max sparse out] */
  uint32_t* hist;                  /* [max L + 2]: candidates per table count */
  uint32_t* pos;                   /* [max out]: position of a neuron in the active list */
  uint32_t stamp_id;
  int stamp_len;
  int n_uniform;                   /* the last training selection's uniformly random picks: the last n_uniform of idx */
  float uniform_off;               /* and the offset their logits get (0 without logq) */
  float* dense_scratch;            /* [max width] for DWTA over sparse inputs */
  double prof[VS_PH_N];            /* the epoch profile's per-thread seconds (enum above) */
  /* statistics of the last pass, per thread */
  double union_sum, filled_sum, active_sum, queries, label_missed, aln_inserts;
} vs_work;

/* The neuron-major pass's buffers for one batch (train/batched.c), grown when a batch needs more. */
typedef struct vs_batch {
  size_t rows, slot, threads, width, out; /* what they are sized for: samples, entries per sample, threads, hidden width, neurons */
  float* h;            /* [rows][width] each sample's hidden activation */
  int32_t* ids;        /* [rows][slot] each sample's active neurons */
  int32_t* na;         /* [rows] how many */
  int32_t* nu;         /* [rows] how many of them (the last) are uniformly random picks */
  float* off;          /* [rows] the logit offset of those picks (pass.c: logQ) */
  float* z;            /* [rows][slot] their logits, then probabilities, then dLoss/dz */
  int segments;        /* the threads that built the lists: segment t holds thread t's run of samples */
  uint32_t* start;     /* [threads][out+1] in segment t, neuron n's entries are inv[t][start[t][n] .. start[t][n+1]) */
  uint32_t* inv;       /* [threads][rows*slot] entry positions (sample*slot + k), neuron-major, samples in batch order */
  uint32_t* isample;   /* [threads][rows*slot] the sample of each entry of inv (no division by slot in the hot loops) */
  uint32_t* tcount;    /* [threads][out] the counting sort's per-thread counts, then cursors */
  float* din;          /* [threads][rows][width] dLoss/dh summed by each thread over its neurons */
} vs_batch;

static inline void vs_batch_release(vs_batch* b) {
  if (!b) return;
  free(b->h); free(b->ids); free(b->na); free(b->nu); free(b->off); free(b->z); free(b->start); free(b->inv); free(b->isample); free(b->tcount); free(b->din);
  free(b);
}

typedef struct {
  int n_layers, input_dim;
  vs_layer layers[VS_MAX_LAYERS];
  int threads_alloc;
  vs_work* work;
  uint64_t seed;
  double adam_step;
  int max_width;
  /* the optimiser's options of the last step, and what catching rows up needs (train/adam.c) */
  vs_train_opts opts;
  int has_opts, jcap;
  double* pw;          /* [2][jcap+1]: beta1^j, beta2^(j/2) */
  double* bc;          /* [bc_len][2]: 1/(1-beta1^t), sqrt(1-beta2^t) for steps t < bc_len */
  uint32_t bc_len, bc_cap;
  double prof_wall[VS_WL_N];  /* the epoch profile's wall seconds (enum above) */
  struct vs_batch* batch;     /* the neuron-major pass's buffers (train/batched.c), grown on use */
} vs_model;

/* A dataset in CSR form; the arrays belong to JavaScript (the addon holds references). */
typedef struct {
  int64_t n;
  const double* row;      /* [n+1] offsets into idx/val */
  const int32_t* idx;
  const float* val;
  const double* lrow;     /* [n+1] offsets into labels */
  const int32_t* labels;
} vs_data;

/* ---- counter-based randomness: the same (seed, stream, counter) always gives the same bits ---- */
static inline uint64_t vs_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static inline uint64_t vs_key(uint64_t seed, uint64_t a, uint64_t b) { return vs_mix(vs_mix(seed ^ vs_mix(a)) ^ b); }
typedef struct { uint64_t s; } vs_rng;
static inline uint64_t vs_next(vs_rng* r) { r->s += 0x9E3779B97F4A7C15ull; return vs_mix(r->s); }
static inline uint32_t vs_below(vs_rng* r, uint32_t n) { return (uint32_t)(((vs_next(r) >> 32) * (uint64_t)n) >> 32); }
static inline float vs_uniform(vs_rng* r) { return (float)((vs_next(r) >> 40) * (1.0 / 16777216.0)); }

/* ---- vector helpers ---- */
#if defined(__AVX512F__)
#define VS_W 16
#define VS_(name) vt16_##name
typedef vt16_t vs_v;
static inline float vs_hsum(vs_v x) { return _mm512_reduce_add_ps(x); }
static inline vs_v vs_sqrt(vs_v x) { return _mm512_sqrt_ps(x); }
#define VS_ISA "avx512"
#elif defined(__AVX2__) && defined(__FMA__)
#define VS_W 8
#define VS_(name) vt8_##name
typedef vt8_t vs_v;
static inline float vs_hsum(vs_v x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
static inline vs_v vs_sqrt(vs_v x) { return _mm256_sqrt_ps(x); }
#define VS_ISA "avx2"
#else
#define VS_W 1
#define VS_(name) vt1_##name
typedef vt1_t vs_v;
static inline float vs_hsum(vs_v x) { return x; }
static inline vs_v vs_sqrt(vs_v x) { return sqrtf(x); }
#define VS_ISA "scalar"
#endif

/* model.c: zeroed, 64-byte aligned; arrays of 2 MiB and more are 2 MiB aligned and advised to use
 * transparent huge pages, since the sparse passes touch rows and buckets at random and would
 * otherwise miss the TLB on nearly every access. */
void* vs_alloc(size_t bytes);

static inline void vs_prefetch_row(const float* p, int n) {
  for (int i = 0; i < n; i += 16) __builtin_prefetch(p + i, 0, 3);
}
static inline void vs_prefetch_row_w(const float* p, int n) {
  for (int i = 0; i < n; i += 16) __builtin_prefetch(p + i, 1, 3);
}

/* kernels.c */
float vs_dot(const float* a, const float* b, int n);
float vs_dot_sparse(const float* w, const int32_t* idx, const float* val, int nnz);
void vs_axpy(float alpha, const float* x, float* y, int n);
void vs_axpy_sparse(float alpha, const float* x, const int32_t* idx, float* y, int nnz);
void vs_scatter_axpy(float alpha, const float* val, const int32_t* idx, float* y, int nnz);
void vs_adam_row(float* w, float* g, float* m, float* v, int n, float step_size, float bc2_sqrt, const vs_train_opts* o);
void vs_activate(float* z, int n, int act);
void vs_exp_shift(float* z, int n, float shift);
float vs_max(const float* z, int n);

/* hash.c */
int vs_hash_init(vs_hash* h, int family, int K, int L, int dim, uint64_t seed, char* err);
void vs_hash_free(vs_hash* h);
/* A hash over arrays the caller owns (a loaded index): checked, never drawn or freed. */
int vs_hash_wrap(vs_hash* h, int family, int K, int L, int dim, uint64_t seed,
                 uint8_t* signs, int row_bytes, int32_t* bins, int per_table, char* err);
/* codes[t] for t < L; a sparse input when idx != NULL (nnz entries), else dense x[dim]. */
void vs_hash_codes(const vs_hash* h, const float* x, const int32_t* idx, int nnz, uint32_t* codes, float* acc, float* scratch);
/* The codes of the first `tables` tables of a dense input x[dim] (all of them when tables >= L), equal to vs_hash_codes' first ones. */
void vs_hash_codes_first(const vs_hash* h, const float* x, int tables, uint32_t* codes, float* acc);

/* tables.c */
int vs_tables_init(vs_tables* t, int K, int L, int R, int d, char* err);
void vs_tables_free(vs_tables* t);
void vs_tables_clear(vs_tables* t, int threads);
void vs_tables_insert(vs_tables* t, int table, uint32_t code, uint32_t id, uint64_t rnd, int concurrent);
int vs_tables_contains(const vs_tables* t, int table, uint32_t code, uint32_t id);
size_t vs_tables_fill(const vs_tables* t, int table, uint32_t code);
/* Rehash neurons of layer l into its tables: all of them (rebuild, tables cleared first) or the dirty ones. */
void vs_layer_index(vs_model* m, int l, int all, int threads, uint64_t round);

#endif
