/* Shared helpers of the op library: the parallel range loop, the padded-lane fix-up, plain copy. */
#include <omp.h>
#include <string.h>
#include "vt_rt.h"

/* Inside the executor's team (run_team in executor.c) every thread of the team calls this with the
 * same arguments: each takes the share an own region of the same size would give it, and all meet
 * at a barrier, so the step's writes are complete before the next step starts. */
static void team_share(long n, int threads, long grain, vt_range_fn f, const void* ctx) {
  const long id = omp_get_thread_num(), team = omp_get_num_threads();
  if (n > 0) {
    long most = grain > 0 ? (n + grain - 1) / grain : n;
    long t = threads < most ? threads : most;
    if (t > team) t = team;
    if (t <= 1) {
      if (id == 0) f(ctx, 0, n);
    } else if (id < t) {
      long b = n * id / t, e = n * (id + 1) / t;
      if (b < e) f(ctx, b, e);
    }
  }
#pragma omp barrier
}

void vt_parallel(long n, int threads, long grain, vt_range_fn f, const void* ctx) {
  if (omp_in_parallel()) { team_share(n, threads, grain, f, ctx); return; }
  if (n <= 0) return;
  long most = grain > 0 ? (n + grain - 1) / grain : n;
  int t = threads < most ? threads : (int)most;
  if (t <= 1) { f(ctx, 0, n); return; }
#pragma omp parallel num_threads(t)
  {
    long k = omp_get_num_threads(), id = omp_get_thread_num();
    long b = n * id / k, e = n * (id + 1) / k;
    if (b < e) f(ctx, b, e);
  }
}

void vt_zero_pad_lanes(float* x, long n, long c, long hw, long v) {
  long cb = (c + v - 1) / v, rem = c % v;
  if (rem == 0) return;
  const int team = omp_in_parallel();
  if (!team || omp_get_thread_num() == 0) {
    for (long i = 0; i < n; i++) {
      float* blk = x + ((i * cb + cb - 1) * hw) * v;
      for (long p = 0; p < hw; p++) memset(blk + p * v + rem, 0, (size_t)(v - rem) * sizeof(float));
    }
  }
  if (team) {
#pragma omp barrier
  }
}

/* COPY: ints [bytes]. Identity, and views whose bytes could not be shared. */
int vt_op_copy(const vt_step* s) {
  if (s->out[0] != s->in[0]) memmove(s->out[0], s->in[0], (size_t)s->ints[0]);
  return 0;
}
