/*
 * veltair runtime core: the op library and the executor share this header.
 *
 * A plan is a flat array of steps. Every pointer a step touches (arena slots, constant params) is
 * resolved ONCE when the executor is created — the arena is one fixed allocation — so running a
 * step is: load the struct, call through one function pointer. No allocation, no lookup, no
 * shape arithmetic beyond what the op itself needs (that is precomputed into `ints` by the
 * TypeScript translator, src/runtime/native-plan.ts).
 *
 * Op codes and the meaning of each op's ints/floats are the contract with that translator. The
 * codes (enum vt_rt_op, vt_kind, the unary/binary/reduce function codes, layout and pool kinds)
 * are generated from src/toolchain/abi.ts into vt_abi.h (included through veltair_kernel.h); the
 * meaning of each op's ints/floats is documented in its ops_*.c file and in src/runtime/ops.ts.
 */
#ifndef VT_RT_H
#define VT_RT_H
#include <stddef.h>
#include <stdint.h>
#include "../veltair_kernel.h"

/* An INT8 kernel's entry (src/codegen/int8-kernel.ts): in, w, comp, mult, out, workspace, nthreads. */
typedef void (*vt_qrun_fn)(const uint8_t*, const int8_t*, const int32_t*, const float*, void*, void*, int);

typedef struct vt_version {
  vt_run_fn run;
  int team;                /* its entries work-share over a calling team (<sym>_team_entry exists) */
  const float* weight;     /* packed weight (param) or an activation (batch_matmul B) */
  /* VT_RT_QKERNEL only: the entry and the packed constants, all inside the version's one param */
  vt_qrun_fn qrun;
  const int32_t* comp;
  const float* mult;
} vt_version;

typedef struct vt_step vt_step;
/* 0 on success; otherwise writes a message into s->err (VT_ERR_LEN bytes) and returns nonzero. */
typedef int (*vt_op_fn)(const vt_step* s);

#define VT_ERR_LEN 512

struct vt_step {
  vt_op_fn fn;
  int op;
  int threads;
  int n_in, n_out, n_ints, n_floats;
  void** in;               /* resolved: arena + offset, param pointer, or NULL */
  void** out;
  const size_t* in_bytes;  /* the plan's size of each operand, checked against the arena / param at load */
  const size_t* out_bytes;
  const int64_t* ints;
  const double* floats;
  /* VT_RT_KERNEL and VT_RT_QKERNEL only */
  int n_versions, version;
  vt_version* versions;
  char* err;               /* the executor's message buffer */
};

/* Parallel range helper: f(ctx, begin, end) over [0, n), on up to `threads` OpenMP threads, and
 * serially (no OpenMP region at all) when threads <= 1 or n <= grain: tiny steps never pay for
 * waking the pool. Inside an active region (executor.c run_team) every thread of the team must call
 * it with the same arguments: each runs its share and all meet at a barrier. Likewise
 * vt_zero_pad_lanes. */
typedef void (*vt_range_fn)(const void* ctx, long begin, long end);
void vt_parallel(long n, int threads, long grain, vt_range_fn f, const void* ctx);

/* The barrier vt_parallel's threads meet at inside run_team: a counter and a phase, each on its own
 * cache line (OpenMP's barrier cost 0.53 us on 2 cores, this one 0.34: bench/RESULTS.md).
 * Every thread of the region calls vt_team_join(b) (same b, zeroed) before its first step and
 * vt_team_leave() after its last; outside, vt_parallel uses OpenMP's barrier. */
typedef struct vt_team_barrier { _Alignas(64) int arrived; _Alignas(64) int phase; } vt_team_barrier;
void vt_team_join(vt_team_barrier* b);
void vt_team_leave(void);

/* Zero the padded lanes (channels C..Cpad-1) of an NCHW[V]c tensor: keeps the ABI invariant after
 * an elementwise op whose f(0) != 0. */
void vt_zero_pad_lanes(float* x, long n, long c, long hw, long v);

int vt_op_copy(const vt_step* s);
int vt_op_reorder(const vt_step* s);
int vt_op_pool(const vt_step* s);
int vt_op_global_pool(const vt_step* s);
int vt_op_unary(const vt_step* s);
int vt_op_binary(const vt_step* s);
int vt_op_binary_channel(const vt_step* s);
int vt_op_where(const vt_step* s);
int vt_op_softmax(const vt_step* s);
int vt_op_layernorm(const vt_step* s);
int vt_op_channel_affine(const vt_step* s);
int vt_op_strided_copy(const vt_step* s);
int vt_op_gather(const vt_step* s);
int vt_op_reduce(const vt_step* s);
int vt_op_cast(const vt_step* s);
int vt_op_topk(const vt_step* s);
int vt_op_channel_gather(const vt_step* s);
int vt_op_elementwise_chain(const vt_step* s);
int vt_op_resize(const vt_step* s);
int vt_op_quantize(const vt_step* s);
int vt_op_dequantize(const vt_step* s);
int vt_op_qadd(const vt_step* s);
int vt_op_qmaxpool(const vt_step* s);
int vt_op_qglobal_avgpool(const vt_step* s);
int vt_op_qconcat(const vt_step* s);
int vt_op_qlut(const vt_step* s);
int vt_op_qgate(const vt_step* s);
int vt_op_qavgpool(const vt_step* s);

/* VT_RT_QKERNEL (qkernel.c): the plan's shape of the step, binding version v of it, running it. */
int vt_qkernel_arity_ok(const vt_step* st);
int vt_qkernel_bind(void* so, const char* sym, vt_step* st, int v, const unsigned char* param, size_t param_bytes, char* err);
void vt_qkernel_run(const vt_step* st, int threads);

/* Executor (executor.c). The blob format is documented there and in src/runtime/native-plan.ts. */
typedef struct vt_exec vt_exec;
typedef struct vt_param { void* data; size_t bytes; } vt_param;

/* Takes ownership of params[i].data (64-byte aligned, from vt_aligned_copy) even on failure. */
vt_exec* vt_exec_create(const double* blob, size_t words, const char* kernels_path, const char* const* symbols,
                        int n_symbols, vt_param* params, int n_params, char* err);
void vt_exec_destroy(vt_exec* e);
int vt_exec_n_inputs(const vt_exec* e);
int vt_exec_n_outputs(const vt_exec* e);
int vt_exec_n_steps(const vt_exec* e);
size_t vt_exec_input_bytes(const vt_exec* e, int i);
size_t vt_exec_output_bytes(const vt_exec* e, int i);
void* vt_exec_input_ptr(vt_exec* e, int i);
const void* vt_exec_output_ptr(const vt_exec* e, int i);
/* Runs every step in order; 0 or nonzero with the message in vt_exec_error(e). */
int vt_exec_run(vt_exec* e);
/* Runs steps [from, to) (a block), each on at most max_threads threads. */
int vt_exec_run_range(vt_exec* e, int from, int to, int max_threads);
/* A new instance sharing e's plan, kernels and params (weights), with its own arena; NULL + err on failure. */
vt_exec* vt_exec_clone(vt_exec* e, char* err);
/* Pin the calling thread's OpenMP team to cores[0..n) (see executor.c); 0 or nonzero + vt_exec_error. */
#define VT_MAX_CORES 1024
int vt_exec_bind(vt_exec* e, const int* cores, int n, int nice);
/* Thread tid (0: the caller) at nice `nice` and the batch policy (see executor.c); 0 when both held. */
int vt_background_thread(int tid, int nice);
/* Move the last bind's team threads to cores[0..n) from another thread, before the team's next bind. */
void vt_exec_prepin(vt_exec* e, const int* cores, int n);
/* The CPUs the team threads were on after the last bind (up to max); returns how many. */
int vt_exec_bound_cpus(const vt_exec* e, int* out, int max);
const char* vt_exec_error(const vt_exec* e);
int vt_exec_set_version(vt_exec* e, int step, int version);
int vt_exec_set_threads(vt_exec* e, int step, int threads);
int vt_exec_step_versions(const vt_exec* e, int step);
int vt_exec_step_version(const vt_exec* e, int step);
void vt_exec_set_profiling(vt_exec* e, int on);
/* 1 (the default): consecutive kernels and team-safe ops at one thread count run in one parallel region. */
void vt_exec_set_teams(vt_exec* e, int on);
const double* vt_exec_step_ns(const vt_exec* e);
void* vt_aligned_copy(const void* src, size_t bytes);

#endif
