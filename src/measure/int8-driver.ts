/**
 * Timing INT8 candidates: every candidate of one layer compiled by the system cc into one driver
 * program, and each candidate run in its own child process with a timeout (a crash or a hang is a
 * failed candidate, not a dead tuner), one at a time:
 *
 *   driver DIR INDEX THREADS MIN_MS COMP_OFFSET MULT_OFFSET CORES
 *
 * (CORES: a comma list the process pins itself to before its OpenMP team starts, or '-': the cores
 * the FP32 harness would give a kernel of that many threads, so an interference co-runner
 * (interference/bank.ts) has the others)
 * reads DIR/in.bin (NHWC u8) and DIR/c<INDEX>.bin (the candidate's packed w | comp | mult, int8-pack.ts),
 * makes one warm-up call and writes its output to DIR/out<INDEX>.bin (the caller checks it against
 * the integer reference before any time counts), then times repeats until MIN_MS have passed (at
 * least three): each repeat is a batch of calls sized from the warm-up to last about a millisecond,
 * and prints each repeat's milliseconds per call. The FP32 harness (measure/harness) calls FP32
 * kernels through their descriptors, so INT8 kernels get this driver.
 */
import { execa } from 'execa';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { int8OutType, type Int8KernelSource } from '../codegen/int8-kernel.js';
import type { Int8Blob } from '../codegen/int8-pack.js';
import type { Int8Problem } from '../space/int8-problem.js';
import { runCompiler } from '../toolchain/compiler.js';

export interface Int8Timing {
  readonly status: 'ok' | 'crash' | 'timeout';
  /** The warm-up call's output bytes (NHWC). */
  readonly output?: Uint8Array;
  readonly repeatsMs: readonly number[];
  readonly message?: string;
}

function driverSource(p: Int8Problem, kernels: readonly Int8KernelSource[], outBytes: number): string {
  const maxWs = Math.max(64, ...kernels.map((k) => k.workspaceBytes));
  const cases = kernels.map((k, i) => `    case ${i}: run = (qrun)${k.symbol}_run; break;`);
  return [
    // before any header: CPU_SET needs it from the first include on
    '#define _GNU_SOURCE',
    '#include <sched.h>',
    ...kernels.map((k) => k.source),
    '#include <stdio.h>',
    '#include <stdlib.h>',
    '#include <time.h>',
    `typedef void (*qrun)(const uint8_t*, const int8_t*, const int32_t*, const float*, ${int8OutType(p)}*, void*, int);`,
    'static void* slurp(const char* dir, const char* name) {',
    '  char path[4096]; snprintf(path, sizeof path, "%s/%s", dir, name);',
    '  FILE* f = fopen(path, "rb"); if (!f) { perror(path); exit(3); }',
    '  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);',
    '  void* p = aligned_alloc(64, (n + 64) / 64 * 64); if (n > 0 && fread(p, 1, n, f) != (size_t)n) exit(4); fclose(f); return p;',
    '}',
    'static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }',
    'int main(int argc, char** argv) {',
    '  if (argc != 8) return 2;',
    "  if (argv[7][0] != '-') {",
    '    cpu_set_t set; CPU_ZERO(&set);',
    "    for (char* c = argv[7]; *c; ) { CPU_SET(atoi(c), &set); while (*c && *c != ',') c++; if (*c) c++; }",
    '    if (sched_setaffinity(0, sizeof set, &set) != 0) { perror("sched_setaffinity"); return 6; }',
    '  }',
    '  const char* dir = argv[1]; const int idx = atoi(argv[2]), threads = atoi(argv[3]);',
    '  const double min_ms = atof(argv[4]); const long comp_off = atol(argv[5]), mult_off = atol(argv[6]);',
    '  char name[64]; snprintf(name, sizeof name, "c%d.bin", idx);',
    '  const uint8_t* in = slurp(dir, "in.bin"); const uint8_t* blob = slurp(dir, name);',
    `  ${int8OutType(p)}* out = aligned_alloc(64, ${Math.ceil(outBytes / 64) * 64 + 64}); void* ws = aligned_alloc(64, ${maxWs});`,
    '  qrun run = 0;',
    '  switch (idx) {',
    ...cases,
    '    default: return 2;',
    '  }',
    '  const int8_t* w = (const int8_t*)blob; const int32_t* comp = (const int32_t*)(blob + comp_off);',
    '  const float* mult = (const float*)(blob + mult_off);',
    '  double t0 = now_ms();',
    '  run(in, w, comp, mult, out, ws, threads);',
    '  const double first = now_ms() - t0;',
    '  snprintf(name, sizeof name, "%s/out%d.bin", dir, idx);',
    `  FILE* f = fopen(name, "wb"); if (!f || fwrite(out, 1, ${outBytes}, f) != ${outBytes}) return 5; fclose(f);`,
    '  long batch = first > 0 ? (long)(1.0 / first) : 1000; if (batch < 1) batch = 1; if (batch > 100000) batch = 100000;',
    '  const double start = now_ms(); int reps = 0;',
    '  while ((now_ms() - start < min_ms || reps < 3) && reps < 10000) {',
    '    t0 = now_ms();',
    '    for (long b = 0; b < batch; b++) run(in, w, comp, mult, out, ws, threads);',
    '    printf("%.9f\\n", (now_ms() - t0) / batch); reps++;',
    '  }',
    '  return 0;',
    '}',
  ].join('\n');
}

/** Compile a layer's candidates into one driver (the target's kernel flags; each kernel's own target pragma does the rest). */
export async function buildInt8Driver(
  dir: string,
  p: Int8Problem,
  kernels: readonly Int8KernelSource[],
  outBytes: number,
  cflags: readonly string[],
): Promise<string> {
  const src = join(dir, 'driver.c'),
    exe = join(dir, 'driver');
  await writeFile(src, driverSource(p, kernels, outBytes));
  const flags = cflags.filter((f) => f !== '-shared' && f !== '-fPIC');
  await runCompiler([...flags, '-o', exe, src, '-lm']);
  return exe;
}

/** Time candidate `index` (its packed blob written first) in a child process. */
export async function timeInt8Candidate(
  exe: string,
  dir: string,
  index: number,
  blob: Int8Blob,
  o: { threads: number; minTimeMs: number; timeoutMs: number; cores?: readonly number[] },
): Promise<Int8Timing> {
  await writeFile(join(dir, `c${index}.bin`), blob.bytes);
  const cores = o.cores && o.cores.length > 0 ? o.cores.join(',') : '-';
  const args = [dir, String(index), String(o.threads), String(o.minTimeMs), String(blob.compOffset), String(blob.multOffset), cores];
  const r = await execa(exe, args, { timeout: o.timeoutMs, reject: false });
  if (r.timedOut) return { status: 'timeout', repeatsMs: [], message: `no result in ${o.timeoutMs} ms` };
  if (r.exitCode !== 0) return { status: 'crash', repeatsMs: [], message: `exit ${r.exitCode ?? r.signal}: ${r.stderr.slice(0, 200)}` };
  const output = new Uint8Array(await readFile(join(dir, `out${index}.bin`)));
  const repeatsMs = r.stdout
    .split('\n')
    .filter((x) => x !== '')
    .map(Number);
  return { status: 'ok', output, repeatsMs };
}
