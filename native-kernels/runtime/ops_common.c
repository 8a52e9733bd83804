/* Shared helpers of the op library: the parallel range loop, the padded-lane fix-up, plain copy. */
#include <omp.h>
#include <sched.h>
#include <string.h>
#include "vt_rt.h"

static __thread vt_team_barrier* team_barrier;
static __thread int team_phase;

void vt_team_join(vt_team_barrier* b) { team_barrier = b; team_phase = 0; }
void vt_team_leave(void) { team_barrier = NULL; }

/*
 * Sense-reversing: the last of `n` threads to arrive resets the count, then publishes the next
 * phase (release); the others spin on the phase (acquire), so every write before the barrier is
 * visible after it. After ~10^5 spins a waiter yields its core (a preempted team mate).
 */
static void team_wait(int n) {
  vt_team_barrier* b = team_barrier;
  const int next = team_phase ^ 1;
  team_phase = next;
  if (__atomic_add_fetch(&b->arrived, 1, __ATOMIC_ACQ_REL) == n) {
    __atomic_store_n(&b->arrived, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&b->phase, next, __ATOMIC_RELEASE);
    return;
  }
  for (unsigned spins = 0; __atomic_load_n(&b->phase, __ATOMIC_ACQUIRE) != next; spins++) {
    if (spins >= 100000) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else __builtin_ia32_pause();
#endif
  }
}

/*
 * Outside any parallel region: a region of up to `threads` threads (none for one). Inside one (the
 * executor's team, run_team in executor.c), every thread of the team calls this with the same
 * arguments: each takes the share it would get in a region of its own, and all meet at a barrier,
 * so the step's writes are complete before the next step starts.
 */
void vt_parallel(long n, int threads, long grain, vt_range_fn f, const void* ctx) {
  const int in_team = omp_in_parallel();
  long t = 0;
  if (n > 0) {
    long most = grain > 0 ? (n + grain - 1) / grain : n;
    t = threads < most ? threads : most;
    if (t < 1) t = 1;
    if (in_team && t > omp_get_num_threads()) t = omp_get_num_threads();
  }
  if (!in_team) {
    if (n <= 0) return;
    if (t <= 1) { f(ctx, 0, n); return; }
#pragma omp parallel num_threads((int)t)
    {
      long k = omp_get_num_threads(), id = omp_get_thread_num();
      long b = n * id / k, e = n * (id + 1) / k;
      if (b < e) f(ctx, b, e);
    }
    return;
  }
  const long id = omp_get_thread_num();
  if (id < t) {  /* t = 0 only when n <= 0 */
    long b = n * id / t, e = n * (id + 1) / t;
    if (b < e) f(ctx, b, e);
  }
  if (team_barrier) {
    team_wait(omp_get_num_threads());
  } else {
#pragma omp barrier
  }
}

typedef struct { float* x; long cb, rem, hw, v; } pad_ctx;

static void pad_batches(const void* p, long b, long e) {
  const pad_ctx* k = p;
  for (long i = b; i < e; i++) {
    float* blk = k->x + ((i * k->cb + k->cb - 1) * k->hw) * k->v;
    for (long q = 0; q < k->hw; q++) memset(blk + q * k->v + k->rem, 0, (size_t)(k->v - k->rem) * sizeof(float));
  }
}

/* On one thread (thread 0 of a team, which the others wait for at vt_parallel's barrier). */
void vt_zero_pad_lanes(float* x, long n, long c, long hw, long v) {
  pad_ctx k = { x, (c + v - 1) / v, c % v, hw, v };
  if (k.rem == 0) return;
  vt_parallel(n, 1, 1, pad_batches, &k);
}

/* COPY: ints [bytes]. Identity, and views whose bytes could not be shared. */
int vt_op_copy(const vt_step* s) {
  if (s->out[0] != s->in[0]) memmove(s->out[0], s->in[0], (size_t)s->ints[0]);
  return 0;
}
