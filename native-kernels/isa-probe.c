/*
 * What this CPU executes, for the ISA-level flags its /proc/cpuinfo does not list. A hypervisor may
 * hide a flag the CPU has (AMD Zen 5 VMs hide `abm`/`lzcnt`): cpuinfo is then wrong, and only
 * running the instruction settles it.
 *
 *   isa-probe FLAG...      (cpuinfo names: abm avx2 avx512vl ...)
 * (and `ud2`, which always faults: a check of the SIGILL guard) prints one line per flag: `FLAG 1` (it ran and computed the right result), `FLAG 0` (it faulted
 * with SIGILL, or ran as another instruction), or `FLAG ?` (no probe for that name).
 *
 * Each probe is a leaf function in assembly, so the compiler never emits these instructions
 * itself (the probe is built without -march) and the only registers touched are caller-saved.
 * SIGILL is caught and turned into "absent". LZCNT needs more: on a CPU without it, its encoding
 * (F3 0F BD) runs as BSR and faults on nothing, so the probe checks the result: lzcnt(1) = 31,
 * bsr(1) = 0. An AVX or AVX-512 instruction also faults when the OS has not enabled its register
 * state (XCR0), which is the same answer: kernels using it cannot run.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PROBE(name, body) \
  __asm__(".text\n.globl " #name "\n.type " #name ",@function\n" #name ":\n" body "\nret\n.size " #name ",.-" #name "\n");

/* Each returns a value the caller checks (the instruction's result where it is cheap to know). */
PROBE(p_mmx, "pxor %mm0,%mm0\nemms\nmov $1,%eax")
PROBE(p_sse, "xorps %xmm0,%xmm0\nmov $1,%eax")
PROBE(p_sse2, "pxor %xmm0,%xmm0\npaddq %xmm0,%xmm0\nmov $1,%eax")
PROBE(p_pni, "xorps %xmm0,%xmm0\nhaddps %xmm0,%xmm0\nmov $1,%eax")
PROBE(p_ssse3, "pxor %xmm0,%xmm0\npshufb %xmm0,%xmm0\nmov $1,%eax")
PROBE(p_sse4_1, "pxor %xmm0,%xmm0\npminsd %xmm0,%xmm0\nmov $1,%eax")
PROBE(p_sse4_2, "pxor %xmm0,%xmm0\npcmpgtq %xmm0,%xmm0\nmov $1,%eax")
PROBE(p_popcnt, "mov $0xF0,%eax\npopcnt %eax,%eax")                      /* 4 */
PROBE(p_abm, "mov $1,%eax\nlzcnt %eax,%eax")                              /* 31; BSR gives 0 */
PROBE(p_cx16, "push %rbx\nxor %eax,%eax\nxor %edx,%edx\nxor %ebx,%ebx\nxor %ecx,%ecx\nlock cmpxchg16b (%rdi)\npop %rbx\nmov $1,%eax")
PROBE(p_lahf_lm, "xor %eax,%eax\nlahf\nmov $1,%eax")
PROBE(p_movbe, "movbe (%rdi),%eax")                                      /* byte-swapped load */
PROBE(p_xsave, "xor %ecx,%ecx\nxgetbv\nmov $1,%eax")
PROBE(p_avx, "vxorps %ymm0,%ymm0,%ymm0\nvzeroupper\nmov $1,%eax")
PROBE(p_avx2, "vpxor %ymm0,%ymm0,%ymm0\nvpaddd %ymm0,%ymm0,%ymm0\nvzeroupper\nmov $1,%eax")
PROBE(p_fma, "vxorps %xmm0,%xmm0,%xmm0\nvfmadd231ps %xmm0,%xmm0,%xmm0\nmov $1,%eax")
PROBE(p_f16c, "vxorps %xmm0,%xmm0,%xmm0\nvcvtph2ps %xmm0,%xmm0\nmov $1,%eax")
PROBE(p_bmi1, "mov $0xF,%esi\nmov $0x3,%edi\nandn %esi,%edi,%eax")        /* ~3 & 15 = 12 */
PROBE(p_bmi2, "mov $0xF0,%esi\nmov $0x3,%edi\npdep %esi,%edi,%eax")       /* deposit 0b11 at mask 0xF0: 0x30 */
PROBE(p_avx512f, "vpxord %zmm1,%zmm1,%zmm1\nvzeroupper\nmov $1,%eax")
PROBE(p_avx512bw, "vpxord %zmm1,%zmm1,%zmm1\nvpaddb %zmm1,%zmm1,%zmm1\nvzeroupper\nmov $1,%eax")
PROBE(p_avx512cd, "vpxord %zmm1,%zmm1,%zmm1\nvplzcntd %zmm1,%zmm1\nvzeroupper\nmov $1,%eax")
PROBE(p_avx512dq, "vpxord %zmm1,%zmm1,%zmm1\nvpmullq %zmm1,%zmm1,%zmm1\nvzeroupper\nmov $1,%eax")
PROBE(p_avx512vl, "vpxord %xmm17,%xmm17,%xmm17\nvpaddd %xmm17,%xmm17,%xmm17\nmov $1,%eax")
PROBE(p_ud2, "ud2\nmov $1,%eax")                                         /* always faults: checks the guard itself */

typedef int (*probe_fn)(void *);
int p_mmx(void *), p_sse(void *), p_sse2(void *), p_pni(void *), p_ssse3(void *), p_sse4_1(void *), p_sse4_2(void *), p_popcnt(void *),
    p_abm(void *), p_cx16(void *), p_lahf_lm(void *), p_movbe(void *), p_xsave(void *), p_avx(void *), p_avx2(void *), p_fma(void *),
    p_f16c(void *), p_bmi1(void *), p_bmi2(void *), p_avx512f(void *), p_avx512bw(void *), p_avx512cd(void *), p_avx512dq(void *),
    p_avx512vl(void *), p_ud2(void *);

struct probe { const char *flag; probe_fn fn; int expect; };

static const struct probe PROBES[] = {
  {"mmx", p_mmx, 1}, {"sse", p_sse, 1}, {"sse2", p_sse2, 1}, {"pni", p_pni, 1}, {"ssse3", p_ssse3, 1}, {"sse4_1", p_sse4_1, 1},
  {"sse4_2", p_sse4_2, 1}, {"popcnt", p_popcnt, 4}, {"abm", p_abm, 31}, {"lzcnt", p_abm, 31}, {"cx16", p_cx16, 1},
  {"lahf_lm", p_lahf_lm, 1}, {"movbe", p_movbe, 0x04030201}, {"xsave", p_xsave, 1}, {"avx", p_avx, 1}, {"avx2", p_avx2, 1},
  {"fma", p_fma, 1}, {"f16c", p_f16c, 1}, {"bmi1", p_bmi1, 12}, {"bmi2", p_bmi2, 0x30}, {"avx512f", p_avx512f, 1},
  {"avx512bw", p_avx512bw, 1}, {"avx512cd", p_avx512cd, 1}, {"avx512dq", p_avx512dq, 1}, {"avx512vl", p_avx512vl, 1},
  {"ud2", p_ud2, 1},
};

static sigjmp_buf on_fault;

static void fault(int sig) {
  (void)sig;
  siglongjmp(on_fault, 1);
}

/* 1: ran with the expected result; 0: faulted or computed something else. */
static int run_probe(const struct probe *p) {
  static _Alignas(16) unsigned char cell[16] = {4, 3, 2, 1};   /* cmpxchg16b needs 16-byte alignment; movbe reads 0x01020304 */
  if (sigsetjmp(on_fault, 1)) return 0;
  return p->fn(cell) == p->expect;
}

int main(int argc, char **argv) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fault;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGILL, &sa, NULL);
  for (int i = 1; i < argc; i++) {
    const struct probe *found = NULL;
    for (size_t k = 0; k < sizeof PROBES / sizeof PROBES[0]; k++)
      if (strcmp(PROBES[k].flag, argv[i]) == 0) found = &PROBES[k];
    if (!found) printf("%s ?\n", argv[i]);
    else printf("%s %d\n", argv[i], run_probe(found));
  }
  return 0;
}
