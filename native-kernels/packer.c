/*
 * veltair packer: packs a model's weights with the bundle's own kernels, so the packed bytes are
 * exactly what <sym>_run expects (one packing routine, the generated one; no second copy in TS).
 *
 *   packer KERNELS_SO JOBS IN OUT
 * JOBS: one line per job, "<symbol> <offset> <floats>": the natural weight (OIHW for conv, [K][N]
 * for dense) is IN[offset .. offset+floats) in float32. Each job's packed weight
 * (desc->weight_floats floats) is appended to OUT, in job order. stdout: one JSON line per job,
 * {"symbol": …, "floats": N}; on error one {"error": …} line and exit status 1.
 * Symbols are checked against vt_k[0-9a-f]{16} before dlsym: nothing else is ever looked up.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "veltair_kernel.h"

static int fail(const char* what, const char* detail) {
  printf("{\"error\": \"%s%s%s\"}\n", what, detail ? ": " : "", detail ? detail : "");
  return 1;
}

static int valid_symbol(const char* s) {
  if (strlen(s) != 20 || strncmp(s, "vt_k", 4) != 0) return 0;
  for (int i = 4; i < 20; ++i) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
  }
  return 1;
}

static size_t natural_floats(const vt_desc* d) {
  if (d->op == VT_OP_CONV2D) return (size_t)d->cout * (size_t)(d->cin / d->groups) * (size_t)d->kh * (size_t)d->kw;
  if (d->op == VT_OP_DENSE) return (size_t)d->k * (size_t)d->nn;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 5) return fail("usage: packer KERNELS_SO JOBS IN OUT", NULL);
  void* so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!so) return fail("dlopen failed", dlerror());
  FILE* in = fopen(argv[3], "rb");
  if (!in) return fail("cannot open input", argv[3]);
  fseek(in, 0, SEEK_END);
  long in_bytes = ftell(in);
  fseek(in, 0, SEEK_SET);
  float* natural = malloc(in_bytes > 0 ? (size_t)in_bytes : 1);
  if (!natural || (in_bytes > 0 && fread(natural, 1, (size_t)in_bytes, in) != (size_t)in_bytes)) return fail("cannot read input", argv[3]);
  fclose(in);
  FILE* jobs = fopen(argv[2], "r");
  FILE* out = fopen(argv[4], "wb");
  if (!jobs || !out) return fail("cannot open jobs or output", NULL);
  char sym[64], name[128];
  unsigned long long offset, floats;
  while (fscanf(jobs, "%63s %llu %llu", sym, &offset, &floats) == 3) {
    if (!valid_symbol(sym)) return fail("bad symbol", sym);
    snprintf(name, sizeof name, "%s_desc", sym);
    vt_desc_fn desc_fn = (vt_desc_fn)dlsym(so, name);
    snprintf(name, sizeof name, "%s_pack_weight", sym);
    vt_pack_fn pack = (vt_pack_fn)dlsym(so, name);
    if (!desc_fn || !pack) return fail("symbol missing from kernels", sym);
    const vt_desc* d = desc_fn();
    if (d->abi_version != VT_ABI_VERSION) return fail("kernel ABI version mismatch", sym);
    if (natural_floats(d) != floats) return fail("weight size does not match the kernel's workload", sym);
    if ((offset + floats) * sizeof(float) > (unsigned long long)in_bytes) return fail("job outside the input", sym);
    float* packed = calloc(d->weight_floats ? d->weight_floats : 1, sizeof(float));
    if (!packed) return fail("out of memory", sym);
    pack(natural + offset, packed);
    if (fwrite(packed, sizeof(float), d->weight_floats, out) != d->weight_floats) return fail("write failed", argv[4]);
    free(packed);
    printf("{\"symbol\": \"%s\", \"floats\": %zu}\n", sym, d->weight_floats);
  }
  if (fclose(out) != 0) return fail("write failed", argv[4]);
  return 0;
}
