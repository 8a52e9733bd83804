/*
 * Adam, equal to dense Adam at the cost of updating the touched rows only.
 *
 * Dense Adam (torch.optim.Adam) moves every row every step: a row no batch touched still has
 * momentum, and with a zero gradient step j after its last update moves it by
 *   -lr/bc1(t_j) * m_j / (sqrt(v_j)/bc2sqrt(t_j) + eps),  m_j = beta1^j m,  v_j = beta2^j v,
 * where bc1(t) = 1 - beta1^t, bc2sqrt(t) = sqrt(1 - beta2^t). Updating only touched rows (the
 * "lazy" Adam of SLIDE/BOLT) forgoes those moves: on the real data sets most first-layer rows are
 * rare features, and it cost 5-7 points of P@1 against PyTorch.
 *
 * So each weight row keeps the step it is current to (L->last), and before anything reads a row
 * it is caught up: the missed k steps' weight movement is summed per element in one pass,
 *   w -= m * sum_{j=1..J} C_j / (sqrt(v) S_j + eps),  C_j = lr beta1^j / bc1(s+j),
 *   S_j = beta2^(j/2) / bc2sqrt(s+j),
 * and m *= beta1^k, v *= beta2^k. J = min(k, jcap): the j-th term is at most
 * lr/(1-beta1) * B * r^j per weight, with r = beta1/sqrt(beta2) and B = max |m|/sqrt(v) Adam can
 * reach from zero moments (Cauchy-Schwarz: (1-beta1)/sqrt((1-beta2)(1-beta1^2/beta2))), so jcap is
 * the first J whose tail sum_{j>J} is below CATCHUP_TOL * lr (195 steps at beta 0.9/0.999). With
 * beta1^2 >= beta2 there is no such bound, and jcap is CATCHUP_MAX.
 *
 * Who catches up what: the batch's first-layer rows before its forward pass (vs_backprop), the
 * active neurons of a sparse layer as the forward pass selects them (vs_forward; a row is claimed
 * by one thread with a compare-and-swap on L->last, other HOGWILD threads may read it half caught
 * up, like any racing update), every lagging row of a dense later layer before the batch, and
 * everything (vs_flush) before evaluation, scores, tensor reads and writes, and table rebuilds.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "../vs.h"
#include "../vs_model.h"

#define CATCHUP_MAX 1024
#define CATCHUP_TOL 1e-6

static int clamp_threads(const vs_model* m, int threads) {
  if (threads > m->threads_alloc) threads = m->threads_alloc;
  return threads < 1 ? 1 : threads;
}

static int row_count(const vs_layer* L) { return L->input_major ? L->in : L->out; }

/* The number of missed steps summed exactly (module comment). */
static int catch_up_cap(const vs_train_opts* o) {
  const double b1 = o->beta1, b2 = o->beta2;
  if (!(b1 >= 0 && b1 < 1 && b2 > 0 && b2 < 1) || b1 * b1 >= b2) return CATCHUP_MAX;
  if (b1 == 0) return 1;
  const double r = b1 / sqrt(b2);
  const double bound = (1 - b1) / sqrt((1 - b2) * (1 - b1 * b1 / b2));
  const double j = log(CATCHUP_TOL * (1 - b1) * (1 - r) / bound) / log(r);
  return j < 1 ? 1 : j > CATCHUP_MAX ? CATCHUP_MAX : (int)ceil(j);
}

/* Bias-correction factors for every step up to t (called single-threaded). */
static int ensure_steps(vs_model* m, uint32_t t) {
  if (t < m->bc_len) return 0;
  if (t >= m->bc_cap) {
    uint32_t cap = m->bc_cap ? m->bc_cap : 1024;
    while (cap <= t) cap *= 2;
    double* bc = realloc(m->bc, (size_t)cap * 2 * sizeof(double));
    if (!bc) return -1;
    m->bc = bc;
    m->bc_cap = cap;
  }
  for (uint32_t s = m->bc_len; s <= t; s++) {
    const double p1 = pow((double)m->opts.beta1, (double)s), p2 = pow((double)m->opts.beta2, (double)s);
    m->bc[2 * s] = s ? 1.0 / (1.0 - p1) : 0.0;
    m->bc[2 * s + 1] = s ? sqrt(1.0 - p2) : 0.0;
  }
  m->bc_len = t + 1;
  return 0;
}

static uint32_t current_step(const vs_model* m) { return (uint32_t)m->adam_step; }

/* Every row current at step t (a restore, or a change of optimiser). */
static void mark_all(vs_model* m, uint32_t t) {
  for (int l = 0; l < m->n_layers; l++) {
    vs_layer* L = &m->layers[l];
    for (int r = 0; r < row_count(L); r++) L->last[r] = t;
  }
}

static int same_opts(const vs_train_opts* a, const vs_train_opts* b) {
  return a->lr == b->lr && a->beta1 == b->beta1 && a->beta2 == b->beta2 && a->eps == b->eps && a->optimizer == b->optimizer;
}

int vs_adam_prepare(vs_model* m, const vs_train_opts* o, int threads) {
  if (!m->has_opts || !same_opts(&m->opts, o)) {
    if (m->has_opts) vs_flush(m, -1, threads); /* the rows behind catch up under the options they missed */
    mark_all(m, current_step(m));
    m->opts = *o;
    m->has_opts = 1;
    m->jcap = catch_up_cap(o);
    free(m->pw);
    m->pw = malloc((size_t)(m->jcap + 1) * 2 * sizeof(double));
    if (!m->pw) { m->has_opts = 0; return -1; }
    for (int j = 0; j <= m->jcap; j++) {
      m->pw[j] = pow((double)o->beta1, (double)j);
      m->pw[m->jcap + 1 + j] = pow((double)o->beta2, 0.5 * j);
    }
    m->bc_len = 0;
  }
  m->opts.aln = o->aln;
  return ensure_steps(m, current_step(m) + 1);
}

void vs_adam_set_step(vs_model* m, double step) {
  m->adam_step = step;
  mark_all(m, current_step(m));
}

/* w, m, v of n elements: the J missed steps' movement, then the moments' decay over all k. */
static void catch_up(float* w, float* mo, float* v, int n, const float* C, const float* S, int J, float eps, float dm, float dv) {
  int i = 0;
#if VS_W > 1
  const vs_v veps = VS_(set1)(eps), vdm = VS_(set1)(dm), vdv = VS_(set1)(dv);
  for (; i + VS_W <= n; i += VS_W) {
    const vs_v vi = VS_(load)(v + i), mi = VS_(load)(mo + i), a = vs_sqrt(vi);
    vs_v acc = VS_(zero)();
    for (int j = 0; j < J; j++) acc = VS_(add)(acc, VS_(div)(VS_(set1)(C[j]), VS_(fma)(a, VS_(set1)(S[j]), veps)));
    VS_(store)(w + i, VS_(sub)(VS_(load)(w + i), VS_(mul)(mi, acc)));
    VS_(store)(mo + i, VS_(mul)(mi, vdm));
    VS_(store)(v + i, VS_(mul)(vi, vdv));
  }
#endif
  for (; i < n; i++) {
    const float a = sqrtf(v[i]);
    float acc = 0.0f;
    for (int j = 0; j < J; j++) acc += C[j] / (a * S[j] + eps);
    w[i] -= mo[i] * acc;
    mo[i] *= dm;
    v[i] *= dv;
  }
}

void vs_catch_up_row(vs_model* m, vs_layer* L, int r, uint32_t t) {
  uint32_t s = __atomic_load_n(&L->last[r], __ATOMIC_RELAXED);
  for (;;) {
    if (s >= t) return;
    if (__atomic_compare_exchange_n(&L->last[r], &s, t, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) break;
  }
  const vs_train_opts* o = &m->opts;
  const uint32_t k = t - s;
  const int J = k < (uint32_t)m->jcap ? (int)k : m->jcap;
  float C[CATCHUP_MAX], S[CATCHUP_MAX];
  const double* b1j = m->pw;
  const double* b2h = m->pw + m->jcap + 1;
  for (int j = 1; j <= J; j++) {
    const double* bc = m->bc + 2 * ((size_t)s + j);
    C[j - 1] = (float)(o->lr * b1j[j] * bc[0]);
    S[j - 1] = (float)(b2h[j] / bc[1]);
  }
  const float dm = (float)(k <= (uint32_t)m->jcap ? b1j[k] : pow((double)o->beta1, (double)k));
  const float dv = (float)(k <= (uint32_t)m->jcap ? b2h[k] * b2h[k] : pow((double)o->beta2, (double)k));
  const int width = L->input_major ? L->out : L->in;
  const size_t off = (size_t)r * width;
  catch_up(L->w + off, L->mw + off, L->vw + off, width, C, S, J, o->eps, dm, dv);
  if (!L->input_major) catch_up(L->b + r, L->mb + r, L->vb + r, 1, C, S, J, o->eps, dm, dv);
}

static int catching_up(const vs_model* m) { return m->has_opts && m->opts.optimizer == VS_OPT_ADAM; }

void vs_flush(vs_model* m, int layer, int threads) {
  if (!catching_up(m)) return;
  threads = clamp_threads(m, threads);
  const uint32_t t = current_step(m);
  for (int l = 0; l < m->n_layers; l++) {
    if (layer >= 0 && l != layer) continue;
    vs_layer* L = &m->layers[l];
    const int rows = row_count(L);
    #pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
    for (int r = 0; r < rows; r++) if (L->last[r] < t) vs_catch_up_row(m, L, r, t);
  }
}

void vs_catch_up_batch(vs_model* m, const vs_data* d, const int32_t* order, int64_t start, int count, int threads) {
  if (!catching_up(m)) return;
  threads = clamp_threads(m, threads);
  const uint32_t t = current_step(m);
  vs_layer* L0 = &m->layers[0];
  #pragma omp parallel for num_threads(threads) schedule(dynamic, 4)
  for (int i = 0; i < count; i++) {
    vs_sample s;
    vs_sample_at(d, order[start + i], &s);
    for (int j = 0; j < s.nnz; j++) if (L0->last[s.idx[j]] < t) vs_catch_up_row(m, L0, s.idx[j], t);
  }
  for (int l = 1; l < m->n_layers; l++) if (!m->layers[l].sparse) vs_flush(m, l, threads);
}

/* One Adam step of a row with its gradient g (zeroed), after catching it up to the step before. */
static void step_row(vs_model* m, vs_layer* L, int r, uint32_t t, float step_size, float bc2_sqrt) {
  const vs_train_opts* o = &m->opts;
  if (o->optimizer == VS_OPT_ADAM && L->last[r] + 1 < t) vs_catch_up_row(m, L, r, t - 1);
  L->last[r] = t;
  const int width = L->input_major ? L->out : L->in;
  const size_t off = (size_t)r * width;
  vs_adam_row(L->w + off, L->gw + off, L->mw + off, L->vw + off, width, step_size, bc2_sqrt, o);
  if (!L->input_major) vs_adam_row(L->b + r, L->gb + r, L->mb + r, L->vb + r, 1, step_size, bc2_sqrt, o);
}

void vs_adam_step(vs_model* m, int threads) {
  threads = clamp_threads(m, threads);
  m->adam_step += 1.0;
  const double td = m->adam_step;
  const uint32_t t = current_step(m);
  const vs_train_opts* o = &m->opts;
  const float bc1 = (float)(1.0 - pow((double)o->beta1, td));
  const float bc2_sqrt = (float)sqrt(1.0 - pow((double)o->beta2, td));
  const float step_size = o->lr / bc1;
  const int dense = o->optimizer == VS_OPT_DENSE;
  for (int l = 0; l < m->n_layers; l++) {
    const double t0 = vs_now();
    vs_layer* L = &m->layers[l];
    const int rows = row_count(L);
    #pragma omp parallel for num_threads(threads) schedule(static, 64)
    for (int r = 0; r < rows; r++) {
      if (!L->touched[r] && !dense) continue;
      if (L->touched[r] && L->sparse) L->dirty[r] = 1;
      L->touched[r] = 0;
      step_row(m, L, r, t, step_size, bc2_sqrt);
    }
    if (L->input_major) vs_adam_row(L->b, L->gb, L->mb, L->vb, L->out, step_size, bc2_sqrt, o);
    m->prof_wall[l == 0 ? VS_WL_ADAM_HIDDEN : VS_WL_ADAM_OUT] += vs_now() - t0;
  }
}
