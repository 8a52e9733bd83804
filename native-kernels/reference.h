/*
 * Plain reference implementations in natural layouts (NCHW / OIHW, row-major matrices), double
 * accumulation, libm activations. Every candidate is checked against these before it is timed.
 */
#ifndef VT_REFERENCE_H
#define VT_REFERENCE_H
#include "veltair_kernel.h"

/* Natural-layout element counts of a workload's operands. */
size_t vt_ref_input_floats(const vt_desc* d);
size_t vt_ref_weight_floats(const vt_desc* d);
size_t vt_ref_output_floats(const vt_desc* d);
size_t vt_ref_out_channels(const vt_desc* d);     /* bias length: Cout or N */
size_t vt_ref_chanmul_floats(const vt_desc* d);   /* natural gate size: [N][Cout], [N], [B][N] */
size_t vt_ref_reduction_length(const vt_desc* d); /* K of one output element */

/* out = epilogue(op(in, w)); residual in the natural output layout; chanmul natural (see above). */
void vt_reference(const vt_desc* d, const float* in, const float* w, const float* bias,
                  const float* residual, const float* chanmul, const float* params, float* out);
#endif
