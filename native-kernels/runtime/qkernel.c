/*
 * VT_RT_QKERNEL: one quantized conv / matmul run by an INT8 kernel (src/codegen/int8-kernel.ts),
 * versions selectable like VT_RT_KERNEL's (the block scheduler picks among them).
 *   in [x (u8, NHWC), workspace], out [y (NHWC: u8, s8 or s32)];
 *   each version: (symbol, packed param, its bytes): the param holds w, comp and mult (int8-pack.ts);
 *   ints [comp offset, mult offset] per version: byte offsets of comp and mult inside that param.
 * At load each version's `<sym>_qdesc` is checked against those operands: x and y exactly, the
 * param's w / comp / mult regions at least what the kernel reads, the workspace at least its scratch.
 */
#include <dlfcn.h>
#include <stdio.h>
#include "vt_rt.h"

/* <sym>_qdesc: {version, input bytes, output bytes, w bytes, comp/mult channels, workspace bytes}. */
typedef const int64_t* (*vt_qdesc_fn)(void);
#define QDESC_VERSION 1
enum { QD_VERSION, QD_IN, QD_OUT, QD_W, QD_CHANNELS, QD_WS };
enum { Q_X, Q_WS, Q_IN };

int vt_qkernel_arity_ok(const vt_step* st) {
  return st->n_versions >= 1 && st->n_in == Q_IN && st->n_out == 1 && st->n_ints == 2 * st->n_versions;
}

int vt_qkernel_bind(void* so, const char* sym, vt_step* st, int v, const unsigned char* param, size_t param_bytes, char* err) {
  char name[128];
  snprintf(name, sizeof name, "%s_run", sym);
  vt_qrun_fn run = (vt_qrun_fn)dlsym(so, name);
  snprintf(name, sizeof name, "%s_qdesc", sym);
  vt_qdesc_fn desc = (vt_qdesc_fn)dlsym(so, name);
  if (!run || !desc) { snprintf(err, VT_ERR_LEN, "kernels library has no %s_run/%s_qdesc", sym, sym); return 0; }
  const int64_t* d = desc();
  const int64_t comp = st->ints[2 * v], mult = st->ints[2 * v + 1];
  const int64_t table = d[QD_CHANNELS] * 4;
  const char* why = NULL;
  if (d[QD_VERSION] != QDESC_VERSION) why = "its descriptor version is not this runtime's";
  else if ((int64_t)st->in_bytes[Q_X] != d[QD_IN]) why = "its input size differs from the plan's";
  else if ((int64_t)st->out_bytes[0] != d[QD_OUT]) why = "its output size differs from the plan's";
  else if ((int64_t)st->in_bytes[Q_WS] < d[QD_WS]) why = "the plan's workspace is smaller than it needs";
  else if (comp < d[QD_W] || comp % 4 || mult % 4 || mult < comp + table || (uint64_t)(mult + table) > param_bytes)
    why = "its packed constants do not fit the plan's param";
  if (why) { snprintf(err, VT_ERR_LEN, "INT8 kernel %s (version %d): %s", sym, v, why); return 0; }
  st->versions[v].qrun = run;
  st->versions[v].weight = (const float*)param;
  st->versions[v].comp = (const int32_t*)(param + comp);
  st->versions[v].mult = (const float*)(param + mult);
  st->versions[v].team = 1;
  return 1;
}

void vt_qkernel_run(const vt_step* st, int threads) {
  const vt_version* v = &st->versions[st->version];
  v->qrun((const uint8_t*)st->in[Q_X], (const int8_t*)v->weight, v->comp, v->mult, st->out[0], st->in[Q_WS], threads);
}
