/*
 * veltair kernel ABI: what every generated candidate exports, and what the harness and the runtime
 * call. One candidate = one (workload, schedule) = one symbol prefix `vt_k<16 hex>` chosen by the
 * compiler (never a model-supplied name). Several candidates may live in one shared object.
 *
 * Layouts (V = the candidate's vector width, `desc->vec`; Xpad = X rounded up to a multiple of V):
 *   conv2d   input   [N][Cin_pad/V][H][W][V]      (NCHW[V]c, no spatial halo)
 *            output  [N][Cout_pad/V][OH][OW][V]   (NCHW[V]c); residual uses the output layout
 *            weight  packed per schedule (opaque; only <sym>_pack_weight writes it) from OIHW
 *   dense    input   [M][Kpad]   output [M][Npad]   weight packed from [K][N]
 *   batch_matmul  A [B][M][Kpad]   B [B][K][Npad] (transB: [B][N][Kpad])   output [B][M][Npad]
 *            (B is an activation: <sym>_pack_weight only re-lays it out; a real caller feeds it
 *            straight from the producing layer)
 * Invariant: the padded channels/columns of every activation a kernel writes are exactly zero, so
 * a consumer may reduce over them. bias is Cout_pad (Npad) floats, zero-padded. channel_mul gates
 * are [N][Cout_pad] for conv, [Npad] for dense, [B][Npad] for batch_matmul.
 *
 * Epilogue: the steps in desc->epi run in order on each output element after the full reduction.
 * epi_params is the concatenation of the runtime parameters of the parameterised steps, in step
 * order: clip (min, max), leaky_relu (alpha), hard_sigmoid (alpha, beta); every other step takes none.
 * gelu is the exact erf form, gelu_tanh its tanh approximation 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)));
 * hard_swish is x * clip(x/6 + 1/2, 0, 1) (ONNX HardSwish).
 *
 * Threading: called outside any OpenMP parallel region, <sym>_run opens one with exactly
 * `nthreads` threads over the schedule's chunks. Called inside an active region it ignores
 * `nthreads` and shares its loops over that region's team (static shares, so the same results):
 * then EVERY thread of the team must call it, with the same arguments, as the executor's run_team
 * does (src/codegen/team-entry.ts; kernels that can are marked by <sym>_team_entry). Pinning is the
 * caller's business (the harness pins; the runtime pins its pool).
 *
 * Workspace: a kernel never allocates. Scratch memory it needs (the gathered NCHW input of a
 * small-cin stem conv, batch_matmul's packed B^T panels) is `desc->workspace_bytes` bytes in total,
 * for any thread count (threads share it; each writes disjoint parts), 64-byte aligned, owned by
 * the caller: the harness allocates it once per measured candidate, the runtime plans one region
 * of its activation arena, sized for the largest kernel step, and passes it to every kernel step.
 * Its content on entry is irrelevant (the kernel writes before it reads). NULL when
 * workspace_bytes is 0.
 */
#ifndef VELTAIR_KERNEL_H
#define VELTAIR_KERNEL_H
#include <stddef.h>
/* VT_ABI_VERSION, VT_MAX_EPI, enum vt_op and enum vt_epi: generated from src/toolchain/abi.ts into
 * every build (never edited by hand, so the TypeScript and C sides cannot disagree). */
#include "vt_abi.h"

/* The workload a symbol computes, so a shared object describes itself (harness, runtime verify). */
typedef struct vt_desc {
  int abi_version;
  int op;                 /* enum vt_op */
  int vec;                /* V of the blocked layouts above */
  /* conv2d */
  int n, cin, h, w, cout, kh, kw, stride_h, stride_w;
  int pad_t, pad_l, pad_b, pad_r, dil_h, dil_w, groups, oh, ow;
  /* dense / batch_matmul (dense: batch = 1) */
  int batch, m, k, nn, trans_b;
  int n_epi;
  int epi[VT_MAX_EPI];    /* enum vt_epi, in order */
  int n_epi_params;
  /* The floats each operand holds: the exact sizes the kernel reads (input, weight, bias, chanmul,
   * residual = output_floats) and writes (output). */
  size_t input_floats, weight_floats, output_floats, bias_floats, chanmul_floats;
  size_t workspace_bytes;  /* scratch the caller provides (see Workspace above); 0: none */
} vt_desc;

/*
 * Exported per candidate, with <sym> the candidate's symbol:
 *   const vt_desc* <sym>_desc(void);
 *   void <sym>_pack_input(const float* natural, float* blocked);    NCHW / [M][K] / A  -> layout above
 *   void <sym>_pack_weight(const float* natural, float* packed);    OIHW / [K][N] / B  -> packed
 *   void <sym>_pack_output(const float* natural, float* blocked);   residual NCHW/[M][N] -> out layout
 *   void <sym>_unpack_output(const float* blocked, float* natural);
 *   void <sym>_run(const float* in, const float* w, const float* bias, const float* residual,
 *                  const float* chanmul, const float* epi_params, float* out, void* workspace,
 *                  int nthreads);
 * Pointers not needed by the workload's epilogue may be NULL. The pack functions are layout
 * transforms done once (weights) or by the caller's data flow (activations); they are not timed.
 */
typedef const vt_desc* (*vt_desc_fn)(void);
typedef void (*vt_pack_fn)(const float*, float*);
typedef void (*vt_run_fn)(const float*, const float*, const float*, const float*, const float*,
                          const float*, float*, void*, int);

#endif
