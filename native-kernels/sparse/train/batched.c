/*
 * A batch neuron-major: the same forward, loss and gradients as the per-sample HOGWILD pass
 * (train.c, pass.c), with each active output neuron's weight row read once per batch instead of
 * once per sample that selected it.
 *
 * Why: with ~2000 of 10^5 output neurons active per sample and 256 samples per batch, a neuron is
 * active in ~5 samples of a batch, and the per-sample pass reads its 512-byte row ~5 times forward
 * and ~5 times backward, and read-modifies-writes its gradient row ~5 times: about 1 GB of random
 * row traffic per batch on the planted 100k-label set, where the profile (epoch-breakdown.ts) put
 * the output layer at ~45% of the epoch. Neuron-major, each row is read once forward and once
 * backward, the gradient row written once, and the rows are visited in id order (the hardware
 * prefetcher streams them):
 *   1. per sample (threads share the samples): the hidden layer, the output layer's active set
 *      (hashing, buckets, labels, frequent labels: vs_select_active, the same random stream);
 *   2. the active lists turned into per-neuron lists (a counting sort per thread over its run of samples);
 *   3. per neuron (threads share the neurons): caught up (Adam), its logit for each of its samples;
 *   4. per sample: softmax over its active logits, the loss, dLoss/dz;
 *   5. per neuron: its gradient row and bias summed over its samples in batch order (so with one
 *      thread the output layer's gradients equal the per-sample pass's bit for bit), and dLoss/dh
 *      added into the thread's own buffer (no two threads write one float: no HOGWILD here);
 *   6. per sample: dLoss/dh summed over the threads' buffers, the hidden layer's gradient (its feature rows
 *      HOGWILD as in the per-sample pass; its bias summed per thread, then added once per thread).
 * The weights every sample reads are the batch's starting weights, as in the per-sample pass; the
 * Adam step (adam.c) then applies the batch's gradient. So the two passes train the same model;
 * only float summation order differs (dLoss/dh sums its neurons in id order, not in active order).
 * With VS_PASS_NEURON_ADAM, step 5 also takes each row's Adam step as soon as its gradient is summed (in
 * the thread's scratch: the gradient array is never written), which saves reading and writing the
 * output layer's gradient rows again in vs_adam_step.
 * Two-layer networks with a sampled output layer (vs_neuron_major_fits); others run per sample.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "../vs.h"
#include "../vs_model.h"

#define NEURON_CHUNK 64
/* Entries ahead whose logit/delta is prefetched: z is sample-major, so the neuron-major loops reach it at random
 * (perf: two thirds of the backward loop's own time was that load before the prefetch). */
#define Z_AHEAD 32

int vs_neuron_major_fits(const vs_model* m) {
  return m->n_layers == 2 && m->layers[1].sparse;
}

/* The batch buffers for `rows` samples of `slot` entries on `threads` threads; -1 when out of memory. */
static int ensure_batch(vs_model* m, size_t rows, size_t slot, size_t threads) {
  const vs_layer* L = &m->layers[1];
  vs_batch* b = m->batch;
  if (b && b->rows >= rows && b->slot >= slot && b->threads >= threads) return 0;
  if (b) {
    if (b->rows > rows) rows = b->rows;
    if (b->slot > slot) slot = b->slot;
    if (b->threads > threads) threads = b->threads;
  }
  vs_batch_release(b);
  m->batch = b = calloc(1, sizeof *b);
  if (!b) return -1;
  const size_t width = (size_t)L->in, out = (size_t)L->out;
  b->rows = rows; b->slot = slot; b->threads = threads; b->width = width; b->out = out;
  b->h = vs_alloc(rows * width * 4);
  b->ids = vs_alloc(rows * slot * 4);
  b->na = vs_alloc(rows * 4);
  b->nu = vs_alloc(rows * 4);
  b->off = vs_alloc(rows * 4);
  b->z = vs_alloc(rows * slot * 4);
  b->start = vs_alloc(threads * (out + 1) * 4);
  b->inv = vs_alloc(threads * rows * slot * 4);
  b->din = vs_alloc(threads * rows * width * 4);
  b->tcount = vs_alloc(threads * out * 4);
  b->isample = vs_alloc(threads * rows * slot * 4);
  if (!b->h || !b->ids || !b->na || !b->nu || !b->off || !b->z || !b->start || !b->inv || !b->din || !b->tcount || !b->isample) {
    vs_batch_release(b);
    m->batch = NULL;
    return -1;
  }
  return 0;
}

/* Whether neuron n has an entry in any segment of the batch's lists. */
static inline int has_entries(const vs_batch* b, int segs, int n) {
  for (int u = 0; u < segs; u++) {
    const uint32_t* st = b->start + (size_t)u * (b->out + 1);
    if (st[n] < st[n + 1]) return 1;
  }
  return 0;
}

/* Step 3 for one neuron: its logit for each of its entries q0..q1, as vs_dot computes it (the same fmas in the same
 * order, so the same bits); at 128 inputs on AVX-512 with the row held in registers. */
static void neuron_forward(const float* row, float bias, const float* h, int width, float* z, const uint32_t* inv,
                           const uint32_t* isample, uint32_t q0, uint32_t q1, uint32_t total) {
#if VS_W == 16
  if (width == 8 * VS_W) {
    const vs_v w0 = VS_(load)(row), w1 = VS_(load)(row + 16), w2 = VS_(load)(row + 32), w3 = VS_(load)(row + 48);
    const vs_v w4 = VS_(load)(row + 64), w5 = VS_(load)(row + 80), w6 = VS_(load)(row + 96), w7 = VS_(load)(row + 112);
    const vs_v zero = VS_(zero)();
    for (uint32_t q = q0; q < q1; q++) {
      if (q + Z_AHEAD < total) __builtin_prefetch(&z[inv[q + Z_AHEAD]], 1, 3);
      const float* x = h + (size_t)isample[q] * 128;
      vs_v s0 = VS_(fma)(w0, VS_(load)(x), zero), s1 = VS_(fma)(w1, VS_(load)(x + 16), zero);
      vs_v s2 = VS_(fma)(w2, VS_(load)(x + 32), zero), s3 = VS_(fma)(w3, VS_(load)(x + 48), zero);
      s0 = VS_(fma)(w4, VS_(load)(x + 64), s0); s1 = VS_(fma)(w5, VS_(load)(x + 80), s1);
      s2 = VS_(fma)(w6, VS_(load)(x + 96), s2); s3 = VS_(fma)(w7, VS_(load)(x + 112), s3);
      z[inv[q]] = bias + vs_hsum(VS_(add)(VS_(add)(s0, s1), VS_(add)(s2, s3)));
    }
    return;
  }
#endif
  for (uint32_t q = q0; q < q1; q++) {
    if (q + Z_AHEAD < total) __builtin_prefetch(&z[inv[q + Z_AHEAD]], 1, 3);
    z[inv[q]] = bias + vs_dot(row, h + (size_t)isample[q] * width, width);
  }
}

/* Step 5 for one neuron: its gradient row (added into grow) and bias (*gb) over its entries q0..q1, and each entry's
 * dLoss/dh (added into din); whether any entry had a non-zero delta. The same fmas in the same order as two vs_axpy
 * calls per entry (so the same bits); at 128 inputs on AVX-512 the row and its gradient stay in registers. */
static int neuron_backward(const float* row, float* grow, float* gb, float* din, const float* h, int width, const float* z,
                           const uint32_t* inv, const uint32_t* isample, uint32_t q0, uint32_t q1, uint32_t total) {
  int any = 0;
#if VS_W == 16
  if (width == 8 * VS_W) {
    vs_v g0 = VS_(load)(grow), g1 = VS_(load)(grow + 16), g2 = VS_(load)(grow + 32), g3 = VS_(load)(grow + 48);
    vs_v g4 = VS_(load)(grow + 64), g5 = VS_(load)(grow + 80), g6 = VS_(load)(grow + 96), g7 = VS_(load)(grow + 112);
    const vs_v w0 = VS_(load)(row), w1 = VS_(load)(row + 16), w2 = VS_(load)(row + 32), w3 = VS_(load)(row + 48);
    const vs_v w4 = VS_(load)(row + 64), w5 = VS_(load)(row + 80), w6 = VS_(load)(row + 96), w7 = VS_(load)(row + 112);
    for (uint32_t q = q0; q < q1; q++) {
      if (q + Z_AHEAD < total) __builtin_prefetch(&z[inv[q + Z_AHEAD]], 0, 3);
      const float g = z[inv[q]];
      if (g == 0.0f) continue;
      const float* x = h + (size_t)isample[q] * 128;
      float* y = din + (size_t)isample[q] * 128;
      const vs_v a = VS_(set1)(g);
      g0 = VS_(fma)(a, VS_(load)(x), g0); g1 = VS_(fma)(a, VS_(load)(x + 16), g1);
      g2 = VS_(fma)(a, VS_(load)(x + 32), g2); g3 = VS_(fma)(a, VS_(load)(x + 48), g3);
      g4 = VS_(fma)(a, VS_(load)(x + 64), g4); g5 = VS_(fma)(a, VS_(load)(x + 80), g5);
      g6 = VS_(fma)(a, VS_(load)(x + 96), g6); g7 = VS_(fma)(a, VS_(load)(x + 112), g7);
      VS_(store)(y, VS_(fma)(a, w0, VS_(load)(y))); VS_(store)(y + 16, VS_(fma)(a, w1, VS_(load)(y + 16)));
      VS_(store)(y + 32, VS_(fma)(a, w2, VS_(load)(y + 32))); VS_(store)(y + 48, VS_(fma)(a, w3, VS_(load)(y + 48)));
      VS_(store)(y + 64, VS_(fma)(a, w4, VS_(load)(y + 64))); VS_(store)(y + 80, VS_(fma)(a, w5, VS_(load)(y + 80)));
      VS_(store)(y + 96, VS_(fma)(a, w6, VS_(load)(y + 96))); VS_(store)(y + 112, VS_(fma)(a, w7, VS_(load)(y + 112)));
      *gb += g;
      any = 1;
    }
    VS_(store)(grow, g0); VS_(store)(grow + 16, g1); VS_(store)(grow + 32, g2); VS_(store)(grow + 48, g3);
    VS_(store)(grow + 64, g4); VS_(store)(grow + 80, g5); VS_(store)(grow + 96, g6); VS_(store)(grow + 112, g7);
    return any;
  }
#endif
  for (uint32_t q = q0; q < q1; q++) {
    if (q + Z_AHEAD < total) __builtin_prefetch(&z[inv[q + Z_AHEAD]], 0, 3);
    const float g = z[inv[q]];
    if (g == 0.0f) continue;
    const size_t i = isample[q];
    vs_axpy(g, h + i * width, grow, width);
    vs_axpy(g, row, din + i * width, width);
    *gb += g;
    any = 1;
  }
  return any;
}

/* Step 2: per-neuron lists of entry positions, in batch order, by a counting sort per thread: thread t takes its
 * own contiguous run of samples and builds its own lists (segment t: start[t][n] .. start[t][n+1] in inv[t]), so no
 * two threads write one cache line and no thread waits for another; neuron n's entries in batch order are
 * segment 0's, then segment 1's, … Sets b->segments; returns the seconds the threads spent. */
static double invert(vs_batch* b, int count, int out, int threads) {
  double spent = 0.0;
  const size_t cap = b->rows * b->slot;
  #pragma omp parallel num_threads(threads)
  {
    const double t0 = vs_now();
    const int T = omp_get_num_threads(), t = omp_get_thread_num();
    if (t == 0) b->segments = T;
    uint32_t* cnt = b->tcount + (size_t)t * out;
    uint32_t* st = b->start + (size_t)t * (out + 1);
    uint32_t* inv = b->inv + (size_t)t * cap;
    uint32_t* isample = b->isample + (size_t)t * cap;
    const int s0 = (int)((int64_t)count * t / T), s1 = (int)((int64_t)count * (t + 1) / T);
    memset(cnt, 0, (size_t)out * 4);
    for (int i = s0; i < s1; i++) {
      const int32_t* ids = b->ids + (size_t)i * b->slot;
      const int na = b->na[i];
      for (int k = 0; k < na; k++) {
        if (k + 16 < na) __builtin_prefetch(&cnt[ids[k + 16]], 1, 3); /* the counters are 4·out bytes hit at random */
        cnt[ids[k]]++;
      }
    }
    uint32_t at = 0;
    for (int n = 0; n < out; n++) { /* counts become cursors */
      st[n] = at;
      const uint32_t k = cnt[n];
      cnt[n] = at;
      at += k;
    }
    st[out] = at;
    for (int i = s0; i < s1; i++) {
      const int32_t* ids = b->ids + (size_t)i * b->slot;
      const uint32_t base = (uint32_t)((size_t)i * b->slot);
      const int na = b->na[i];
      for (int k = 0; k < na; k++) {
        if (k + 16 < na) __builtin_prefetch(&cnt[ids[k + 16]], 1, 3);
        const uint32_t q = cnt[ids[k]]++;
        inv[q] = base + (uint32_t)k;
        isample[q] = (uint32_t)i;
      }
    }
    const double dt = vs_now() - t0;
    #pragma omp atomic
    spent += dt;
  }
  return spent;
}

int vs_backprop_neuron_major(vs_model* m, const vs_data* d, const int32_t* order, int64_t start, int count, int threads,
                             uint64_t epoch, const vs_train_opts* o, double* loss_out, double* unlabelled_out) {
  vs_layer* L = &m->layers[1];
  int maxlab = 0;
  for (int i = 0; i < count; i++) {
    const int64_t r = order[start + i];
    const int nl = (int)((int64_t)d->lrow[r + 1] - (int64_t)d->lrow[r]);
    if (nl > maxlab) maxlab = nl;
  }
  /* A sample's active set holds at most the target plus what is forced in (its labels, the frequent labels). */
  size_t slot = (size_t)L->target + (size_t)L->n_always + (size_t)maxlab;
  if (slot > (size_t)L->out) slot = (size_t)L->out;
  slot = (slot + 15) & ~(size_t)15;
  if (ensure_batch(m, (size_t)count, slot, (size_t)threads)) return -1;
  vs_batch* b = m->batch;
  slot = b->slot;
  const int width = L->in, out = L->out, act0 = m->layers[0].act;
  const float scale = 1.0f / (float)count;
  double loss = 0.0, unlabelled = 0.0;

  #pragma omp parallel for num_threads(threads) schedule(dynamic, 4) reduction(+:unlabelled)
  for (int i = 0; i < count; i++) {
    vs_work* w = &m->work[omp_get_thread_num()];
    vs_sample s;
    vs_sample_at(d, order[start + i], &s);
    b->na[i] = 0;
    if (s.nlab == 0) { unlabelled += 1.0; continue; }
    vs_rng rng = { vs_key(m->seed, epoch, (uint64_t)(start + i)) };
    vs_forward(m, w, &s, VS_MODE_TRAIN, 1.0f, o, &rng, 0);
    float* h = b->h + (size_t)i * width;
    memcpy(h, w->act[0], (size_t)width * 4);
    const int na = vs_select_active(m, 1, w, h, NULL, width, L->target, &s, 1, o, &rng);
    memcpy(b->ids + (size_t)i * slot, w->idx[1], (size_t)na * 4);
    b->na[i] = na;
    b->nu[i] = w->n_uniform;
    b->off[i] = w->uniform_off;
  }

  m->work[0].prof[VS_PH_INVERT] += invert(b, count, out, threads);
  const int segs = b->segments;
  const size_t cap = b->rows * b->slot;
  float* z = b->z;
  const int catch_up = m->has_opts && m->opts.optimizer == VS_OPT_ADAM;
  const uint32_t step = (uint32_t)m->adam_step;

  #pragma omp parallel num_threads(threads)
  {
    vs_work* w = &m->work[omp_get_thread_num()];
    const double t0 = vs_now();
    double caught = 0.0;
    #pragma omp for schedule(dynamic, NEURON_CHUNK)
    for (int n = 0; n < out; n++) {
      if (!has_entries(b, segs, n)) continue;
      if (catch_up && L->last[n] < step) {
        const double c0 = vs_now();
        vs_catch_up_row(m, L, n, step);
        caught += vs_now() - c0;
      }
      for (int u = 0; u < segs; u++) {
        const uint32_t* st = b->start + (size_t)u * (out + 1);
        neuron_forward(L->w + (size_t)n * width, L->b[n], b->h, width, z, b->inv + u * cap, b->isample + u * cap,
                       st[n], st[n + 1], st[out]);
      }
    }
    w->prof[VS_PH_CATCHUP] += caught;
    w->prof[VS_PH_OUT_FWD] += vs_now() - t0 - caught;
  }

  #pragma omp parallel for num_threads(threads) schedule(dynamic, 4) reduction(+:loss)
  for (int i = 0; i < count; i++) {
    const int na = b->na[i];
    if (na == 0) continue;
    vs_work* w = &m->work[omp_get_thread_num()];
    const double t0 = vs_now();
    vs_sample s;
    vs_sample_at(d, order[start + i], &s);
    float* zs = z + (size_t)i * slot;
    const int32_t* ids = b->ids + (size_t)i * slot;
    float* p = w->act[1];
    memcpy(p, zs, (size_t)na * 4);
    if (b->off[i] != 0.0f) for (int k = na - b->nu[i]; k < na; k++) p[k] += b->off[i]; /* logQ, as vs_forward */
    if (L->act == VS_ACT_SOFTMAX) { /* as vs_output */
      const float mx = vs_max(p, na);
      vs_exp_shift(p, na, mx);
      double sum = 0.0;
      for (int k = 0; k < na; k++) sum += p[k];
      const float inv_sum = (float)(1.0 / sum);
      for (int k = 0; k < na; k++) p[k] *= inv_sum;
    } else {
      vs_activate(p, na, L->act);
    }
    for (int k = 0; k < na; k++) w->pos[ids[k]] = (uint32_t)k;
    loss += vs_loss_delta(L->act, p, zs, na, w->pos, &s, scale);
    w->prof[VS_PH_SOFTMAX] += vs_now() - t0;
  }

  /* Step 5 with the Adam step fused (VS_PASS_NEURON_ADAM): a row's gradient is summed in the thread's scratch and
   * the row stepped at once, as vs_adam_step would at step t = adam_step + 1 (the same arithmetic: adam.c). */
  const int fuse = o->pass == VS_PASS_NEURON_ADAM && m->has_opts && m->opts.optimizer != VS_OPT_DENSE;
  const vs_train_opts* ao = &m->opts;
  const double td = m->adam_step + 1.0;
  const float step_size = fuse ? ao->lr / (float)(1.0 - pow((double)ao->beta1, td)) : 0.0f;
  const float bc2_sqrt = fuse ? (float)sqrt(1.0 - pow((double)ao->beta2, td)) : 0.0f;
  int used = 1;
  #pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num();
    #pragma omp single
    used = omp_get_num_threads();
    vs_work* w = &m->work[tid];
    const double t0 = vs_now();
    float* din = b->din + (size_t)tid * b->rows * width;
    memset(din, 0, (size_t)count * width * 4);
    float* gscratch = w->dense_scratch; /* [width] zero between rows: vs_adam_row consumes it */
    float gbias = 0.0f;
    if (fuse) memset(gscratch, 0, (size_t)width * 4);
    #pragma omp for schedule(dynamic, NEURON_CHUNK)
    for (int n = 0; n < out; n++) {
      float* row = L->w + (size_t)n * width;
      float* grow = fuse ? gscratch : L->gw + (size_t)n * width;
      float* gb = fuse ? &gbias : &L->gb[n];
      int any = 0; /* the segments in order: each entry's fmas in batch order, as one list would give them */
      for (int u = 0; u < segs; u++) {
        const uint32_t* st = b->start + (size_t)u * (out + 1);
        if (st[n] < st[n + 1])
          any |= neuron_backward(row, grow, gb, din, b->h, width, z, b->inv + u * cap, b->isample + u * cap,
                                 st[n], st[n + 1], st[out]);
      }
      if (!any) continue;
      if (!fuse) { L->touched[n] = 1; continue; }
      vs_adam_row(row, grow, L->mw + (size_t)n * width, L->vw + (size_t)n * width, width, step_size, bc2_sqrt, ao);
      vs_adam_row(&L->b[n], &gbias, &L->mb[n], &L->vb[n], 1, step_size, bc2_sqrt, ao);
      L->last[n] = (uint32_t)td;
      L->dirty[n] = 1;
    }
    w->prof[VS_PH_OUT_BWD] += vs_now() - t0;
  }

  vs_layer* L0 = &m->layers[0];
  #pragma omp parallel num_threads(threads)
  {
    vs_work* w = &m->work[omp_get_thread_num()];
    const double t0 = vs_now();
    float* gbias = w->dinput; /* this thread's share of layer 0's bias gradient, added once below (not raced per sample) */
    memset(gbias, 0, (size_t)L0->out * 4);
    #pragma omp for schedule(dynamic, 4)
    for (int i = 0; i < count; i++) {
      if (b->na[i] == 0) continue;
      vs_sample s;
      vs_sample_at(d, order[start + i], &s);
      const float* h = b->h + (size_t)i * width;
      float* pd = w->delta[0];
      for (int k = 0; k < width; k++) {
        float g = 0.0f;
        for (int t = 0; t < used; t++) g += b->din[((size_t)t * b->rows + i) * width + k];
        pd[k] = vs_derivative(h[k], g, act0);
      }
      for (int j = 0; j < s.nnz; j++) {
        vs_axpy(s.val[j], pd, L0->gw + (size_t)s.idx[j] * L0->out, L0->out);
        L0->touched[s.idx[j]] = 1;
      }
      vs_axpy(1.0f, pd, gbias, L0->out);
    }
    #pragma omp critical(vs_layer0_bias)
    vs_axpy(1.0f, gbias, L0->gb, L0->out);
    w->prof[VS_PH_HIDDEN_BWD] += vs_now() - t0;
  }
  *loss_out = loss;
  *unlabelled_out = unlabelled;
  return 0;
}
