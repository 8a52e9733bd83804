/*
 * Batches and evaluation over the cores.
 *
 * Training is HOGWILD (Recht et al.) as in SLIDE/BOLT: the samples of a batch are shared out to
 * the threads (dynamic chunks of 4), each thread runs its samples through forward and backward
 * and adds its gradients into the one shared gradient array without locks. Two samples touching
 * one neuron at the same instant may lose part of one update; with thousands of neurons per
 * sample out of 10^5 that is rare and, as HOGWILD shows, harmless to convergence. Adam then runs
 * once per batch over the touched rows only, the others catching up when next read (adam.c).
 * With one thread every sum happens in one order, so a run is reproducible bit for bit.
 * A two-layer network with a sampled output layer runs its batches neuron-major instead (batched.c:
 * each active output row read once per batch; the same gradients), unless opts.pass asks per sample.
 *
 * Dense evaluation computes the output layer for blocks of 16 samples at once, so each weight row
 * is read from memory once per block and then reused from L1.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "../vs.h"
#include "../vs_model.h"

static int clamp_threads(const vs_model* m, int threads) {
  if (threads > m->threads_alloc) threads = m->threads_alloc;
  return threads < 1 ? 1 : threads;
}

static void reset_stats(vs_work* w) {
  w->union_sum = w->filled_sum = w->active_sum = w->queries = w->label_missed = w->aln_inserts = 0.0;
}

void vs_backprop(vs_model* m, const vs_data* d, const int32_t* order, int64_t start, int count, int threads,
                 uint64_t epoch, const vs_train_opts* o, vs_pass_stats* st) {
  threads = clamp_threads(m, threads);
  for (int t = 0; t < threads; t++) reset_stats(&m->work[t]);
  const double t0 = vs_now();
  vs_catch_up_batch(m, d, order, start, count, threads);
  const double t1 = vs_now();
  const float scale = 1.0f / (float)count;
  double loss = 0.0, unlabelled = 0.0;
  const int neuron_major = o->pass != VS_PASS_SAMPLE && vs_neuron_major_fits(m)
    && vs_backprop_neuron_major(m, d, order, start, count, threads, epoch, o, &loss, &unlabelled) == 0;
  #pragma omp parallel for num_threads(threads) schedule(dynamic, 4) reduction(+:loss, unlabelled) if (!neuron_major)
  for (int i = 0; i < (neuron_major ? 0 : count); i++) {
    vs_work* w = &m->work[omp_get_thread_num()];
    vs_sample s;
    vs_sample_at(d, order[start + i], &s);
    if (s.nlab == 0) { unlabelled += 1.0; continue; }
    vs_rng rng = { vs_key(m->seed, epoch, (uint64_t)(start + i)) };
    vs_forward(m, w, &s, VS_MODE_TRAIN, 1.0f, o, &rng, m->n_layers);
    vs_output(m, w);
    loss += vs_backward(m, w, &s, scale);
  }
  m->prof_wall[VS_WL_CATCHUP_BATCH] += t1 - t0;
  m->prof_wall[VS_WL_PASS] += vs_now() - t1;
  memset(st, 0, sizeof *st);
  st->loss = loss;
  st->samples = count;
  st->unlabelled = unlabelled;
  for (int t = 0; t < threads; t++) {
    const vs_work* w = &m->work[t];
    st->union_sum += w->union_sum; st->filled_sum += w->filled_sum; st->active_sum += w->active_sum;
    st->queries += w->queries; st->label_missed += w->label_missed; st->aln_inserts += w->aln_inserts;
  }
}

/* The k best (score, id) pairs, best first. */
typedef struct { float score[8]; int32_t id[8]; int n, k; } topk;

static inline void topk_offer(topk* t, float s, int32_t id) {
  if (t->n == t->k && s <= t->score[t->n - 1]) return;
  int i = t->n < t->k ? t->n++ : t->n - 1;
  while (i > 0 && t->score[i - 1] < s) { t->score[i] = t->score[i - 1]; t->id[i] = t->id[i - 1]; i--; }
  t->score[i] = s; t->id[i] = id;
}

static void score_sample(const vs_sample* s, const topk* t, double loss, int has_loss, vs_eval_stats* st) {
  if (s->nlab == 0) return;
  int hits = 0;
  for (int i = 0; i < t->n; i++)
    for (int q = 0; q < s->nlab; q++) if (s->labels[q] == t->id[i]) { hits++; if (i == 0) st->p1 += 1.0; break; }
  st->counted += 1.0;
  st->p5 += hits / 5.0;
  st->r5 += (double)hits / s->nlab;
  if (has_loss) { st->loss += loss; st->loss_counted += 1.0; }
}

#define EVAL_BLOCK 16

/* Softmax cross-entropy from logits z[n] (soft targets over the labels); `scratch` holds n floats. */
static double dense_loss(const float* z, int n, const vs_sample* s, float* scratch) {
  const float mx = vs_max(z, n);
  memcpy(scratch, z, (size_t)n * 4);
  vs_exp_shift(scratch, n, mx);
  double sum = 0.0;
  for (int k = 0; k < n; k++) sum += scratch[k];
  const double lse = mx + log(sum);
  double loss = 0.0;
  for (int q = 0; q < s->nlab; q++) loss += (lse - z[s->labels[q]]) / s->nlab;
  return loss;
}

void vs_evaluate(vs_model* m, const vs_data* d, int64_t start, int64_t count, int threads, int mode, float eval_sparsity, vs_eval_stats* out) {
  threads = clamp_threads(m, threads);
  if (threads > 64) threads = 64;
  const int last = m->n_layers - 1;
  vs_layer* LL = &m->layers[last];
  const int blocked = mode == VS_MODE_DENSE && last > 0;
  memset(out, 0, sizeof *out);
  struct { vs_eval_stats s; char pad[128 - sizeof(vs_eval_stats) % 128]; } part[64]; /* one cache line pair per thread */
  memset(part, 0, sizeof part);
  const int64_t blocks = (count + EVAL_BLOCK - 1) / EVAL_BLOCK;
  #pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num();
    vs_work* w = &m->work[tid];
    vs_eval_stats* st = &part[tid < 64 ? tid : 63].s;
    float* hb = blocked ? malloc((size_t)EVAL_BLOCK * LL->in * 4) : NULL;
    float* zb = blocked ? malloc((size_t)EVAL_BLOCK * LL->out * 4) : NULL;
    float* scratch = malloc((size_t)LL->out * 4);
    #pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; b++) {
      const int64_t first = start + b * EVAL_BLOCK;
      const int nb = (int)(count - b * EVAL_BLOCK < EVAL_BLOCK ? count - b * EVAL_BLOCK : EVAL_BLOCK);
      vs_sample ss[EVAL_BLOCK];
      for (int q = 0; q < nb; q++) vs_sample_at(d, first + q, &ss[q]);
      if (blocked && hb && zb) {
        for (int q = 0; q < nb; q++) {
          vs_forward(m, w, &ss[q], VS_MODE_DENSE, 1.0f, NULL, NULL, last - 1);
          memcpy(hb + (size_t)q * LL->in, w->act[last - 1], (size_t)LL->in * 4);
        }
        for (int n = 0; n < LL->out; n++) {
          const float* row = LL->w + (size_t)n * LL->in;
          for (int q = 0; q < nb; q++) zb[(size_t)q * LL->out + n] = LL->b[n] + vs_dot(row, hb + (size_t)q * LL->in, LL->in);
        }
        for (int q = 0; q < nb; q++) {
          const float* z = zb + (size_t)q * LL->out;
          topk t = { .n = 0, .k = LL->out < 5 ? LL->out : 5 };
          for (int n = 0; n < LL->out; n++) topk_offer(&t, z[n], n);
          const int soft = LL->act == VS_ACT_SOFTMAX && ss[q].nlab > 0;
          score_sample(&ss[q], &t, soft ? dense_loss(z, LL->out, &ss[q], scratch) : 0.0, soft, st);
        }
      } else {
        for (int q = 0; q < nb; q++) {
          vs_rng rng = { vs_key(m->seed, 0xE7A1ull, (uint64_t)(first + q)) };
          vs_forward(m, w, &ss[q], mode, eval_sparsity, NULL, &rng, last);
          const float* z = w->act[last];
          const int na = w->n_active[last];
          const int32_t* ids = w->idx[last];
          topk t = { .n = 0, .k = na < 5 ? na : 5 };
          for (int k = 0; k < na; k++) topk_offer(&t, z[k], w->listed[last] ? ids[k] : k);
          const int soft = LL->act == VS_ACT_SOFTMAX && ss[q].nlab > 0 && !w->listed[last];
          score_sample(&ss[q], &t, soft ? dense_loss(z, na, &ss[q], scratch) : 0.0, soft, st);
          st->active_sum += na;
        }
      }
    }
    free(hb); free(zb); free(scratch);
  }
  for (int t = 0; t < 64; t++) {
    const vs_eval_stats* p = &part[t].s;
    out->counted += p->counted; out->p1 += p->p1; out->p5 += p->p5; out->r5 += p->r5;
    out->loss += p->loss; out->loss_counted += p->loss_counted; out->active_sum += p->active_sum;
  }
}

void vs_scores(vs_model* m, const vs_data* d, int64_t start, int count, int threads, int mode, float eval_sparsity, float* out) {
  threads = clamp_threads(m, threads);
  const int last = m->n_layers - 1;
  const int width = m->layers[last].out;
  #pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int q = 0; q < count; q++) {
    vs_work* w = &m->work[omp_get_thread_num()];
    vs_sample s;
    vs_sample_at(d, start + q, &s);
    vs_rng rng = { vs_key(m->seed, 0xE7A1ull, (uint64_t)(start + q)) };
    vs_forward(m, w, &s, mode, eval_sparsity, NULL, &rng, last);
    vs_output(m, w);
    float* o = out + (size_t)q * width;
    if (!w->listed[last]) { memcpy(o, w->act[last], (size_t)width * 4); continue; }
    memset(o, 0, (size_t)width * 4);
    for (int k = 0; k < w->n_active[last]; k++) o[w->idx[last][k]] = w->act[last][k];
  }
}

int vs_query_union(vs_model* m, int l, const float* x, uint32_t* out, uint32_t* codes) {
  vs_layer* L = &m->layers[l];
  vs_work* w = &m->work[0];
  vs_hash_codes(&L->hash, x, NULL, 0, codes, w->hacc, w->dense_scratch);
  uint32_t id = ++w->stamp_id;
  if (id == 0) { memset(w->stamp, 0, (size_t)w->stamp_len * 4); id = w->stamp_id = 1; }
  int n = 0;
  for (int t = 0; t < L->tables.L; t++) {
    const uint32_t* b = L->tables.slots + ((size_t)t * L->tables.buckets + codes[t]) * (size_t)L->tables.R;
    const size_t fill = vs_tables_fill(&L->tables, t, codes[t]);
    for (size_t k = 0; k < fill; k++) {
      if (b[k] == VS_EMPTY || w->stamp[b[k]] == id) continue;
      w->stamp[b[k]] = id;
      out[n++] = b[k];
    }
  }
  return n;
}
