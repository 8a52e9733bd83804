/**
 * The native code under AddressSanitizer and UndefinedBehaviorSanitizer, inside
 * `npm test`: every native artifact — runtime addon and ops, generated kernels, harness, packer —
 * is rebuilt with VELTAIR_SANITIZE=address,undefined (src/toolchain/flags.ts: -fsanitize=address,
 * undefined,float-cast-overflow, every report fatal) into a private cache, and these test files
 * run against those builds in a child `node --test`:
 *   - onnx-node-run: ONNX's backend node tests through the runtime (its ops, the executor), and
 *     its conv/gemm/matmul cases compiled by `veltair compile` (generated kernels measured by the
 *     sanitized harness, packed by the sanitized packer, run by the sanitized runtime);
 *   - runtime-e2e: a small conv → pool → dense → softmax model on generated kernels (the stem's
 *     workspace included), every version pair;
 *   - runtime-native-checks: the executor's bounds refusals and Cast / fill saturation.
 * Node itself is not instrumented, so the ASan runtime is preloaded (LD_PRELOAD of gcc's libasan,
 * which must come first in the process); the compiler is run without it (compiler.ts). Why not a
 * standalone C driver: the preload lets the very tests that pin the runtime's behaviour run
 * unchanged over the instrumented code, instead of a second harness that could drift from them.
 * A control first proves the sanitizer is live here: a kernel writing one float past its output
 * must be stopped by ASan in the sanitized harness.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { execa } from 'execa';

const root = mkdtempSync(join(tmpdir(), 'veltair-sanitize-'));
after(() => rmSync(root, { recursive: true, force: true }));
const SANITIZE = 'address,undefined';
const FILES = ['onnx-node-run', 'runtime-e2e', 'runtime-native-checks'].map((f) => resolve('dist/test', `${f}.test.js`));

async function libasan(): Promise<string> {
  const { stdout } = await execa(process.env['CC']?.split(/\s+/)[0] || 'cc', ['-print-file-name=libasan.so']);
  assert.ok(stdout.startsWith('/'), `the C compiler ships no ASan runtime (${stdout}); install libasan (gcc's libasan8)`);
  return stdout.trim();
}

function sanitizerEnv(preload: string): NodeJS.ProcessEnv {
  // NODE_TEST_CONTEXT tells a node --test that it is one of this runner's children: the nested run must not see it.
  const { NODE_TEST_CONTEXT: _context, ...env } = process.env;
  return {
    ...env,
    VELTAIR_SANITIZE: SANITIZE,
    VELTAIR_CACHE_DIR: join(root, 'cache'),
    LD_PRELOAD: preload,
    // Node and V8 keep memory to the end on purpose: leaks are not what this run looks for.
    ASAN_OPTIONS: 'detect_leaks=0:abort_on_error=1:print_summary=1',
    UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
  };
}

test('control: the sanitized harness stops a kernel that writes past its output', { timeout: 120_000 }, async () => {
  process.env['VELTAIR_SANITIZE'] = SANITIZE;
  try {
    const { ensureHarness } = await import('../src/measure/run-candidate.js');
    const { runCompiler } = await import('../src/toolchain/compiler.js');
    const { flagsFor, kernelLinkFlags } = await import('../src/toolchain/flags.js');
    const { headerSnapshot, writeSources } = await import('../src/toolchain/headers.js');
    const harness = await ensureHarness(join(root, 'cache'));
    await writeSources(root, (await headerSnapshot()).files);
    const sym = 'vt_k00000000000000bd';
    writeFileSync(
      join(root, 'bad.c'),
      [
        '#include "veltair_kernel.h"',
        `static const vt_desc d = { .abi_version = VT_ABI_VERSION, .op = VT_OP_DENSE, .vec = 1, .batch = 1, .m = 1, .k = 4, .nn = 4,`,
        '  .input_floats = 4, .weight_floats = 16, .output_floats = 4, .bias_floats = 4, .chanmul_floats = 4 };',
        `const vt_desc* ${sym}_desc(void) { return &d; }`,
        `void ${sym}_pack_input(const float* a, float* b) { for (int i = 0; i < 4; i++) b[i] = a[i]; }`,
        `void ${sym}_pack_weight(const float* a, float* b) { for (int i = 0; i < 16; i++) b[i] = a[i]; }`,
        `void ${sym}_pack_output(const float* a, float* b) { for (int i = 0; i < 4; i++) b[i] = a[i]; }`,
        `void ${sym}_unpack_output(const float* a, float* b) { for (int i = 0; i < 4; i++) b[i] = a[i]; }`,
        `void ${sym}_run(const float* in, const float* w, const float* bias, const float* res, const float* gate, const float* prm,`,
        '    float* out, void* ws, int n) { (void)bias; (void)res; (void)gate; (void)prm; (void)ws; (void)n;',
        '  for (int j = 0; j < 4; j++) { float s = 0; for (int k = 0; k < 4; k++) s += in[k] * w[k * 4 + j]; out[j] = s; }',
        '  out[16] = 0; } /* 64 bytes past the 16-byte output the harness allocated (rounded up to 64) */',
        '',
      ].join('\n'),
    );
    const so = join(root, 'bad.so');
    await runCompiler([...flagsFor('kernel'), ...kernelLinkFlags(), '-I', root, '-o', so, join(root, 'bad.c')]);
    const r = await execa(harness, ['--min-time-ms', '0', '--job', so, sym, '1'], {
      reject: false,
      env: sanitizerEnv(await libasan()),
      extendEnv: false,
    });
    assert.notEqual(r.exitCode, 0, 'the harness did not finish normally');
    assert.match(r.stderr, /AddressSanitizer: heap-buffer-overflow/, r.stderr.slice(0, 2000));
  } finally {
    delete process.env['VELTAIR_SANITIZE'];
  }
});

test(
  'the runtime, the ONNX node tests and generated kernels run clean under -fsanitize=address,undefined',
  { timeout: 900_000 },
  async (t) => {
    const r = await execa(process.execPath, ['--test', '--test-concurrency=1', ...FILES], {
      reject: false,
      env: sanitizerEnv(await libasan()),
      extendEnv: false,
      all: true,
    });
    const out = r.all ?? '';
    const reports = out
      .split('\n')
      .filter((l) => /ERROR: AddressSanitizer|runtime error:|SUMMARY: (Address|UndefinedBehavior)Sanitizer/.test(l));
    t.diagnostic(
      out
        .split('\n')
        .filter((l) => /^# (tests|pass|fail|ONNX node tests run)/.test(l))
        .join(' | '),
    );
    assert.deepEqual(reports, [], `sanitizer reports:\n${reports.join('\n')}`);
    assert.equal(
      r.exitCode,
      0,
      out
        .split('\n')
        .filter((l) => /^not ok|error:/.test(l))
        .slice(0, 20)
        .join('\n'),
    );
    assert.match(out, /^# fail 0$/m);
  },
);
