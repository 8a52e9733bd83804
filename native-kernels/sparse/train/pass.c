/*
 * One sample through the network: forward (choosing each sparse layer's active neurons from the
 * hash tables), the output's softmax or sigmoid, the loss, and backward through the active
 * neurons only, accumulating gradients lock-free into the shared gradient arrays.
 *
 * Active set of a sparse layer for one input (BOLT/SLIDE):
 *   1. hash the input; the union of its L buckets are the candidates, each with the number of
 *      tables that returned it;
 *   2. in training, the sample's label neurons are always added (and with ALN, a label the
 *      tables missed is inserted into the buckets this input selected), and so are the layer's
 *      `always` neurons: the most frequent labels. The tables hash by angle, so a frequent label,
 *      whose weight vector is long and scores high for most inputs, is rarely returned for inputs
 *      that are not its own; without it a sample never pushes it down, and the trained network
 *      over-predicts it (debian-packages: libc6 top-1 for 65% of test samples, against 42% after
 *      dense training; bench/RESULTS.md);
 *   3. more candidates than the target s·d (less, in training the output layer, the share opts.uniform keeps for
 *      random neurons): keep the labels and the candidates returned by the most tables (ties in bucket order);
 *   4. fewer than s·d: fill with uniformly random neurons not yet chosen, from the sample's own random
 *      stream, and count them (the `filled` statistic each epoch reports). In training with opts.logq their
 *      logits get + log(pool / picked) (sampled softmax). Why: a label the tables never return for an input is
 *      otherwise never pushed down by it; on debian-packages (4.9 labels per sample) P@5 stayed ~3 points under
 *      dense training until a quarter of the active set was random and corrected.
 */
#include <math.h>
#include <string.h>
#include "../vs.h"
#include "../vs_model.h"

#define FORCED 0xFFFFu

int vs_select_active(vs_model* m, int l, vs_work* w, const float* xin, const int32_t* xidx, int xn, int target,
                     const vs_sample* s, int train, const vs_train_opts* o, vs_rng* rng) {
  vs_layer* L = &m->layers[l];
  vs_tables* T = &L->tables;
  uint32_t id = ++w->stamp_id;
  if (id == 0) { memset(w->stamp, 0, (size_t)w->stamp_len * 4); id = w->stamp_id = 1; }
  const double t0 = vs_now();
  vs_hash_codes(&L->hash, xin, xidx, xn, w->codes, w->hacc, w->dense_scratch);
  const double t1 = vs_now();
  w->prof[VS_PH_HASH] += t1 - t0;
  uint32_t* cand = w->cand;
  uint16_t* freq = w->freq;
  uint32_t* stamp = w->stamp;
  int n = 0;
  /* The L buckets are L cache misses far apart in memory: ask for all of them before reading any. */
  const size_t bucket_bytes = (size_t)T->R * 4;
  for (int t = 0; t < T->L; t++) {
    const size_t b = (size_t)t * T->buckets + w->codes[t];
    const char* first = (const char*)(T->slots + b * (size_t)T->R);
    for (size_t at = 0; at < bucket_bytes; at += 64) __builtin_prefetch(first + at, 0, 0); /* every line of the bucket (R=25: 2-3) */
    __builtin_prefetch(first + bucket_bytes - 1, 0, 0);
    __builtin_prefetch(&T->seen[b], 0, 0);
  }
  for (int t = 0; t < T->L; t++) {
    const uint32_t code = w->codes[t];
    const uint32_t* b = T->slots + ((size_t)t * T->buckets + code) * (size_t)T->R;
    const size_t fill = vs_tables_fill(T, t, code);
    for (size_t k = 0; k < fill; k++) {
      const uint32_t e = b[k];
      if (e == VS_EMPTY) continue;
      if (stamp[e] != id) { stamp[e] = id; freq[e] = 1; cand[n++] = e; }
      else if (freq[e] < T->L) freq[e]++; /* concurrent ALN inserts can duplicate an id in a bucket */
    }
  }
  w->union_sum += n;
  w->queries += 1;
  int forced = 0;
  if (train && s && l == m->n_layers - 1) {
    for (int q = 0; q < s->nlab; q++) {
      const uint32_t e = (uint32_t)s->labels[q];
      if (stamp[e] == id) {
        if (freq[e] != FORCED) { freq[e] = FORCED; forced++; }
        continue;
      }
      stamp[e] = id; freq[e] = FORCED; cand[n++] = e; forced++;
      w->label_missed += 1;
      if (o && o->aln) {
        for (int t = 0; t < T->L; t++) vs_tables_insert(T, t, w->codes[t], e, vs_next(rng), 1);
        w->aln_inserts += 1;
      }
    }
  }
  if (train) {
    for (int q = 0; q < L->n_always; q++) {
      const uint32_t e = (uint32_t)L->always[q];
      if (stamp[e] == id) {
        if (freq[e] != FORCED) { freq[e] = FORCED; forced++; }
        continue;
      }
      stamp[e] = id; freq[e] = FORCED; cand[n++] = e; forced++;
    }
  }
  int32_t* out = w->idx[l];
  int na = 0;
  /* Training the output layer with opts.uniform: the tables' candidates fill only target - U places, the last U are
   * uniformly random (step 4), so every label is pushed down now and then, not only those the tables return. */
  const int last = l == m->n_layers - 1;
  const int reserve = train && last && o && o->uniform > 0 ? (int)((double)o->uniform * target) : 0;
  const int kept = target - reserve;
  if (n > kept) {
    const int need = kept - forced;
    int thr = T->L + 1, quota = 0;
    if (need > 0) {
      uint32_t* hist = w->hist;
      memset(hist, 0, (size_t)(T->L + 2) * 4);
      for (int i = 0; i < n; i++) if (freq[cand[i]] != FORCED) hist[freq[cand[i]]]++;
      int above = 0;
      for (int f = T->L; f >= 1; f--) {
        if (above + (int)hist[f] >= need) { thr = f; quota = need - above; break; }
        above += (int)hist[f];
      }
    }
    for (int i = 0; i < n; i++) {
      const uint32_t e = cand[i];
      const int f = freq[e];
      if (f == FORCED || (need > 0 && (f > thr || (f == thr && quota-- > 0)))) out[na++] = (int32_t)e;
    }
  } else {
    for (int i = 0; i < n; i++) out[na++] = (int32_t)cand[i];
  }
  w->n_uniform = 0;
  w->uniform_off = 0.0f;
  if (na < target) {
    const int before = na;
    if (target - na <= (L->out - na) / 2) {
      while (na < target) {
        const uint32_t e = vs_below(rng, (uint32_t)L->out);
        if (stamp[e] != id) { stamp[e] = id; out[na++] = (int32_t)e; }
      }
    } else {
      const uint32_t start = vs_below(rng, (uint32_t)L->out);
      for (int k = 0; k < L->out && na < target; k++) {
        const uint32_t e = (start + (uint32_t)k) % (uint32_t)L->out;
        if (stamp[e] != id) { stamp[e] = id; out[na++] = (int32_t)e; }
      }
    }
    w->filled_sum += na - before;
    if (train && last) {
      /* Sampled softmax (Bengio & Senecal; Jean et al. 2015): each of the pool's out - before neurons is picked with
       * probability q = picked / pool, so exp(z + log(1/q)) over the picks estimates the pool's share of the full
       * softmax's denominator without bias; the tables' picks (q = 1) keep their logits. */
      w->n_uniform = na - before;
      if (o && o->logq && L->act == VS_ACT_SOFTMAX && na > before) w->uniform_off = (float)log((double)(L->out - before) / (double)(na - before));
    }
  }
  w->active_sum += na;
  for (int k = 0; k < na; k++) w->pos[out[k]] = (uint32_t)k;
  w->prof[VS_PH_SAMPLE] += vs_now() - t1;
  return na;
}

void vs_forward(vs_model* m, vs_work* w, const vs_sample* s, int mode, float eval_sparsity, const vs_train_opts* o, vs_rng* rng, int upto) {
  const int last = m->n_layers - 1;
  vs_layer* L0 = &m->layers[0];
  double t = vs_now();
  float* a0 = w->act[0];
  memcpy(a0, L0->b, (size_t)L0->out * 4);
  for (int j = 0; j < s->nnz; j++) vs_axpy(s->val[j], L0->w + (size_t)s->idx[j] * L0->out, a0, L0->out);
  w->n_active[0] = L0->out;
  w->listed[0] = 0;
  if (last > 0) vs_activate(a0, L0->out, L0->act);
  {
    const double n = vs_now();
    w->prof[VS_PH_HIDDEN_FWD] += n - t;
    t = n;
  }
  for (int l = 1; l <= upto && l <= last; l++) {
    vs_layer* L = &m->layers[l];
    const int prev_listed = w->listed[l - 1];
    const float* xin = w->act[l - 1];
    const int32_t* xidx = prev_listed ? w->idx[l - 1] : NULL;
    const int xn = prev_listed ? w->n_active[l - 1] : L->in;
    float* z = w->act[l];
    if (L->sparse && mode != VS_MODE_DENSE) {
      int target = L->target;
      if (mode == VS_MODE_SPARSE && l == last) {
        target = (int)ceil((double)eval_sparsity * L->out);
        if (target < 1) target = 1;
        if (target > L->out) target = L->out;
      }
      const int na = vs_select_active(m, l, w, xin, xidx, xn, target, s, mode == VS_MODE_TRAIN, o, rng);
      t = vs_now(); /* vs_select_active timed its own two phases */
      const int32_t* ids = w->idx[l];
      const int catch_up = mode == VS_MODE_TRAIN && m->has_opts && m->opts.optimizer == VS_OPT_ADAM;
      const uint32_t step = (uint32_t)m->adam_step;
      for (int k = 0; k < na; k++) {
        if (catch_up && __atomic_load_n(&L->last[ids[k]], __ATOMIC_RELAXED) < step) {
          const double c0 = vs_now();
          vs_catch_up_row(m, L, ids[k], step);
          const double c = vs_now() - c0;
          w->prof[VS_PH_CATCHUP] += c;
          w->prof[VS_PH_OUT_FWD] -= c; /* counted in the layer's time below */
        }
        if (k + 4 < na) {
          vs_prefetch_row(L->w + (size_t)ids[k + 4] * L->in, L->in);
          __builtin_prefetch(&L->b[ids[k + 4]], 0, 3);
        }
        const float* row = L->w + (size_t)ids[k] * L->in;
        z[k] = L->b[ids[k]] + (xidx ? vs_dot_sparse(row, xidx, xin, xn) : vs_dot(row, xin, L->in));
      }
      if (mode == VS_MODE_TRAIN && l == last && w->uniform_off != 0.0f)
        for (int k = na - w->n_uniform; k < na; k++) z[k] += w->uniform_off;
      w->n_active[l] = na;
      w->listed[l] = 1;
    } else {
      for (int n = 0; n < L->out; n++) {
        const float* row = L->w + (size_t)n * L->in;
        z[n] = L->b[n] + (xidx ? vs_dot_sparse(row, xidx, xin, xn) : vs_dot(row, xin, L->in));
      }
      w->n_active[l] = L->out;
      w->listed[l] = 0;
    }
    if (l < last) vs_activate(z, w->n_active[l], L->act);
    const double n = vs_now();
    w->prof[VS_PH_OUT_FWD] += n - t;
    t = n;
  }
}

void vs_output(vs_model* m, vs_work* w) {
  const double t0 = vs_now();
  const int last = m->n_layers - 1;
  float* z = w->act[last];
  const int n = w->n_active[last];
  if (m->layers[last].act == VS_ACT_SOFTMAX) {
    const float mx = vs_max(z, n);
    vs_exp_shift(z, n, mx);
    double sum = 0.0;
    for (int k = 0; k < n; k++) sum += z[k];
    const float inv = (float)(1.0 / sum);
    for (int k = 0; k < n; k++) z[k] *= inv;
  } else {
    vs_activate(z, n, m->layers[last].act);
  }
  w->prof[VS_PH_SOFTMAX] += vs_now() - t0;
}

float vs_derivative(float a, float d, int act) {
  if (act == VS_ACT_RELU) return a > 0.0f ? d : 0.0f;
  if (act == VS_ACT_TANH) return d * (1.0f - a * a);
  return d;
}

double vs_loss_delta(int act, const float* p, float* dl, int na, const uint32_t* pos, const vs_sample* s, float scale) {
  double loss = 0.0;
  for (int k = 0; k < na; k++) dl[k] = p[k] * scale;
  if (act == VS_ACT_SOFTMAX) {
    const float y = 1.0f / (float)s->nlab;
    for (int q = 0; q < s->nlab; q++) {
      const int k = pos ? (int)pos[s->labels[q]] : s->labels[q];
      dl[k] -= y * scale;
      loss -= (double)y * log(p[k] > 1e-30f ? (double)p[k] : 1e-30);
    }
  } else {
    for (int k = 0; k < na; k++) loss -= log(1.0 - (double)p[k] + 1e-12);
    for (int q = 0; q < s->nlab; q++) {
      const int k = pos ? (int)pos[s->labels[q]] : s->labels[q];
      dl[k] -= scale;
      loss += log(1.0 - (double)p[k] + 1e-12) - log((double)p[k] + 1e-12);
    }
  }
  return loss;
}

void vs_backward_input(vs_model* m, vs_work* w, const vs_sample* s) {
  vs_layer* L0 = &m->layers[0];
  const float* g0 = w->delta[0];
  for (int j = 0; j < s->nnz; j++) {
    vs_axpy(s->val[j], g0, L0->gw + (size_t)s->idx[j] * L0->out, L0->out);
    L0->touched[s->idx[j]] = 1;
  }
  vs_axpy(1.0f, g0, L0->gb, L0->out);
}

double vs_backward(vs_model* m, vs_work* w, const vs_sample* s, float scale) {
  const double t0 = vs_now();
  const int last = m->n_layers - 1;
  const double loss = vs_loss_delta(m->layers[last].act, w->act[last], w->delta[last], w->n_active[last],
                                    w->listed[last] ? w->pos : NULL, s, scale);
  for (int l = last; l >= 1; l--) {
    vs_layer* L = &m->layers[l];
    const float* prev = w->act[l - 1];
    const int prev_listed = w->listed[l - 1];
    const int32_t* pidx = w->idx[l - 1];
    const int pn = w->n_active[l - 1];
    float* din = w->dinput;
    memset(din, 0, (size_t)pn * 4);
    const int n = w->n_active[l];
    const int32_t* ids = w->idx[l];
    const float* delta = w->delta[l];
    const int lst = w->listed[l];
    for (int k = 0; k < n; k++) {
      if (lst && k + 4 < n) {
        vs_prefetch_row(L->w + (size_t)ids[k + 4] * L->in, L->in);
        vs_prefetch_row_w(L->gw + (size_t)ids[k + 4] * L->in, L->in);
        __builtin_prefetch(&L->gb[ids[k + 4]], 1, 3);
        __builtin_prefetch(&L->touched[ids[k + 4]], 1, 3);
      }
      const float g = delta[k];
      if (g == 0.0f) continue;
      const int e = lst ? ids[k] : k;
      const float* wrow = L->w + (size_t)e * L->in;
      float* grow = L->gw + (size_t)e * L->in;
      if (!prev_listed) { vs_axpy(g, prev, grow, L->in); vs_axpy(g, wrow, din, L->in); }
      else { vs_scatter_axpy(g, prev, pidx, grow, pn); vs_axpy_sparse(g, wrow, pidx, din, pn); }
      L->gb[e] += g;
      L->touched[e] = 1;
    }
    const int pact = m->layers[l - 1].act;
    float* pd = w->delta[l - 1];
    for (int k = 0; k < pn; k++) pd[k] = vs_derivative(prev[k], din[k], pact);
  }
  const double t1 = vs_now();
  w->prof[VS_PH_OUT_BWD] += t1 - t0;
  vs_backward_input(m, w, s);
  w->prof[VS_PH_HIDDEN_BWD] += vs_now() - t1;
  return loss;
}
