/**
 * The toolchain room: CC with a launcher is run as an argument array, shell syntax in CC is refused
 * with one clear error, the generated vt_abi.h states exactly the TypeScript tables (checked by
 * compiling a C program that prints every enumerator), the runtime addon reports the ABI it was
 * built with, and the runtime's ops and the kernel headers compile at every ISA level veltair
 * targets (scalar x86-64, AVX2 x86-64-v3, AVX-512 x86-64-v4), whatever this host has.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { execa } from 'execa';
import { isVeltairError } from '../src/errors.js';
import {
  ABI_DIGEST,
  KERNEL_ABI_VERSION,
  BINARY_ENUM,
  cEnumerator,
  codesOf,
  EPILOGUE_ENUM,
  KERNEL_OP_ENUM,
  KIND_ENUM,
  LAYOUT_ENUM,
  POOL_ENUM,
  REDUCE_ENUM,
  RUNTIME_OP_ENUM,
  UNARY_ENUM,
} from '../src/toolchain/abi.js';
import { parseCacheSize } from '../src/toolchain/caches.js';
import { compiler, runCompiler } from '../src/toolchain/compiler.js';
import { headerSnapshot, writeSources } from '../src/toolchain/headers.js';
import { nativeDir } from '../src/toolchain/paths.js';
import { loadRuntimeAddon } from '../src/runtime/native-bridge.js';
import { sparseAddonSources } from '../src/sparse-head/native-build.js';

const dir = mkdtempSync(join(tmpdir(), 'veltair-toolchain-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('CC may carry a launcher: split into an argument array, never given to a shell', async () => {
  assert.deepEqual(compiler({ CC: 'ccache gcc' }), { command: 'ccache', leadingArgs: ['gcc'], display: 'ccache gcc' });
  assert.deepEqual(compiler({}), { command: 'cc', leadingArgs: [], display: 'cc' });
  // `env` is a launcher every machine has: the compile really goes through it.
  writeFileSync(join(dir, 'ok.c'), 'int main(void) { return 0; }\n');
  await runCompiler(['-o', join(dir, 'ok'), join(dir, 'ok.c')], {}, compiler({ CC: 'env cc' }));
  assert.equal((await execa(join(dir, 'ok'))).exitCode, 0);
});

test('shell syntax in CC and a missing compiler are one clear NO_COMPILER error each', async () => {
  for (const cc of ['cc; rm -rf /', 'cc $(id)', 'gcc "-O2"']) {
    assert.throws(
      () => compiler({ CC: cc }),
      (e: unknown) => isVeltairError(e) && e.code === 'NO_COMPILER' && e.message.includes('CC='),
    );
  }
  await assert.rejects(
    runCompiler(['--version'], {}, compiler({ CC: 'no-such-compiler-veltair' })),
    (e: unknown) => isVeltairError(e) && e.code === 'NO_COMPILER' && e.message.includes('no-such-compiler-veltair'),
  );
});

test('cache sizes parse as sysfs writes them', () => {
  assert.equal(parseCacheSize('48K'), 48 * 1024);
  assert.equal(parseCacheSize('32768K\n'), 32 * 1024 * 1024);
  assert.equal(parseCacheSize('1M'), 1024 * 1024);
  assert.equal(parseCacheSize('0K'), undefined);
  assert.equal(parseCacheSize('unknown'), undefined);
});

test('the generated vt_abi.h holds exactly the TypeScript ABI tables', async () => {
  const enums = [KERNEL_OP_ENUM, EPILOGUE_ENUM, RUNTIME_OP_ENUM, UNARY_ENUM, BINARY_ENUM, REDUCE_ENUM, KIND_ENUM, LAYOUT_ENUM, POOL_ENUM];
  const prints = enums.flatMap((e) =>
    e.names.map((n: string) => `  printf("${e.cName} ${n} %d\\n", (int)${cEnumerator(e as never, n as never)});`),
  );
  const src = [
    '#include <stdio.h>',
    '#include "veltair_kernel.h"',
    'int main(void) {',
    '  printf("digest %s\\n", VT_ABI_DIGEST);',
    '  printf("abi %d\\n", VT_ABI_VERSION);',
    ...prints,
    '  return 0;',
    '}',
    '',
  ].join('\n');
  await writeSources(dir, (await headerSnapshot()).files);
  writeFileSync(join(dir, 'abi-print.c'), src);
  await runCompiler(['-I', dir, '-o', join(dir, 'abi-print'), join(dir, 'abi-print.c')]);
  const lines = (await execa(join(dir, 'abi-print'))).stdout.split('\n');
  assert.equal(lines[0], `digest ${ABI_DIGEST}`);
  assert.equal(lines[1], `abi ${KERNEL_ABI_VERSION}`);
  const expected = enums.flatMap((e) =>
    Object.entries(codesOf(e as never) as Record<string, number>).map(([n, c]) => `${e.cName} ${n} ${c}`),
  );
  assert.deepEqual(lines.slice(2), expected);
});

test("the runtime addon reports the ABI digest it was built with, and it is this veltair's", async () => {
  const addon = await loadRuntimeAddon();
  assert.equal(addon.abiDigest, ABI_DIGEST);
});

test('the runtime ops and the kernel headers compile at every ISA level (scalar, AVX2, AVX-512)', { timeout: 180_000 }, async () => {
  const runtime = join(nativeDir(), 'runtime');
  const sources = readdirSync(runtime)
    .filter((f) => f.endsWith('.c') && f !== 'addon.c')
    .map((f) => join(runtime, f));
  for (const march of ['x86-64', 'x86-64-v3', 'x86-64-v4']) {
    await runCompiler([`-march=${march}`, '-O1', '-fopenmp', '-std=gnu11', '-fsyntax-only', '-I', dir, '-I', runtime, ...sources]);
  }
});

test('each sparse add-on compiles the N-API helpers, the shared core and its own folder only', async () => {
  const names = async (kind: 'train' | 'head') => (await sparseAddonSources(kind)).map((s) => s.name);
  const [train, head] = await Promise.all([names('train'), names('head')]);
  for (const [mine, other, list] of [
    ['train', 'head', train],
    ['head', 'train', head],
  ] as const) {
    assert.ok(
      list.includes('napi/vt_napi.h') && list.includes('sparse/vs.h') && list.includes('sparse/hash.c'),
      `${mine}: ${list.join(' ')}`,
    );
    assert.ok(list.includes(`sparse/${mine}/addon.c`), `${mine}: ${list.join(' ')}`);
    assert.ok(!list.some((n) => n.startsWith(`sparse/${other}/`)), `${mine} compiles ${other}'s files: ${list.join(' ')}`);
  }
  assert.ok(head.includes('sparse/head/infer.c') && train.includes('sparse/train/train.c'));
});
