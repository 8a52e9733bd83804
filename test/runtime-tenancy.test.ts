/**
 * Sharing one CPU between models in one process (the runtime side of `veltair serve`): sessions of
 * two different models run at once on disjoint core sets — each pinned where it was told (the CPUs
 * its OpenMP team reports) and their native execution intervals overlapping, i.e. neither waited
 * for the other — with the event loop free meanwhile and outputs equal to a quiet run's. An
 * inference runs as blocks on different core sets and versions and still gives the same result;
 * inferences on one session are queued (their intervals never overlap), a replica of the session
 * runs beside it; misuse is a clear error. Speed itself is measured by `src/bench/tenancy.ts`,
 * never asserted here.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeModel, type ModelSpec } from '../src/onnx/encode.js';
import type { Tensor } from '../src/onnx/model.js';
import { loadBundle, setBlockNice, type Session } from '../src/runtime/session.js';
import { SCHED_BATCH, SCHED_OTHER, threadSched } from './thread-sched.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { isVeltairError } from '../src/errors.js';
import { compileFixture } from './compile-fixture.js';
import { seeded } from './runtime-harness.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-tenancy-'));
after(() => rmSync(root, { recursive: true, force: true }));

const weight = (dims: number[], seed: number): Tensor => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    -0.1,
    0.1,
  ),
});

/** `depth` 3×3 convs of `width` channels on 40×40 with ReLU, then global pooling: tens of ms per run. */
function convChain(width: number, depth: number, seed: number): ModelSpec {
  const nodes: ModelSpec['nodes'][number][] = [];
  const inits: [string, Tensor][] = [];
  let x = 'x';
  for (let i = 0; i < depth; i++) {
    inits.push([`w${i}`, weight([width, i === 0 ? 3 : width, 3, 3], seed + i)], [`b${i}`, weight([width], seed + 100 + i)]);
    nodes.push({ op: 'Conv', inputs: [x, `w${i}`, `b${i}`], outputs: [`c${i}`], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } });
    nodes.push({ op: 'Relu', inputs: [`c${i}`], outputs: [`r${i}`] });
    x = `r${i}`;
  }
  nodes.push({ op: 'GlobalAveragePool', inputs: [x], outputs: ['y'] });
  return {
    inputs: [{ name: 'x', dtype: 'float32', shape: [1, 3, 40, 40] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [1, width, 1, 1] }],
    initializers: inits,
    nodes,
  };
}

async function compile(name: string, spec: ModelSpec): Promise<string> {
  const model = join(root, `${name}.onnx`);
  writeFileSync(model, encodeModel(spec));
  const bundle = join(root, `${name}.bundle`);
  await compileFixture(model, {
    output: bundle,
    trials: 1,
    levels: [0],
    maxVersions: 1,
    threads: [1, 2],
    profileThreads: [],
    db: join(root, 'db'),
  });
  return bundle;
}

let a: Session, b: Session;
const feedA = { x: seeded(3 * 40 * 40, 11) };
const feedB = { x: seeded(3 * 40 * 40, 12) };
let quietA: Float32Array, quietB: Float32Array;

before(
  async () => {
    const [ba, bb] = [await compile('a', convChain(48, 6, 1)), await compile('b', convChain(32, 8, 50))];
    a = await loadBundle(ba);
    b = await loadBundle(bb);
    quietA = a.runSync(feedA)['y']!.data as Float32Array;
    quietB = b.runSync(feedB)['y']!.data as Float32Array;
  },
  { timeout: 600_000 },
);
after(() => {
  a?.close();
  b?.close();
});

const overlap = (x: { startNs: number; endNs: number }, y: { startNs: number; endNs: number }) =>
  x.startNs < y.endNs && y.startNs < x.endNs;

async function wholeBlock(s: Session, feeds: Record<string, Float32Array>, cores: number[]) {
  const inf = await s.begin(feeds);
  const r = await inf.block(s.steps.length, { cores });
  return { ...r, y: inf.finish()['y']!.data as Float32Array };
}

test(
  'two models on disjoint cores run at the same time, each pinned to its own core, with the event loop free',
  { timeout: 120_000 },
  async () => {
    // On a one-core host both models share that core: results and pinning are still checked, overlap cannot be.
    const cores = availableCores().length >= 2 ? availableCores() : [availableCores()[0]!, availableCores()[0]!];
    const twoCores = cores[0] !== cores[1];
    let ticks = 0;
    const timer = setInterval(() => {
      ticks++;
    }, 1);
    try {
      const rounds = 5;
      const pairs = await Promise.all([
        (async () => {
          const out = [];
          for (let i = 0; i < rounds; i++) out.push(await wholeBlock(a, feedA, [cores[0]!]));
          return out;
        })(),
        (async () => {
          const out = [];
          for (let i = 0; i < rounds; i++) out.push(await wholeBlock(b, feedB, [cores[1]!]));
          return out;
        })(),
      ]);
      const [runsA, runsB] = pairs;
      for (const r of runsA) {
        assert.deepEqual(r.cpus, [cores[0]]);
        assert.deepEqual(r.y, quietA, 'model A, run beside B, gives the quiet result');
      }
      for (const r of runsB) {
        assert.deepEqual(r.cpus, [cores[1]]);
        assert.deepEqual(r.y, quietB, 'model B, run beside A, gives the quiet result');
      }
      const overlapping = runsA.filter((x) => runsB.some((y) => overlap(x, y))).length;
      if (twoCores)
        assert.ok(overlapping > 0, 'some run of A overlapped some run of B in time: they ran in parallel, not one after the other');
      assert.ok(ticks > 0, 'the event loop kept running while both models ran');
    } finally {
      clearInterval(timer);
    }
  },
);

test('one inference as blocks on different core sets and versions gives the whole-run result', { timeout: 60_000 }, async () => {
  const cores = availableCores().slice(0, 2);
  if (cores.length < 2) cores.push(cores[0]!); // a one-core host: the "other" core set is the same core
  const n = a.steps.length;
  assert.ok(n >= 3, `the chain has ${n} steps`);
  const cut1 = Math.floor(n / 3),
    cut2 = Math.floor((2 * n) / 3);
  const inf = await a.begin(feedA);
  const r1 = await inf.block(cut1, { cores: [cores[0]!], level: 0 });
  assert.equal(inf.next, cut1);
  const r2 = await inf.block(cut2, { cores: [cores[1]!], versions: a.versionsForLevel(0) });
  const r3 = await inf.block(n, { cores: [...new Set(cores)] });
  assert.deepEqual([r1.from, r1.to, r2.from, r2.to, r3.from, r3.to], [0, cut1, cut1, cut2, cut2, n]);
  assert.deepEqual(r1.cpus, [cores[0]]);
  assert.deepEqual(r2.cpus, [cores[1]]);
  assert.deepEqual([...new Set(r3.cpus)].sort(), [...new Set(cores)].sort(), 'a two-core block has one team thread on each granted core');
  const y = inf.finish()['y']!.data as Float32Array;
  const want = a.runSync(feedA)['y']!.data as Float32Array;
  for (let i = 0; i < y.length; i++) assert.ok(Math.abs(y[i]! - want[i]!) <= 1e-5 * Math.max(1, Math.abs(want[i]!)), `y[${i}]`);
  // Blocks changed the steps' thread counts; a whole run restores the session's own.
  assert.deepEqual((await a.run(feedA))['y']!.data, quietA);
});

test(
  'inferences on one session are queued, never interleaved; a replica runs beside it on the same weights',
  { timeout: 60_000 },
  async () => {
    const [c0, c1 = c0] = availableCores();
    const queued = await Promise.all([wholeBlock(a, feedA, [c0!]), wholeBlock(a, { x: seeded(3 * 40 * 40, 99) }, [c1!])]);
    assert.ok(!overlap(queued[0]!, queued[1]!), 'two inferences of one session never share its arena in time');
    assert.deepEqual(queued[0]!.y, quietA);
    const twin = a.replicate();
    try {
      assert.deepEqual(twin.versions, a.versions);
      const both = await Promise.all([wholeBlock(a, feedA, [c0!]), wholeBlock(twin, feedA, [c1!])]);
      assert.deepEqual(both[0]!.y, quietA);
      assert.deepEqual(both[1]!.y, quietA, 'the replica computes the same model');
    } finally {
      twin.close();
    }
  },
);

test('misuse of blocks is a clear error and leaves the session usable', { timeout: 60_000 }, async () => {
  const bad = (pattern: RegExp) => (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && pattern.test(e.message);
  const inf = await b.begin(feedB);
  await assert.rejects(inf.block(0, { cores: [0] }), bad(/block end/));
  await assert.rejects(inf.block(b.steps.length + 1, { cores: [0] }), bad(/block end/));
  await assert.rejects(inf.block(1, { cores: [] }), bad(/cores/));
  await assert.rejects(inf.block(1, { cores: [0, 0] }), bad(/distinct/));
  assert.throws(() => inf.finish(), bad(/has run 0 of/));
  const running = inf.block(b.steps.length, { cores: [0] });
  assert.throws(() => b.runSync(feedB), bad(/running a block/), 'a blocking run while a block runs is refused');
  await running;
  assert.deepEqual(inf.finish()['y']!.data, quietB);
  assert.throws(() => inf.finish(), bad(/finished/));
  assert.deepEqual((await b.run(feedB))['y']!.data, quietB, 'the session is usable afterwards');
});

test('closing a session while a block runs lets the block finish, then refuses further use', { timeout: 60_000 }, async () => {
  const s = a.replicate();
  const inf = await s.begin(feedA);
  const running = inf.block(s.steps.length, { cores: [availableCores()[0]!] });
  s.close();
  await running;
  await assert.rejects(s.run(feedA), (e: unknown) => isVeltairError(e) && /closed/.test(e.message));
});

// Last in this file: nice cannot be lowered again without privilege, and it holds for every later block.
test(
  "setBlockNice: the threads that run blocks take the nice value and the batch policy, the event loop's thread keeps its own",
  { timeout: 60_000 },
  async () => {
    const main = threadSched().find((t) => t.tid === process.pid)!;
    const blockNice = Math.min(19, main.nice + 7);
    const before = threadSched().filter((t) => t.nice === blockNice || t.policy === SCHED_BATCH);
    assert.equal(before.length, 0, `no thread runs at nice ${blockNice} or as a batch thread yet`);
    await setBlockNice(blockNice);
    const s = a.replicate();
    const inf = await s.begin(feedA);
    const cores = availableCores().slice(0, 2);
    await inf.block(s.steps.length, { cores });
    inf.finish();
    const threads = threadSched();
    const niced = threads.filter((t) => t.nice === blockNice);
    assert.ok(
      niced.length >= cores.length,
      `every thread of the ${cores.length}-core block runs at nice ${blockNice} (${niced.length} do)`,
    );
    assert.ok(
      niced.every((t) => t.policy === SCHED_BATCH),
      'each block thread is a batch thread, so waking it never preempts the thread that handed it the block',
    );
    assert.deepEqual(
      threads.find((t) => t.tid === process.pid),
      main,
      "the event loop's thread is untouched",
    );
    assert.equal(main.policy, SCHED_OTHER);
    await assert.rejects(setBlockNice(20), /0 to 19/);
    s.close();
  },
);
