/* The network-level entry points of native-kernels/sparse/ (what train/addon.c calls). */
#ifndef VS_MODEL_H
#define VS_MODEL_H
#include "vs.h"

typedef struct {
  int out, act, sparse, family, K, L, R;
  float sparsity;
} vs_layer_spec;

/* Statistics of one pass, summed over samples. */
typedef struct {
  double loss, samples, unlabelled;
  double union_sum, filled_sum, active_sum, queries, label_missed, aln_inserts;
} vs_pass_stats;

typedef struct {
  double counted, p1, p5, r5, loss, loss_counted, active_sum;
} vs_eval_stats;

enum { VS_MODE_TRAIN = 0, VS_MODE_DENSE = 1, VS_MODE_SPARSE = 2 };

vs_model* vs_model_create(int input_dim, int n_layers, const vs_layer_spec* specs, uint64_t seed, int threads, char* err);
void vs_model_free(vs_model* m);
float* vs_tensor(vs_model* m, int l, const char* name, size_t* count);
const char* vs_isa(void);

/* Gradients of `count` samples order[start..] accumulated into gw/gb (HOGWILD over threads). */
void vs_backprop(vs_model* m, const vs_data* d, const int32_t* order, int64_t start, int count, int threads,
                 uint64_t epoch, const vs_train_opts* o, vs_pass_stats* st);
/* Record the optimiser's options before a batch (rows behind catch up under the old ones if they change);
 * -1 when out of memory. Then one Adam step over the touched rows (all rows with VS_OPT_DENSE); the gradients are zeroed. */
int vs_adam_prepare(vs_model* m, const vs_train_opts* o, int threads);
void vs_adam_step(vs_model* m, int threads);
/* Catch every row of layer `layer` (-1: every layer) up to the current step (VS_OPT_ADAM; else nothing to do). */
void vs_flush(vs_model* m, int layer, int threads);
/* Set the step count (a restore): every row is taken as current to it. */
void vs_adam_set_step(vs_model* m, double step);
/* Metrics over rows [start, start+count) of d: mode VS_MODE_DENSE or VS_MODE_SPARSE (output at eval_sparsity). */
void vs_evaluate(vs_model* m, const vs_data* d, int64_t start, int64_t count, int threads, int mode, float eval_sparsity, vs_eval_stats* st);
/* Output probabilities of rows [start, start+count), dense, into out[count][d_out]. */
void vs_scores(vs_model* m, const vs_data* d, int64_t start, int count, int threads, int mode, float eval_sparsity, float* out);
/* Distinct ids the tables return for x (a dense vector of layer l's input width); returns the count. */
int vs_query_union(vs_model* m, int l, const float* x, uint32_t* out, uint32_t* codes);


/* ---- between the files of native-kernels/sparse/ ---- */
typedef struct { const int32_t* idx; const float* val; int nnz; const int32_t* labels; int nlab; } vs_sample;

static inline void vs_sample_at(const vs_data* d, int64_t i, vs_sample* s) {
  const int64_t a = (int64_t)d->row[i], b = (int64_t)d->row[i + 1];
  const int64_t la = (int64_t)d->lrow[i], lb = (int64_t)d->lrow[i + 1];
  s->idx = d->idx + a; s->val = d->val + a; s->nnz = (int)(b - a);
  s->labels = d->labels + la; s->nlab = (int)(lb - la);
}

/* Forward through every layer; the last layer is left unnormalised when `logits` (dense eval). */
void vs_forward(vs_model* m, vs_work* w, const vs_sample* s, int mode, float eval_sparsity, const vs_train_opts* o, vs_rng* rng, int upto);
/* Catch row r of L up to step t (claimed by one thread); and the first-layer rows of a batch and every dense later layer. */
void vs_catch_up_row(vs_model* m, vs_layer* L, int r, uint32_t t);
void vs_catch_up_batch(vs_model* m, const vs_data* d, const int32_t* order, int64_t start, int count, int threads);
/* Softmax/sigmoid of the last layer in place. */
void vs_output(vs_model* m, vs_work* w);
/* Loss of the sample and its gradients accumulated into the layers; needs vs_forward + vs_output first. */
double vs_backward(vs_model* m, vs_work* w, const vs_sample* s, float scale);
/* The parts of a pass the neuron-major batch (train/batched.c) shares: a sampled layer's active neurons for one
 * input (into w->idx[l], positions in w->pos), the output's loss and dLoss/dz (pos: a label's position in a listed
 * output, NULL when dense), the hidden activation's derivative, and layer 0's gradient from w->delta[0]. */
int vs_select_active(vs_model* m, int l, vs_work* w, const float* xin, const int32_t* xidx, int xn, int target,
                     const vs_sample* s, int train, const vs_train_opts* o, vs_rng* rng);
double vs_loss_delta(int act, const float* p, float* dl, int na, const uint32_t* pos, const vs_sample* s, float scale);
float vs_derivative(float a, float d, int act);
void vs_backward_input(vs_model* m, vs_work* w, const vs_sample* s);
/* Whether a batch of m can run neuron-major (batched.c), and that pass: gradients into gw/gb like vs_backprop's. */
int vs_neuron_major_fits(const vs_model* m);
int vs_backprop_neuron_major(vs_model* m, const vs_data* d, const int32_t* order, int64_t start, int count, int threads,
                             uint64_t epoch, const vs_train_opts* o, double* loss, double* unlabelled);

#endif
