/*
 * The executor: decodes the plan blob once, owns the arena and the params, dlopens the bundle's
 * kernels.so and resolves every version's <sym>_run, then runs the steps in order.
 *
 * Plan blob (Float64 words; integers are exact below 2^53):
 *   header   MAGIC, FORMAT, n_steps, arena_bytes, n_inputs, n_outputs
 *   inputs   (arena offset, bytes) x n_inputs      outputs  (arena offset, bytes) x n_outputs
 *   steps    op, threads, n_in, n_out, n_ints, n_floats, n_versions,
 *            (in ref, bytes) x n_in, (out ref, bytes) x n_out, ints x n_ints, floats x n_floats,
 *            (symbol index, weight ref, weight bytes) x n_versions
 * A ref is an arena byte offset (>= 0), -1 (none: NULL, 0 bytes) or -(2 + i) for params[i]; its
 * bytes are the extent the step may touch there. resolve() checks offset + bytes against the arena
 * and bytes against the param, so no operand the plan names reaches past its buffer.
 * VT_RT_KERNEL steps: in = [x, bias, residual, chanmul, epi_params, workspace], out = [y], and no
 *   ints, or one: 1 when x is a small-cin conv's input in plain NCHW (the plan gave the stem the
 *   graph input as it is), so each version runs <sym>_run_nchw, and x holds N*Cin*H*W floats.
 *   Every version's descriptor is checked against those sizes (check_kernel): x, y, residual and
 *   the weight exactly; bias, chanmul and workspace at least what the kernel reads; epi_params
 *   its parameter count; and each buffer its epilogue uses must be there. A kernel built for
 *   another workload is refused at load instead of reading past a buffer.
 * VT_RT_QKERNEL steps (INT8 kernels): operands, ints and checks in qkernel.c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "vt_rt.h"

/*
 * What every instance of one loaded model shares: the plan blob, the kernels library and the
 * constant params (weights). Instances (vt_exec_clone) each own an arena and their step tables,
 * so two requests of one model run at once on disjoint cores with one copy of the weights.
 */
typedef struct vt_shared {
  int refs;
  double* blob;
  size_t words;
  char** symbols;
  int n_symbols;
  char* kernels_path;
  void* so;
  vt_param* params;
  int n_params;
} vt_shared;

struct vt_exec {
  vt_shared* shared;
  void* so;
  unsigned char* arena;
  size_t arena_bytes;
  vt_param* params;
  int n_params;
  int n_steps, n_inputs, n_outputs;
  vt_step* steps;
  size_t* io_offsets;      /* inputs then outputs */
  size_t* io_bytes;
  /* one pool for every step's pointer/size/int/float/version arrays: freed at once */
  void** ptrs;
  size_t* ptr_bytes;
  int64_t* ints;
  double* floats;
  vt_version* versions;
  int profiling;
  /* consecutive team-safe steps at one thread count share a parallel region (run_team); 0: each its own */
  int teams;
  double* step_ns;
  /* the CPU each team thread found itself on after the last vt_exec_bind (-1: not bound) */
  int bound_cpus[VT_MAX_CORES];
  int n_bound;
  /* the kernel thread id of each team thread at the last bind (0: unknown), for vt_exec_prepin */
  pid_t team_tids[VT_MAX_CORES];
  int n_tids;
  /* what the last successful vt_exec_bind was asked for (n_asked 0: none yet) */
  int asked[VT_MAX_CORES];
  int n_asked, asked_nice;
  char err[VT_ERR_LEN];
};

static const vt_op_fn OPS[VT_RT_OP_COUNT] = {
  [VT_RT_KERNEL] = NULL, [VT_RT_COPY] = vt_op_copy, [VT_RT_REORDER] = vt_op_reorder, [VT_RT_POOL] = vt_op_pool,
  [VT_RT_GLOBAL_POOL] = vt_op_global_pool, [VT_RT_UNARY] = vt_op_unary, [VT_RT_BINARY] = vt_op_binary,
  [VT_RT_BINARY_CHANNEL] = vt_op_binary_channel, [VT_RT_WHERE] = vt_op_where, [VT_RT_SOFTMAX] = vt_op_softmax,
  [VT_RT_LAYERNORM] = vt_op_layernorm, [VT_RT_CHANNEL_AFFINE] = vt_op_channel_affine,
  [VT_RT_STRIDED_COPY] = vt_op_strided_copy, [VT_RT_GATHER] = vt_op_gather, [VT_RT_REDUCE] = vt_op_reduce,
  [VT_RT_CAST] = vt_op_cast, [VT_RT_TOPK] = vt_op_topk,
  [VT_RT_CHANNEL_GATHER] = vt_op_channel_gather, [VT_RT_ELEMENTWISE_CHAIN] = vt_op_elementwise_chain, [VT_RT_RESIZE] = vt_op_resize,
  [VT_RT_QUANTIZE] = vt_op_quantize, [VT_RT_DEQUANTIZE] = vt_op_dequantize, [VT_RT_QADD] = vt_op_qadd,
  [VT_RT_QMAXPOOL] = vt_op_qmaxpool, [VT_RT_QGLOBAL_AVGPOOL] = vt_op_qglobal_avgpool, [VT_RT_QKERNEL] = NULL,
  [VT_RT_QCONCAT] = vt_op_qconcat, [VT_RT_QLUT] = vt_op_qlut, [VT_RT_QGATE] = vt_op_qgate,
  [VT_RT_QAVGPOOL] = vt_op_qavgpool,
};

void* vt_aligned_copy(const void* src, size_t bytes) {
  if (bytes > ((size_t)1 << 48)) return NULL;
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = aligned_alloc(64, rounded ? rounded : 64);
  if (!p) return NULL;
  if (bytes) memcpy(p, src, bytes);
  if (rounded > bytes) memset((char*)p + bytes, 0, rounded - bytes);
  return p;
}

/* Blob reader with bounds checks: a malformed blob is an error message, never a wild read. */
typedef struct { const double* w; size_t n, at; int bad; } reader;
static double next(reader* r) {
  if (r->at >= r->n) { r->bad = 1; return 0; }
  return r->w[r->at++];
}
static int64_t next_int(reader* r) {
  double d = next(r);
  if (d != (double)(int64_t)d) { r->bad = 1; return 0; }
  return (int64_t)d;
}

/* The operand `ref` spanning `bytes`: NULL for none; *ok = 0 when any byte of it lies outside its buffer. */
static void* resolve(vt_exec* e, int64_t ref, int64_t bytes, int* ok) {
  if (bytes < 0) { *ok = 0; return NULL; }
  if (ref == -1) {
    if (bytes != 0) *ok = 0;
    return NULL;
  }
  if (ref >= 0) {
    if ((uint64_t)bytes > e->arena_bytes || (uint64_t)ref > e->arena_bytes - (uint64_t)bytes) { *ok = 0; return NULL; }
    return e->arena + ref;
  }
  int64_t p = -ref - 2;
  if (p < 0 || p >= e->n_params || (uint64_t)bytes > e->params[p].bytes) { *ok = 0; return NULL; }
  return e->params[p].data;
}

static void shared_release(vt_shared* sh) {
  if (!sh || __atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  for (int i = 0; i < sh->n_params; i++) free(sh->params[i].data);
  free(sh->params);
  for (int i = 0; i < sh->n_symbols; i++) free(sh->symbols[i]);
  free(sh->symbols);
  free(sh->blob);
  free(sh->kernels_path);
  if (sh->so) dlclose(sh->so);
  free(sh);
}

void vt_exec_destroy(vt_exec* e) {
  if (!e) return;
  free(e->arena);
  free(e->steps); free(e->io_offsets); free(e->io_bytes);
  free(e->ptrs); free(e->ptr_bytes); free(e->ints); free(e->floats); free(e->versions); free(e->step_ns);
  shared_release(e->shared);
  free(e);
}

static vt_exec* fail(vt_exec* e, char* err, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, VT_ERR_LEN, fmt, ap);
  va_end(ap);
  vt_exec_destroy(e);
  return NULL;
}

/* First pass: sizes of the pools. */
static int measure(reader r, int n_steps, size_t* ptrs, size_t* ints, size_t* floats, size_t* versions) {
  for (int s = 0; s < n_steps; s++) {
    next(&r); next(&r);
    int64_t ni = next_int(&r), no = next_int(&r), nn = next_int(&r), nf = next_int(&r), nv = next_int(&r);
    if (r.bad || ni < 0 || no < 0 || nn < 0 || nf < 0 || nv < 0) return 0;
    *ptrs += (size_t)(ni + no); *ints += (size_t)nn; *floats += (size_t)nf; *versions += (size_t)nv;
    r.at += (size_t)(2 * (ni + no) + nn + nf + 3 * nv);
    if (r.at > r.n) return 0;
  }
  return 1;
}

/* A kernel step's one int: its input arrives in plain NCHW (KERNEL_READS_NCHW in src/runtime/native-plan.ts). */
#define K_READS_NCHW 1

/* The descriptor, when <sym>_run and <sym>_desc exist; v->run is <sym>_run, or for a step whose input
 * is plain NCHW <sym>_run_nchw (NULL when the kernel has none: check_kernel refuses it); v->team
 * whether its entries work-share over a calling team (<sym>_team_entry exists: run_team). */
static const vt_desc* version_desc(vt_exec* e, const char* sym, int nchw, vt_version* v) {
  char name[128];
  snprintf(name, sizeof name, "%s_run", sym);
  vt_run_fn blocked = (vt_run_fn)dlsym(e->so, name);
  snprintf(name, sizeof name, "%s_run_nchw", sym);
  v->run = nchw ? (vt_run_fn)dlsym(e->so, name) : blocked;
  snprintf(name, sizeof name, "%s_team_entry", sym);
  v->team = dlsym(e->so, name) != NULL;
  snprintf(name, sizeof name, "%s_desc", sym);
  vt_desc_fn d = (vt_desc_fn)dlsym(e->so, name);
  return (blocked && d) ? d() : NULL;
}

static int has_step(const vt_desc* d, int step) {
  for (int i = 0; i < d->n_epi && i < VT_MAX_EPI; i++) if (d->epi[i] == step) return 1;
  return 0;
}

/* Kernel operands: in = [x, bias, residual, chanmul, epi_params, workspace], out = [y]. */
enum { K_X, K_BIAS, K_RES, K_GATE, K_EPI, K_WS, K_IN };

/* Does the version's descriptor fit the operands the plan gives its step (sizes, and the buffers its epilogue uses)? */
static int check_kernel(vt_exec* e, vt_step* st, int s, int v, const char* sym, const vt_desc* d, int64_t weight_bytes, int nchw) {
  const size_t* in = st->in_bytes;
  const char* why = NULL;
  const size_t input_floats = nchw ? (size_t)d->n * (size_t)d->cin * (size_t)d->h * (size_t)d->w : d->input_floats;
  if (d->abi_version != VT_ABI_VERSION) why = "kernel ABI version";
  else if (nchw && (d->op != VT_OP_CONV2D || !st->versions[v].run)) why = "plain NCHW input to a kernel without _run_nchw";
  else if (input_floats * 4 != in[K_X]) why = "input size";
  else if (d->output_floats * 4 != st->out_bytes[0]) why = "output size";
  else if ((uint64_t)weight_bytes != d->weight_floats * 4) why = "weight size";
  else if (has_step(d, VT_EPI_BIAS) && (!st->in[K_BIAS] || in[K_BIAS] < d->bias_floats * 4)) why = "bias size";
  else if (has_step(d, VT_EPI_RESIDUAL_ADD) && (!st->in[K_RES] || in[K_RES] != d->output_floats * 4)) why = "residual size";
  else if (has_step(d, VT_EPI_CHANNEL_MUL) && (!st->in[K_GATE] || in[K_GATE] < d->chanmul_floats * 4)) why = "channel gate size";
  else if (d->n_epi_params < 0 || in[K_EPI] != (size_t)d->n_epi_params * 4 || (d->n_epi_params > 0 && !st->in[K_EPI])) {
    why = "epilogue parameter count";
  } else if (in[K_WS] < d->workspace_bytes || (d->workspace_bytes > 0 && (!st->in[K_WS] || ((uintptr_t)st->in[K_WS] & 63)))) {
    why = "workspace size";
  }
  if (!why) return 1;
  snprintf(e->err, VT_ERR_LEN, "kernel %s for step %d does not match the plan (%s): built for another workload", sym, s, why);
  return 0;
}

/* One instance over `sh` (which it holds a reference to, released by vt_exec_destroy even on failure). */
static vt_exec* instantiate(vt_shared* sh, char* err) {
  vt_exec* e = calloc(1, sizeof *e);
  if (!e) { shared_release(sh); snprintf(err, VT_ERR_LEN, "out of memory"); return NULL; }
  e->shared = sh;
  e->params = sh->params; e->n_params = sh->n_params;
  const char* const* symbols = (const char* const*)sh->symbols;
  const int n_symbols = sh->n_symbols;
  reader r = { sh->blob, sh->words, 0, 0 };
  if (next_int(&r) != VT_PLAN_MAGIC || next_int(&r) != VT_PLAN_FORMAT) return fail(e, err, "plan blob has the wrong magic/format");
  e->n_steps = (int)next_int(&r);
  int64_t arena = next_int(&r);
  e->n_inputs = (int)next_int(&r); e->n_outputs = (int)next_int(&r);
  if (r.bad || e->n_steps < 0 || arena < 0 || e->n_inputs < 0 || e->n_outputs < 0) return fail(e, err, "plan blob header is malformed");
  e->arena_bytes = (size_t)arena;
  size_t rounded = (e->arena_bytes + 63) / 64 * 64;
  e->arena = aligned_alloc(64, rounded ? rounded : 64);
  if (!e->arena) return fail(e, err, "cannot allocate the activation arena (%ld bytes)", (long)arena);
  memset(e->arena, 0, rounded ? rounded : 64);
  int nio = e->n_inputs + e->n_outputs;
  e->io_offsets = calloc((size_t)nio + 1, sizeof(size_t));
  e->io_bytes = calloc((size_t)nio + 1, sizeof(size_t));
  for (int i = 0; i < nio; i++) {
    int64_t off = next_int(&r), bytes = next_int(&r);
    if (r.bad || off < 0 || bytes < 0 || (size_t)(off + bytes) > e->arena_bytes)
      return fail(e, err, "plan %s %d lies outside the arena", i < e->n_inputs ? "input" : "output", i < e->n_inputs ? i : i - e->n_inputs);
    e->io_offsets[i] = (size_t)off; e->io_bytes[i] = (size_t)bytes;
  }
  size_t np = 0, nn = 0, nf = 0, nv = 0;
  if (!measure(r, e->n_steps, &np, &nn, &nf, &nv)) return fail(e, err, "plan blob steps are malformed");
  e->teams = 1;
  e->steps = calloc((size_t)e->n_steps + 1, sizeof(vt_step));
  e->ptrs = calloc(np + 1, sizeof(void*));
  e->ptr_bytes = calloc(np + 1, sizeof(size_t));
  e->ints = calloc(nn + 1, sizeof(int64_t));
  e->floats = calloc(nf + 1, sizeof(double));
  e->versions = calloc(nv + 1, sizeof(vt_version));
  e->step_ns = calloc((size_t)e->n_steps + 1, sizeof(double));
  if (!e->steps || !e->ptrs || !e->ptr_bytes || !e->ints || !e->floats || !e->versions || !e->step_ns) return fail(e, err, "out of memory");
  if (nv > 0) {
    if (!sh->kernels_path) return fail(e, err, "the plan has tunable steps but no kernels library was given");
    if (!sh->so) sh->so = dlopen(sh->kernels_path, RTLD_NOW | RTLD_LOCAL);
    if (!sh->so) return fail(e, err, "cannot load kernels library: %s", dlerror());
    e->so = sh->so;
  }
  size_t ip = 0, in = 0, ifl = 0, iv = 0;
  for (int s = 0; s < e->n_steps; s++) {
    vt_step* st = &e->steps[s];
    st->op = (int)next_int(&r); st->threads = (int)next_int(&r);
    st->n_in = (int)next_int(&r); st->n_out = (int)next_int(&r); st->n_ints = (int)next_int(&r);
    st->n_floats = (int)next_int(&r); st->n_versions = (int)next_int(&r);
    if (st->op < 0 || st->op >= VT_RT_OP_COUNT) return fail(e, err, "plan step %d has unknown op %d", s, st->op);
    if (st->threads < 1) st->threads = 1;
    st->fn = OPS[st->op];
    st->err = e->err;
    size_t* in_bytes = e->ptr_bytes + ip;
    st->in = e->ptrs + ip; st->in_bytes = in_bytes; ip += (size_t)st->n_in;
    size_t* out_bytes = e->ptr_bytes + ip;
    st->out = e->ptrs + ip; st->out_bytes = out_bytes; ip += (size_t)st->n_out;
    int ok = 1;
    for (int i = 0; i < st->n_in; i++) {
      int64_t ref = next_int(&r), bytes = next_int(&r);
      st->in[i] = resolve(e, ref, bytes, &ok);
      in_bytes[i] = ok ? (size_t)bytes : 0;
    }
    for (int i = 0; i < st->n_out; i++) {
      int64_t ref = next_int(&r), bytes = next_int(&r);
      st->out[i] = resolve(e, ref, bytes, &ok);
      out_bytes[i] = ok ? (size_t)bytes : 0;
    }
    if (!ok) return fail(e, err, "plan step %d refers to a buffer that does not exist or reaches past its end", s);
    int64_t* ints = e->ints + in; in += (size_t)st->n_ints;
    for (int i = 0; i < st->n_ints; i++) ints[i] = next_int(&r);
    st->ints = ints;
    double* fl = e->floats + ifl; ifl += (size_t)st->n_floats;
    for (int i = 0; i < st->n_floats; i++) fl[i] = next(&r);
    st->floats = fl;
    st->versions = e->versions + iv; iv += (size_t)st->n_versions;
    if (st->op == VT_RT_KERNEL && (st->n_versions < 1 || st->n_in != K_IN || st->n_out != 1 || st->n_ints > 1
                                   || (st->n_ints == 1 && ints[0] != 0 && ints[0] != K_READS_NCHW))) {
      return fail(e, err, "plan step %d is a kernel step without versions or with the wrong arity", s);
    }
    if (st->op == VT_RT_QKERNEL && !vt_qkernel_arity_ok(st))
      return fail(e, err, "plan step %d is an INT8 kernel step without versions or with the wrong arity", s);
    if (st->n_versions > 0 && st->op != VT_RT_KERNEL && st->op != VT_RT_QKERNEL)
      return fail(e, err, "plan step %d has versions but is not a kernel step", s);
    const int nchw = st->op == VT_RT_KERNEL && st->n_ints == 1 && ints[0] == K_READS_NCHW;
    for (int v = 0; v < st->n_versions; v++) {
      int64_t sym = next_int(&r), wref = next_int(&r), wbytes = next_int(&r);
      if (r.bad) return fail(e, err, "plan blob is truncated at step %d", s);
      if (sym < 0 || sym >= n_symbols) return fail(e, err, "plan step %d names symbol %ld, which is not in the symbol table", s, (long)sym);
      st->versions[v].weight = resolve(e, wref, wbytes, &ok);
      if (!ok) return fail(e, err, "plan step %d version weight refers to a buffer that does not exist or reaches past its end", s);
      if (st->op == VT_RT_QKERNEL) {
        if (wref > -2) return fail(e, err, "plan step %d: an INT8 version's constants must be a param", s);
        if (!vt_qkernel_bind(e->so, symbols[sym], st, v, (const unsigned char*)st->versions[v].weight, (size_t)wbytes, e->err)) {
          snprintf(err, VT_ERR_LEN, "plan step %d: %s", s, e->err);
          vt_exec_destroy(e);
          return NULL;
        }
        continue;
      }
      const vt_desc* d = version_desc(e, symbols[sym], nchw, &st->versions[v]);
      if (!d) return fail(e, err, "kernels library has no %s_run/%s_desc (step %d)", symbols[sym], symbols[sym], s);
      if (!check_kernel(e, st, s, v, symbols[sym], d, wbytes, nchw)) { snprintf(err, VT_ERR_LEN, "%s", e->err); vt_exec_destroy(e); return NULL; }
    }
    if (r.bad) return fail(e, err, "plan blob is truncated at step %d", s);
  }
  if (r.at != r.n) return fail(e, err, "plan blob has %ld trailing words", (long)(r.n - r.at));
  return e;
}

vt_exec* vt_exec_create(const double* blob, size_t words, const char* kernels_path, const char* const* symbols,
                        int n_symbols, vt_param* params, int n_params, char* err) {
  vt_shared* sh = calloc(1, sizeof *sh);
  if (!sh) { for (int i = 0; i < n_params; i++) free(params[i].data); free(params); snprintf(err, VT_ERR_LEN, "out of memory"); return NULL; }
  sh->refs = 1;
  sh->params = params; sh->n_params = n_params;
  sh->blob = malloc((words ? words : 1) * sizeof(double));
  sh->symbols = calloc((size_t)n_symbols + 1, sizeof(char*));
  sh->kernels_path = kernels_path ? strdup(kernels_path) : NULL;
  int ok = sh->blob && sh->symbols && (!kernels_path || sh->kernels_path);
  for (int i = 0; ok && i < n_symbols; i++) ok = (sh->symbols[i] = strdup(symbols[i])) != NULL;
  sh->n_symbols = ok ? n_symbols : 0;
  if (!ok) { shared_release(sh); snprintf(err, VT_ERR_LEN, "out of memory"); return NULL; }
  if (words) memcpy(sh->blob, blob, words * sizeof(double));
  sh->words = words;
  return instantiate(sh, err);
}

vt_exec* vt_exec_clone(vt_exec* e, char* err) {
  __atomic_add_fetch(&e->shared->refs, 1, __ATOMIC_ACQ_REL);
  vt_exec* c = instantiate(e->shared, err);
  if (!c) return NULL;
  for (int s = 0; s < e->n_steps; s++) { c->steps[s].version = e->steps[s].version; c->steps[s].threads = e->steps[s].threads; }
  c->profiling = e->profiling;
  c->teams = e->teams;
  return c;
}

int vt_exec_n_inputs(const vt_exec* e) { return e->n_inputs; }
int vt_exec_n_outputs(const vt_exec* e) { return e->n_outputs; }
int vt_exec_n_steps(const vt_exec* e) { return e->n_steps; }
size_t vt_exec_input_bytes(const vt_exec* e, int i) { return e->io_bytes[i]; }
size_t vt_exec_output_bytes(const vt_exec* e, int i) { return e->io_bytes[e->n_inputs + i]; }
void* vt_exec_input_ptr(vt_exec* e, int i) { return e->arena + e->io_offsets[i]; }
const void* vt_exec_output_ptr(const vt_exec* e, int i) { return e->arena + e->io_offsets[e->n_inputs + i]; }
const char* vt_exec_error(const vt_exec* e) { return e->err; }
void vt_exec_set_profiling(vt_exec* e, int on) { e->profiling = on; }
void vt_exec_set_teams(vt_exec* e, int on) { e->teams = on; }
const double* vt_exec_step_ns(const vt_exec* e) { return e->step_ns; }
int vt_exec_step_versions(const vt_exec* e, int step) {
  return step >= 0 && step < e->n_steps ? e->steps[step].n_versions : -1;
}

/* The version run_step calls for a kernel step (-1: not a kernel step, or no such step). */
int vt_exec_step_version(const vt_exec* e, int step) {
  return step >= 0 && step < e->n_steps && (e->steps[step].op == VT_RT_KERNEL || e->steps[step].op == VT_RT_QKERNEL) ? e->steps[step].version : -1;
}

int vt_exec_set_version(vt_exec* e, int step, int version) {
  if (step < 0 || step >= e->n_steps) { snprintf(e->err, VT_ERR_LEN, "step %d does not exist (the plan has %d)", step, e->n_steps); return 1; }
  vt_step* st = &e->steps[step];
  if (version < 0 || version >= st->n_versions) {
    snprintf(e->err, VT_ERR_LEN, "step %d has %d versions; version %d does not exist", step, st->n_versions, version);
    return 1;
  }
  st->version = version;
  return 0;
}

int vt_exec_set_threads(vt_exec* e, int step, int threads) {
  if (step < 0 || step >= e->n_steps) { snprintf(e->err, VT_ERR_LEN, "step %d does not exist (the plan has %d)", step, e->n_steps); return 1; }
  if (threads < 1 || threads > 4096) { snprintf(e->err, VT_ERR_LEN, "thread count %d for step %d is not in 1..4096", threads, step); return 1; }
  e->steps[step].threads = threads;
  return 0;
}

static inline int run_step(const vt_step* st, int max_threads) {
  const int threads = st->threads < max_threads ? st->threads : max_threads;
  if (st->op == VT_RT_KERNEL) {
    const vt_version* v = &st->versions[st->version];
    v->run((const float*)st->in[K_X], v->weight, (const float*)st->in[K_BIAS], (const float*)st->in[K_RES],
           (const float*)st->in[K_GATE], (const float*)st->in[K_EPI], (float*)st->out[0], st->in[K_WS], threads);
    return 0;
  }
  if (st->op == VT_RT_QKERNEL) {
    vt_qkernel_run(st, threads);
    return 0;
  }
  if (threads == st->threads) return st->fn(st);
  vt_step capped = *st;
  capped.threads = threads;
  return st->fn(&capped);
}

static inline double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/*
 * Steps that may share one parallel region (run_team): kernels (their entries work-share over a
 * calling team: src/codegen/team-entry.ts) and the ops whose every write happens inside vt_parallel
 * or vt_zero_pad_lanes (both meet at a barrier in a team; REORDER's element-by-element fallback
 * runs on thread 0 and meets the others at one) and whose errors depend only on their ints, so
 * every thread of a team takes the same path through them. Other ops run on their own.
 */
static int team_safe(const vt_step* st) {
  switch (st->op) {
    case VT_RT_KERNEL: return st->versions[st->version].team;
    /* an INT8 kernel work-shares with orphaned `omp for` loops when called inside a region */
    case VT_RT_QKERNEL: return 1;
    case VT_RT_QUANTIZE: case VT_RT_DEQUANTIZE: case VT_RT_QADD: case VT_RT_QMAXPOOL: case VT_RT_QGLOBAL_AVGPOOL: return 1;
    case VT_RT_QCONCAT: case VT_RT_QLUT: case VT_RT_QGATE: case VT_RT_QAVGPOOL: return 1;
    case VT_RT_CHANNEL_GATHER: case VT_RT_POOL: case VT_RT_GLOBAL_POOL: case VT_RT_ELEMENTWISE_CHAIN: case VT_RT_REORDER:
    case VT_RT_UNARY: case VT_RT_BINARY: case VT_RT_BINARY_CHANNEL: case VT_RT_SOFTMAX: case VT_RT_LAYERNORM:
    case VT_RT_CHANNEL_AFFINE: case VT_RT_RESIZE: return 1;
    default: return 0;
  }
}

static inline int step_threads(const vt_step* st, int max_threads) { return st->threads < max_threads ? st->threads : max_threads; }

/* Run one step, timing it when profiling. */
static inline int run_alone(vt_exec* e, int s, int max_threads) {
  if (!e->profiling) return run_step(&e->steps[s], max_threads);
  double t0 = now_ns();
  int rc = run_step(&e->steps[s], max_threads);
  e->step_ns[s] = now_ns() - t0;
  return rc;
}

/*
 * Steps [from, to), all team-safe at `threads` (> 1) threads, in ONE parallel region: each step ends
 * at its own barrier (the kernels' work-sharing loops, vt_parallel), which is what separated steps
 * before at the cost of a fork and a join each. Thread 0's clock times each step from barrier to
 * barrier. A failing op fails on every thread at the same step (team_safe), which all leave there;
 * only thread 0 writes the message.
 */
static int run_team(vt_exec* e, int from, int to, int threads) {
  int failed = 0;
  vt_team_barrier barrier = { 0, 0 };
#pragma omp parallel num_threads(threads)
  {
    vt_team_join(&barrier);
    const int lead = omp_get_thread_num() == 0;
    char mine[VT_ERR_LEN];
    for (int s = from; s < to; s++) {
      vt_step st = e->steps[s];
      st.threads = threads;
      if (!lead) st.err = mine;
      double t0 = lead && e->profiling ? now_ns() : 0;
      int rc = run_step(&st, threads);
      if (lead && e->profiling) e->step_ns[s] = now_ns() - t0;
      if (rc) {
        if (lead) failed = 1;
        break;
      }
    }
    vt_team_leave();
  }
  return failed;
}

int vt_exec_run_range(vt_exec* e, int from, int to, int max_threads) {
  if (from < 0 || to > e->n_steps || from > to) {
    snprintf(e->err, VT_ERR_LEN, "steps [%d, %d) are not a range of the plan's %d steps", from, to, e->n_steps);
    return 1;
  }
  if (max_threads < 1) max_threads = 1;
  const vt_step* st = e->steps;
  for (int s = from; s < to;) {
    const int threads = step_threads(&st[s], max_threads);
    int end = s + 1;
    if (e->teams && threads > 1 && team_safe(&st[s])) {
      while (end < to && team_safe(&st[end]) && step_threads(&st[end], max_threads) == threads) end++;
    }
    if (end - s >= 2) {
      if (run_team(e, s, end, threads)) return 1;
    } else if (run_alone(e, s, max_threads)) {
      return 1;
    }
    s = end;
  }
  return 0;
}

int vt_exec_run(vt_exec* e) {
  return vt_exec_run_range(e, 0, e->n_steps, 1 << 30);
}

/*
 * Pin the calling thread's OpenMP team to `cores`: thread i of an n-thread team on cores[i]. libgomp
 * keeps one pool of threads per master thread and hands a team of t <= n threads the first t of
 * them, so every parallel region this thread opens afterwards (kernels, vt_parallel) runs on these
 * cores until the next bind. Needs OMP_PROC_BIND unset (libgomp's own binding would fight it).
 * Each thread waits until the scheduler has moved it, and records the CPU it runs on. With `nice`
 * > 0 each also becomes a background thread (vt_background_thread; addon.c says why), set per
 * thread because Linux's nice and policy are per thread: a team thread started before the value
 * changed would otherwise keep the old one.
 * A bind exactly like the previous one returns at once: the team is already there (only this
 * instance's worker binds it), and a request that keeps its cores from block to block — the
 * scheduler's preference — then pays no parallel region and no affinity calls per block.
 */
/*
 * Make thread `tid` (0: the caller) a background thread: nice `nice` and the batch policy
 * (SCHED_BATCH, same CPU share as its nice). Why batch: Linux never lets a woken batch thread
 * preempt the running one, so the thread that wakes a block (the server's event loop) keeps its
 * core instead of waiting out the block thread's time slice. Neither change needs privilege.
 * Best effort: where the kernel refuses, the thread stays as it was. Returns 0 when both held.
 */
int vt_background_thread(int tid, int nice) {
  int failed = 0;
  if (getpriority(PRIO_PROCESS, (id_t)tid) != nice && setpriority(PRIO_PROCESS, (id_t)tid, nice) != 0) failed = 1;
  struct sched_param none = { 0 };
  if (sched_getscheduler((pid_t)tid) != SCHED_BATCH && sched_setscheduler((pid_t)tid, SCHED_BATCH, &none) != 0) failed = 1;
  return failed;
}

int vt_exec_bind(vt_exec* e, const int* cores, int n, int nice) {
  if (n < 1 || n > VT_MAX_CORES) { snprintf(e->err, VT_ERR_LEN, "a block needs 1 to %d cores, not %d", VT_MAX_CORES, n); return 1; }
  for (int i = 0; i < n; i++) {
    if (cores[i] < 0 || cores[i] >= CPU_SETSIZE) { snprintf(e->err, VT_ERR_LEN, "core %d does not exist", cores[i]); return 1; }
  }
  if (n == e->n_asked && nice == e->asked_nice && memcmp(cores, e->asked, (size_t)n * sizeof *cores) == 0) return 0;
  e->n_asked = 0;
  int failed = 0;
  for (int i = 0; i < VT_MAX_CORES; i++) e->bound_cpus[i] = -1;
#pragma omp parallel num_threads(n) reduction(|: failed)
  {
    int id = omp_get_thread_num();
    if (omp_get_num_threads() != n) {
      failed = 1;
    } else {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cores[id], &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) failed = 1;
      const id_t tid = (id_t)syscall(SYS_gettid);
      e->team_tids[id] = (pid_t)tid;
      if (nice > 0) (void)vt_background_thread((int)tid, nice);
      for (int spin = 0; spin < 1000 && sched_getcpu() != cores[id]; spin++) sched_yield();
      e->bound_cpus[id] = sched_getcpu();
    }
  }
  e->n_bound = n;
  e->n_tids = failed ? 0 : n;
  if (failed) {
    snprintf(e->err, VT_ERR_LEN, "could not pin %d threads to the granted cores (is the process allowed to run on them?)", n);
    return failed;
  }
  memcpy(e->asked, cores, (size_t)n * sizeof *cores);
  e->n_asked = n;
  e->asked_nice = nice;
  return 0;
}

/*
 * Move the team threads of the last bind onto `cores` from another thread (the one that hands the
 * team its next block), before the team wakes. A thread pinned to its previous cores wakes there,
 * and if another model's block now runs on that core at the same nice value, it waits out that
 * block's time slice (milliseconds) before it can run its own bind. Only threads the last bind met
 * are moved; the bind that follows still pins, checks and records every thread. Best effort: a
 * thread that has exited is skipped.
 */
void vt_exec_prepin(vt_exec* e, const int* cores, int n) {
  if (n == e->n_asked && memcmp(cores, e->asked, (size_t)n * sizeof *cores) == 0) return;
  const int k = n < e->n_tids ? n : e->n_tids;
  for (int i = 0; i < k; i++) {
    if (e->team_tids[i] <= 0 || cores[i] < 0 || cores[i] >= CPU_SETSIZE) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cores[i], &set);
    (void)sched_setaffinity(e->team_tids[i], sizeof set, &set);
  }
}

int vt_exec_bound_cpus(const vt_exec* e, int* out, int max) {
  int n = e->n_bound < max ? e->n_bound : max;
  for (int i = 0; i < n; i++) out[i] = e->bound_cpus[i];
  return n;
}
