/**
 * Builder and runner: content-addressed object cache (nothing compiles twice), candidates that
 * differ only in their symbol (one schedule at 1 and at 2 threads) compiled once and each resolved
 * under its own symbol, compile errors isolated to their candidate (and its twins), a missing
 * compiler reported as NO_COMPILER and a missing nm as MISSING_DEPENDENCY, and every failure mode
 * of a candidate (wrong answer, crash, hang) recorded while its neighbours are still measured; a
 * job the caller skips runs nothing, and a kernel is checked once per run of the same kernel; the
 * naive reference of a workload is computed once and kept on disk for later children.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkloadShape } from '../src/ir/workload.js';
import { generateKernel, type KernelSource } from '../src/codegen/kernel.js';
import { makeCandidate } from '../src/space/candidate.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy } from '../src/space/presets.js';
import { detectTarget } from '../src/toolchain/target.js';
import { buildKernels } from '../src/measure/build.js';
import { measureJobs, measureJobsSkippable, type MeasureJob } from '../src/measure/run-candidate.js';
import { isVeltairError } from '../src/errors.js';
import type { Workload } from '../src/ir/workload.js';
import type { Target } from '../src/toolchain/target.js';
import { matchesOrt, model, prepare, t as tensor } from './runtime-kernels-fixture.js';

const W: WorkloadShape = {
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin: 16,
  h: 8,
  w: 8,
  cout: 16,
  kh: 3,
  kw: 3,
  strideH: 1,
  strideW: 1,
  pads: [1, 1, 1, 1],
  dilationH: 1,
  dilationW: 1,
  groups: 1,
  oh: 8,
  ow: 8,
  epilogue: ['bias', 'relu'],
};

async function kernels(): Promise<KernelSource[]> {
  const t = await detectTarget();
  return [defaultTableRefresh(W, t, 1), parallelHeavy(W, t)].map((s) => generateKernel(makeCandidate(W, s, t)));
}

/** A copy of a kernel under a new symbol, with its source edited. */
function variant(k: KernelSource, tag: string, edit: (src: string, sym: string) => string): KernelSource {
  const symbol = `vt_k${tag.padEnd(16, '0')}`;
  return { symbol, source: edit(k.source.split(k.symbol).join(symbol), symbol) };
}

/** kernels()[0]'s schedule at 2 threads: another symbol, the same C (the thread count is a run-time argument). */
async function twinOfFirst(): Promise<KernelSource> {
  const t = await detectTarget();
  return generateKernel(makeCandidate(W, { ...defaultTableRefresh(W, t, 1), threads: 2 }, t));
}

/** Object files in a cache (beside each, its symbol list). */
const objectFiles = async (dir: string) => (await readdir(join(dir, 'objects'))).filter((f) => f.endsWith('.o'));

const withTempCache = async (fn: (dir: string) => Promise<void>) => {
  const dir = await mkdtemp(join(tmpdir(), 'veltair-test-build-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

test('objects are cached by content: a second build compiles nothing', { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const [a, b] = await kernels();
    const first = await buildKernels([a!], { cacheDir: dir });
    assert.equal(first[0]!.status, 'ok');
    const objects = await objectFiles(dir);
    assert.equal(objects.length, 1);
    const mtime = (await stat(join(dir, 'objects', objects[0]!))).mtimeMs;
    const again = await buildKernels([a!, b!], { cacheDir: dir });
    assert.deepEqual(
      again.map((r) => r.status),
      ['ok', 'ok'],
    );
    assert.equal((await objectFiles(dir)).length, 2, 'only the new candidate was compiled');
    assert.equal((await stat(join(dir, 'objects', objects[0]!))).mtimeMs, mtime);
    assert.ok(!(await readdir(join(dir, 'objects'))).some((f) => f.includes('.tmp-')), 'no temp files left');
    const third = await buildKernels([a!, b!], { cacheDir: dir });
    assert.deepEqual(
      third.map((r) => r.status === 'ok' && r.soPath),
      again.map((r) => r.status === 'ok' && r.soPath),
    );
  }),
);

test('kernels compile with a precompiled header built once per cache; a damaged one gives the same object', { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const [a, b] = await kernels();
    const built = await buildKernels([a!], { cacheDir: dir });
    assert.equal(built[0]!.status, 'ok');
    const pchDirs = await readdir(join(dir, 'pch'));
    assert.equal(pchDirs.length, 1);
    const gch = join(dir, 'pch', pchDirs[0]!, 'vt_kernel_pch.h.gch');
    const before = (await stat(gch)).mtimeMs;
    assert.equal((await buildKernels([b!], { cacheDir: dir }))[0]!.status, 'ok');
    assert.equal((await stat(gch)).mtimeMs, before, 'built once');
    // A second cache whose header is garbage: gcc reads the header text instead, and the object is byte for byte the same.
    await withTempCache(async (other) => {
      await cp(join(dir, 'pch'), join(other, 'pch'), { recursive: true });
      await writeFile(join(other, 'pch', pchDirs[0]!, 'vt_kernel_pch.h.gch'), 'not a precompiled header');
      const again = await buildKernels([a!], { cacheDir: other });
      assert.equal(again[0]!.status, 'ok');
      const [mine] = await objectFiles(other);
      assert.ok(mine !== undefined && (await objectFiles(dir)).includes(mine), 'the same object key');
      assert.deepEqual(await readFile(join(other, 'objects', mine)), await readFile(join(dir, 'objects', mine)));
    });
  }),
);

test('a candidate that does not compile is isolated from its batch', { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const [a] = await kernels();
    const broken = variant(a!, 'bad', (src) => src + '\nthis is not C;\n');
    const out = await buildKernels([a!, broken], { cacheDir: dir });
    assert.equal(out[0]!.status, 'ok');
    assert.equal(out[1]!.status, 'compile_error');
    assert.match(out[1]!.status === 'compile_error' ? out[1]!.message : '', /error/);
  }),
);

test('candidates that differ only in their symbol compile once, link once each, and each symbol runs', { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const [a, b] = await kernels();
    const a2 = await twinOfFirst();
    assert.notEqual(a2.symbol, a!.symbol);
    const compiled: number[] = [];
    const built = await buildKernels([a!, b!, a2], {
      cacheDir: dir,
      onCompiled: (_, total) => {
        compiled.push(total);
      },
    });
    assert.deepEqual(
      built.map((r) => r.status),
      ['ok', 'ok', 'ok'],
    );
    assert.equal(compiled.at(-1), 2, 'two distinct sources compiled, not three');
    assert.equal((await objectFiles(dir)).length, 2);
    const so = built.map((r) => (r.status === 'ok' ? r.soPath : ''));
    assert.equal(new Set(so).size, 1, "one shared object: the twins' object linked once, both symbols aliased");
    const jobs: MeasureJob[] = [
      { soPath: so[0]!, symbol: a!.symbol, threads: 1 },
      { soPath: so[2]!, symbol: a2.symbol, threads: 2 },
      { soPath: so[2]!, symbol: a2.symbol, threads: 1 },
      { soPath: so[1]!, symbol: b!.symbol, threads: 1 },
    ];
    const res = await measureJobs(jobs, { cacheDir: dir, cores: [0], minTimeMs: 0, minRepeats: 1, maxRepeats: 1 });
    assert.deepEqual(
      res.map((m) => m.status),
      ['ok', 'ok', 'ok', 'ok'],
      'every symbol found by dlsym and checked against the reference',
    );
  }),
);

test(
  'a shared object is keyed by the symbols it aliases: a twin built alone gets its own, with nothing compiled',
  { timeout: 300_000 },
  () =>
    withTempCache(async (dir) => {
      const [a] = await kernels();
      const a2 = await twinOfFirst();
      assert.notEqual(a2.symbol, a!.symbol);
      const [first] = await buildKernels([a!], { cacheDir: dir });
      let compiles = 0;
      const [second] = await buildKernels([a2], {
        cacheDir: dir,
        onCompiled: () => {
          compiles++;
        },
      });
      assert.equal(compiles, 0, "the twin's object was cached");
      assert.ok(first!.status === 'ok' && second!.status === 'ok');
      assert.notEqual(second.soPath, first.soPath);
      const [m] = await measureJobs([{ soPath: second.soPath, symbol: a2.symbol, threads: 1 }], {
        cacheDir: dir,
        cores: [0],
        minTimeMs: 0,
        minRepeats: 1,
        maxRepeats: 1,
      });
      assert.equal(m!.status, 'ok');
    }),
);

test(
  'a source that does not compile is a compile_error for every symbol that shares it, named by its own symbol',
  { timeout: 300_000 },
  () =>
    withTempCache(async (dir) => {
      const [a] = await kernels();
      const broken = variant(a!, 'bad', (src) => src + '\nthis is not C;\n');
      const twin = variant(broken, 'bad2', (src) => src);
      const compiled: number[] = [];
      const out = await buildKernels([a!, broken, twin], {
        cacheDir: dir,
        onCompiled: (_, total) => {
          compiled.push(total);
        },
      });
      assert.deepEqual(
        out.map((r) => r.status),
        ['ok', 'compile_error', 'compile_error'],
      );
      assert.equal(compiled.at(-1), 2);
      for (const [r, k] of [
        [out[1]!, broken],
        [out[2]!, twin],
      ] as const) {
        const message = r.status === 'compile_error' ? r.message : '';
        assert.match(message, /error/);
        assert.ok(message.includes(k.symbol) && !/vt_c[0-9a-f]{16}/.test(message), message);
      }
    }),
);

test(
  'the twins of a 3-channel stem run through the native executor (`_run_nchw`, packers) and match ONNX Runtime',
  { timeout: 300_000 },
  async () => {
    const spec = model(
      [2, 3, 11, 9],
      [2, 10],
      [
        ['w', tensor([16, 3, 3, 3], 1)],
        ['b', tensor([16], 2)],
        ['fw', tensor([10, 16], 3, 1)],
      ],
      [
        { op: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['c'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
        { op: 'Relu', inputs: ['c'], outputs: ['r'] },
        { op: 'GlobalAveragePool', inputs: ['r'], outputs: ['g'] },
        { op: 'Flatten', inputs: ['g'], outputs: ['f'] },
        { op: 'Gemm', inputs: ['f', 'fw'], outputs: ['y'], attrs: { transB: 1 } },
      ],
    );
    const twins = (w: Workload, target: Target) => [localityGreedy(w, target, 1), { ...localityGreedy(w, target, 1), threads: 2 }];
    const p = await prepare(spec, twins);
    try {
      assert.deepEqual(
        p.graph.layers.filter((l) => l.tunable).map((l) => l.op),
        ['conv2d', 'dense'],
      );
      assert.equal(
        p.plan.values[p.plan.steps[0]!.inputs[0]!]!.layout,
        'nchw',
        'the stem reads plain NCHW: its kernels run through _run_nchw',
      );
      assert.equal(new Set(p.units.flat().map((u) => u.symbol)).size, 4);
      assert.equal((await objectFiles(p.cache)).length, 2, "one object per layer: each layer's two versions are twins");
      await matchesOrt(p, spec, 7);
    } finally {
      await rm(p.cache, { recursive: true, force: true });
    }
  },
);

test('no nm is a MISSING_DEPENDENCY user error with an install hint', { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const saved = process.env['NM'];
    process.env['NM'] = '/nonexistent/veltair-nm';
    try {
      const [a] = await kernels();
      await assert.rejects(
        buildKernels([a!], { cacheDir: dir }),
        (e: unknown) => isVeltairError(e) && e.code === 'MISSING_DEPENDENCY' && /binutils/.test(e.hint),
      );
    } finally {
      if (saved === undefined) delete process.env['NM'];
      else process.env['NM'] = saved;
    }
  }),
);

test("a compile call lists its objects' symbols with one nm call, and linking them runs no nm", { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const [a, b] = await kernels();
    const log = join(dir, 'nm.log'),
      wrapper = join(dir, 'nm-wrapper');
    await writeFile(wrapper, `#!/bin/sh\necho "$#" >> '${log}'\nexec nm "$@"\n`, { mode: 0o755 });
    const saved = process.env['NM'];
    process.env['NM'] = wrapper;
    try {
      const built = await buildKernels([a!, b!, await twinOfFirst()], { cacheDir: dir, jobs: 1 });
      assert.deepEqual(
        built.map((r) => r.status),
        ['ok', 'ok', 'ok'],
      );
      const calls = (await readFile(log, 'utf8')).trim().split('\n');
      assert.equal(calls.length, 1, `one nm call for the one compile call: ${calls.join(' | ')}`);
      for (const f of await objectFiles(dir)) {
        const names = (await readFile(join(dir, 'objects', f.replace(/\.o$/, '.syms')), 'utf8')).split('\n');
        assert.ok(
          names.some((n) => /^vt_c[0-9a-f]{16}_run$/.test(n)),
          `${f}: ${names.join(' ')}`,
        );
      }
    } finally {
      if (saved === undefined) delete process.env['NM'];
      else process.env['NM'] = saved;
    }
  }),
);

test('no C compiler is a NO_COMPILER user error with an install hint', async () => {
  const saved = process.env['CC'];
  process.env['CC'] = '/nonexistent/veltair-cc';
  try {
    const [a] = await kernels();
    await assert.rejects(
      buildKernels([a!], { cacheDir: join(tmpdir(), 'veltair-unused') }),
      (e: unknown) => isVeltairError(e) && e.code === 'NO_COMPILER' && /apt-get install gcc/.test(e.hint),
    );
  } finally {
    if (saved === undefined) delete process.env['CC'];
    else process.env['CC'] = saved;
  }
});

test('wrong, crashing and hanging candidates are recorded; the others are measured', { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const [a, b] = await kernels();
    const vec = makeCandidate(W, defaultTableRefresh(W, await detectTarget(), 1), await detectTarget()).schedule.vec;
    const wrong = variant(a!, 'wrong', (src) => src.replace('  return x;\n', `  return vt${vec}_add(x, vt${vec}_set1(0.01f));\n`));
    const crash = variant(a!, 'crash', (src, sym) =>
      src.replace(new RegExp(`(void ${sym}_run\\([^)]*\\) \\{)`), '$1 *(volatile int*)0 = 1;'),
    );
    const hang = variant(a!, 'hang', (src, sym) =>
      src.replace(new RegExp(`(void ${sym}_run\\([^)]*\\) \\{)`), '$1 for (;;) __asm__ volatile("");'),
    );
    const built = await buildKernels([a!, wrong, crash, b!, hang, a!], { cacheDir: dir });
    assert.ok(built.every((r) => r.status === 'ok'));
    const so = new Map(built.map((r) => [r.symbol, r.status === 'ok' ? r.soPath : '']));
    const job = (k: KernelSource): MeasureJob => ({ soPath: so.get(k.symbol)!, symbol: k.symbol, threads: 1 });
    const events: string[] = [];
    const jobs = [job(a!), job(wrong), job(crash), job(b!), job(hang), job(a!)];
    const res = await measureJobs(jobs, {
      cacheDir: dir,
      cores: [0],
      minTimeMs: 5,
      minRepeats: 3,
      timeoutMs: 4000,
      beforeJob: (i) => {
        events.push(`start ${i}`);
      },
      afterJob: (i, m) => {
        events.push(`end ${i} ${m.status}`);
      },
    });
    assert.deepEqual(
      res.map((m) => m.status),
      ['ok', 'wrong', 'crash', 'ok', 'timeout', 'ok'],
    );
    assert.deepEqual(events, [
      'start 0',
      'end 0 ok',
      'start 1',
      'end 1 wrong',
      'start 2',
      'end 2 crash',
      'start 3',
      'end 3 ok',
      'start 4',
      'end 4 timeout',
      'start 5',
      'end 5 ok',
    ]);
    for (const m of [res[0]!, res[3]!, res[5]!]) {
      assert.ok(m.repeatsMs.length >= 3);
      assert.ok(m.medianMs! > 0 && m.maxAbsErr! <= m.tolerance!);
    }
    assert.ok(res[1]!.maxAbsErr! > res[1]!.tolerance!);
  }),
);

test('with a cache flush every call is timed alone, and the minimum repeat count holds', { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const [a] = await kernels();
    const [built] = await buildKernels([a!], { cacheDir: dir });
    assert.equal(built!.status, 'ok');
    const job = { soPath: built!.status === 'ok' ? built!.soPath : '', symbol: a!.symbol, threads: 1 };
    const [flushed, plain] = await measureJobs([job, job], { cacheDir: dir, cores: [0], minTimeMs: 0, minRepeats: 7 });
    assert.equal(flushed!.status, 'ok');
    assert.equal(plain!.repeatsMs.length, 7);
    const [f] = await measureJobs([job], { cacheDir: dir, cores: [0], minTimeMs: 0, minRepeats: 5, flushCache: true });
    assert.equal(f!.number, 1);
    assert.equal(f!.repeatsMs.length, 5);
  }),
);

test('a skipped job runs nothing; a kernel measured twice in a row is checked once, again after another kernel', { timeout: 300_000 }, () =>
  withTempCache(async (dir) => {
    const [a, b] = await kernels();
    // Right on its first call only: a second check of it fails, a reused check does not.
    const once = variant(a!, 'once', (src, sym) =>
      src.replace(new RegExp(`(void ${sym}_run\\([^)]*\\) \\{)`), '$1 static int vt_calls; if (vt_calls++ > 0) return;'),
    );
    const built = await buildKernels([once, b!], { cacheDir: dir });
    assert.ok(built.every((r) => r.status === 'ok'));
    const so = new Map(built.map((r) => [r.symbol, r.status === 'ok' ? r.soPath : '']));
    const job = (k: KernelSource): MeasureJob => ({ soPath: so.get(k.symbol)!, symbol: k.symbol, threads: 1 });
    const events: string[] = [];
    const res = await measureJobsSkippable([job(once), job(b!), job(once), job(once), job(b!)], {
      cacheDir: dir,
      cores: [0],
      minTimeMs: 2,
      minRepeats: 2,
      skipJob: (i) => i === 1,
      beforeJob: (i) => {
        events.push(`start ${i}`);
      },
      afterJob: (i, m) => {
        events.push(`end ${i} ${m.status}`);
      },
    });
    assert.equal(res[1], undefined, 'skipped');
    assert.deepEqual(
      res.map((m) => m?.status),
      ['ok', undefined, 'ok', 'ok', 'ok'],
      "job 2 reuses job 0's check, job 3 job 2's",
    );
    assert.deepEqual(
      events,
      ['start 0', 'end 0 ok', 'start 2', 'end 2 ok', 'start 3', 'end 3 ok', 'start 4', 'end 4 ok'],
      'no hooks for a skipped job',
    );
    const again = await measureJobs([job(once), job(b!), job(once)], { cacheDir: dir, cores: [0], minTimeMs: 2, minRepeats: 2 });
    assert.deepEqual(
      again.map((m) => m.status),
      ['ok', 'ok', 'wrong'],
      'after another kernel, the check runs again',
    );
    const split = await measureJobs([job(once), job(b!), job(once)], {
      cacheDir: dir,
      cores: [0],
      minTimeMs: 2,
      minRepeats: 2,
      jobsPerChild: 2,
    });
    assert.deepEqual(
      split.map((m) => m.status),
      ['ok', 'ok', 'ok'],
      'two jobs a child: the third runs in a new child, where its check is its first call',
    );
  }),
);

/** FNV-1a 64 of the bytes, as harness.c checks a stored reference's floats. */
function fnv1a(bytes: Uint8Array): bigint {
  let h = 1469598103934665603n;
  for (const b of bytes) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 1099511628211n);
  return h;
}

test(
  'a slow reference is computed once and read back by later children; a torn, damaged or foreign file is a miss, ' +
    'and a stored reference never condemns a kernel alone',
  { timeout: 300_000 },
  () =>
    withTempCache(async (dir) => {
      // 115 M multiply-adds: the naive reference takes far longer than the 20 ms below which it is not cached.
      const big: WorkloadShape = { ...W, cin: 64, cout: 64, h: 56, w: 56, oh: 56, ow: 56 };
      const t = await detectTarget();
      const k = generateKernel(makeCandidate(big, defaultTableRefresh(big, t, 1), t));
      const [built] = await buildKernels([k], { cacheDir: dir });
      assert.equal(built!.status, 'ok');
      const job: MeasureJob = { soPath: built!.status === 'ok' ? built!.soPath : '', symbol: k.symbol, threads: 1 };
      const once = async () => (await measureJobs([job], { cacheDir: dir, cores: [0], minTimeMs: 0, minRepeats: 1, maxRepeats: 1 }))[0]!;
      const first = await once();
      assert.equal(first.status, 'ok');
      assert.equal(first.referenceCached, false, 'the first child computes the reference');
      const [harnessDir] = await readdir(join(dir, 'refs'));
      const files = await readdir(join(dir, 'refs', harnessDir!));
      assert.equal(files.length, 1, 'one reference written, no temp file left');
      const file = join(dir, 'refs', harnessDir!, files[0]!);
      const whole = await readFile(file);
      assert.deepEqual(
        { status: (await once()).status, cached: (await once()).referenceCached },
        { status: 'ok', cached: true },
        'later children read it',
      );

      const headerBytes = 288,
        sumAt = 24,
        cinAt = 32 + 2 * 4;
      const zeros = Buffer.alloc(whole.length - headerBytes);
      // damaged: zeroed floats behind the header, which no longer sums them
      await writeFile(file, Buffer.concat([whole.subarray(0, headerBytes), zeros]));
      assert.deepEqual(await once().then((m) => [m.status, m.referenceCached]), ['ok', false], 'a damaged file is recomputed');
      assert.deepEqual(await readFile(file), whole, 'and written whole again');
      // forged: zeroed floats with a checksum that matches them; the kernel fails against them, then passes against a fresh reference
      const forged = Buffer.concat([whole.subarray(0, headerBytes), zeros]);
      forged.writeBigUInt64LE(fnv1a(zeros), sumAt);
      await writeFile(file, forged);
      assert.deepEqual(
        await once().then((m) => [m.status, m.referenceCached]),
        ['ok', false],
        'a stored reference alone never makes a kernel wrong',
      );
      await writeFile(file, whole.subarray(0, headerBytes + 100));
      assert.deepEqual(await once().then((m) => [m.status, m.referenceCached]), ['ok', false], 'a torn file is recomputed');
      assert.deepEqual(await readFile(file), whole, 'and written whole again');
      const foreign = Buffer.from(whole);
      foreign.writeInt32LE(foreign.readInt32LE(cinAt) + 1, cinAt);
      await writeFile(file, foreign);
      assert.deepEqual(
        await once().then((m) => [m.status, m.referenceCached]),
        ['ok', false],
        "a file whose key differs is another workload's",
      );
    }),
);
