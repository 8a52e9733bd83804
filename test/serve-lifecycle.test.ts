/**
 * The server as a process: `veltair serve` prints where it listens and binds loopback by default;
 * SIGTERM while a request is in flight answers that request, then exits 0; a soak of mixed valid
 * and invalid requests from several clients at once (bounded in time) loses none and mixes none
 * up — every answer is checked against ONNX Runtime's for its own input; the ONNX Runtime
 * baseline behind the same front end gives the same answers; bad start-up flags are one clear error.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { execa, type ResultPromise } from 'execa';
import { assertOneClearError, BIN, veltair } from './compile-fixture.js';
import { seeded } from './runtime-harness.js';
import { assertClose, compileModels, ortRun, post } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-serve-life-'));
let bundles: Record<string, string>;
const children: ResultPromise[] = [];

before(
  async () => {
    bundles = await compileModels(root, ['tiny', 'slow']);
  },
  { timeout: 600_000 },
);
after(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** Start `veltair serve ARGS --port 0 --json` and wait for its JSON line. */
async function serve(args: string[]): Promise<{ child: ResultPromise; url: string; info: Record<string, unknown> }> {
  const child = execa(process.execPath, [BIN, 'serve', ...args, '--port', '0', '--json'], {
    reject: false,
    stdin: 'ignore',
    buffer: false,
  });
  children.push(child);
  const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let out = '',
      err = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      try {
        resolve(JSON.parse(out) as Record<string, unknown>);
      } catch {
        /* not complete yet */
      }
    });
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
    });
    void child.then((r) => reject(new Error(`serve exited ${r.exitCode}: ${err}`)));
  });
  return { child, url: String(info['url']), info };
}

test('serve binds loopback by default, and SIGTERM answers the request in flight, then exits 0', { timeout: 180_000 }, async () => {
  const { child, url, info } = await serve([bundles['slow']!, '--cores', '1']);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.deepEqual(info['cores'], [0]);
  const x = Array.from(seeded(3 * 40 * 40, 5, -1, 1));
  const body = { inputs: [{ name: 'x', shape: [1, 3, 40, 40], datatype: 'FP32', data: x }] };
  assert.equal((await post(`${url}/v2/models/slow/infer`, body)).status, 200);
  // Signal once the server holds a request and has received all six, read from one /metrics snapshot (queue
  // depth: admitted, not yet answered; the request counter: answered, 503s included), not after a guessed delay:
  // a request still connecting when the listener closes is refused, which says nothing about draining (seen in
  // CI on a loaded 2-core machine: 'fetch failed'). The server may answer all six between two looks (seen in
  // CI too); that round proves nothing either way, so its answers are checked and another six are sent.
  const seen = async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const held = Number(/veltair_queue_depth\{model="slow"\} (\d+)/.exec(text)?.[1] ?? 0);
    const answered = [...text.matchAll(/veltair_requests_total\{model="slow",code="\d+"\} (\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
    return { held, answered };
  };
  const send = () => post(`${url}/v2/models/slow/infer`, body);
  let inFlight: ReturnType<typeof send>[] = [];
  let caught = false;
  // Every request is counted once answered, but the counter may trail the client's answer: so each round's
  // goal is the count of every request sent so far (the first one, six per round), never a count read back.
  for (let round = 0; round < 20 && !caught; round++) {
    const sentSoFar = 1 + 6 * (round + 1);
    let settled = 0;
    inFlight = Array.from({ length: 6 }, () => send().finally(() => settled++));
    while (!caught && settled < inFlight.length) {
      const s = await seen();
      caught = s.held >= 1 && s.held + s.answered >= sentSoFar;
      if (!caught) await new Promise((r) => setTimeout(r, 2));
    }
    if (!caught) for (const a of await Promise.all(inFlight)) assert.ok(a.status === 200 || a.status === 503, `answered ${a.status}`);
  }
  assert.ok(caught, 'in 20 rounds of six requests the server was never seen holding one with all six received');
  child.kill('SIGTERM');
  const answers = await Promise.all(inFlight);
  for (const a of answers) assert.ok(a.status === 200 || a.status === 503, `an in-flight request is answered (got ${a.status})`);
  assert.ok(
    answers.some((a) => a.status === 200),
    'requests admitted before the signal are answered',
  );
  const exit = await child;
  assert.equal(exit.exitCode, 0, 'a drained server exits 0');
  await assert.rejects(fetch(`${url}/v2/health/live`), 'nothing listens afterwards');
});

test('soak: mixed valid and invalid requests from 8 clients for 8 s — none lost, none mixed up', { timeout: 300_000 }, async () => {
  const { child, url } = await serve([bundles['tiny']!]);
  const inputs = Array.from({ length: 12 }, (_, i) => seeded(192, 100 + i, -1, 1));
  const expected = await Promise.all(
    inputs.map((x) => ortRun(join(root, 'tiny.onnx'), { input: { dtype: 'float32', shape: [1, 3, 8, 8], data: x } })),
  );
  const invalid = [
    { inputs: [{ name: 'input', shape: [1, 3, 8], datatype: 'FP32', data: [1] }] },
    { inputs: [{ name: 'nope', shape: [1], datatype: 'FP32', data: [1] }] },
    '{"inputs": [',
  ];
  let sent = 0,
    ok = 0,
    rejected400 = 0,
    busy = 0;
  const failures: string[] = [];
  const deadline = Date.now() + 8000;
  const client = async (id: number) => {
    let k = id;
    while (Date.now() < deadline) {
      k = (k * 7 + 3) % 97;
      sent++;
      if (k % 5 === 0) {
        const r = await post(`${url}/v2/models/tiny/infer`, invalid[k % invalid.length]!);
        if (r.status === 400) rejected400++;
        else failures.push(`invalid request answered ${r.status}`);
        continue;
      }
      const which = k % inputs.length;
      const input = { name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: Array.from(inputs[which]!) };
      const r = await post(`${url}/v2/models/tiny/infer`, { id: `c${id}-${sent}`, inputs: [input] });
      if (r.status === 503) {
        busy++;
        continue;
      }
      if (r.status !== 200) {
        failures.push(`valid request answered ${r.status}: ${Buffer.from(r.bytes).toString().slice(0, 100)}`);
        continue;
      }
      const out = (r.json() as { outputs: { data: number[] }[] }).outputs[0]!.data;
      try {
        assertClose(out, expected[which]!['output']!, `input ${which}`);
        ok++;
      } catch (e) {
        failures.push(String(e).slice(0, 200));
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, (_, i) => client(i)));
  assert.deepEqual(failures.slice(0, 5), [], 'every valid answer is the one for its own input; every invalid one a 400');
  assert.equal(ok + rejected400 + busy, sent, 'every request was answered');
  assert.ok(ok > 0 && rejected400 > 0);
  child.kill('SIGTERM');
  assert.equal((await child).exitCode, 0);
});

test('the ONNX Runtime baseline behind the same front end gives the same answers', { timeout: 120_000 }, async () => {
  const { child, url, info } = await serve([bundles['tiny']!, '--backend', 'onnxruntime']);
  assert.equal(info['backend'], 'onnxruntime');
  const x = seeded(192, 9, -1, 1);
  const r = await post(`${url}/v2/models/tiny/infer`, {
    inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: Array.from(x) }],
  });
  assert.equal(r.status, 200);
  const want = await ortRun(join(root, 'tiny.onnx'), { input: { dtype: 'float32', shape: [1, 3, 8, 8], data: x } });
  assertClose((r.json() as { outputs: { data: number[] }[] }).outputs[0]!.data, want['output']!, 'ORT backend');
  child.kill('SIGTERM');
  assert.equal((await child).exitCode, 0);
});

test(
  "veltair load --find-max against two servers: one side-by-side comparison at the first server's QoS",
  { timeout: 300_000 },
  async () => {
    // The slow model keeps the rates (and so each find-max) small. Both QoS targets are lax: the suite shares a
    // 2-core machine with other test files, and a tight target can be missed at every rate, which is not what this checks.
    // The second server's is configured at 3× the first's: each server measures its model at start-up, and on a
    // busy machine two measurements can differ by 3× (two multiples, 25 and 75, once came out the other way round).
    // --attainment 50 judges the median (7 requests cover 0 late at 99% confidence) and --probe-limit 8 ends a probe the rule has not
    // decided (near capacity) in 8 s, so each search takes seconds per probe; p99 needs ≥ 459 requests. The bound must let a
    // probe reach 7 requests at the low rates a busy machine drives the search down to (4 s left every rate under 1.75 QPS
    // undecided, and a search with no decided pass reports 0).
    const metaQos = async (url: string) =>
      ((await (await fetch(`${url}/v2/models/slow`)).json()) as { parameters: { qos_ms: number } }).parameters.qos_ms;
    const a = await serve([bundles['slow']!, '--policy', 'veltair', '--qos-multiple', '25']);
    const laxer = join(root, 'laxer-qos.json');
    writeFileSync(laxer, JSON.stringify({ models: { slow: { qosMs: 3 * (await metaQos(a.url)) } } }));
    const b = await serve([bundles['slow']!, '--policy', 'fcfs', '--config', laxer]).catch((e: unknown) => {
      a.child.kill('SIGTERM');
      throw e;
    });
    try {
      const r = await veltair([
        'load',
        a.url,
        b.url,
        '--models',
        'slow',
        '--find-max',
        '--duration',
        '1',
        '--attainment',
        '50',
        '--probe-limit',
        '8',
        '--qps',
        '10',
        '--rounds',
        '2',
        '--json',
      ]);
      assert.equal(r.exitCode, 0, r.stderr);
      const out = JSON.parse(r.stdout) as {
        qosMs: Record<string, number>;
        rounds: number;
        servers: { url: string; maxQps: number[]; medianMaxQps: number }[];
      };
      assert.equal(out.rounds, 2);
      assert.deepEqual(
        out.servers.map((s) => s.url),
        [a.url, b.url],
      );
      assert.ok(Math.abs(out.qosMs['slow']! - (await metaQos(a.url))) < 1e-3, "the first server's QoS");
      assert.ok((await metaQos(b.url)) > out.qosMs['slow']!, 'the second server states a laxer QoS, which is not used');
      for (const s of out.servers) {
        assert.equal(s.maxQps.length, 2, 'one find-max per round');
        assert.ok(
          s.maxQps.every((q) => q > 0),
          `${s.url} serves the slow model at some rate within QoS`,
        );
      }
      assertOneClearError(await veltair(['load', a.url, b.url, '--models', 'slow', '--qps', '1']), 'BAD_ARGUMENT', ['--find-max']);
    } finally {
      a.child.kill('SIGTERM');
      b.child.kill('SIGTERM');
      await Promise.all([a.child, b.child]);
    }
  },
);

test('bad start-up input is one clear error line and exit 1', async () => {
  assertOneClearError(await veltair(['serve', bundles['tiny']!, '--policy', 'sometimes']), 'BAD_ARGUMENT', ['sometimes']);
  assertOneClearError(await veltair(['serve', bundles['tiny']!, '--port', '99999']), 'BAD_ARGUMENT', ['--port']);
  assertOneClearError(await veltair(['serve']), 'BAD_ARGUMENT', ['no model']);
  assertOneClearError(await veltair(['serve', '--repo', join(root, 'missing')]), 'FILE_NOT_FOUND', ['missing']);
  const config = join(root, 'bad-config.json');
  writeFileSync(config, JSON.stringify({ models: { tiny: { qosMs: -1 } } }));
  assertOneClearError(await veltair(['serve', bundles['tiny']!, '--config', config]), 'BAD_ARGUMENT', ['bad-config.json']);
  assertOneClearError(await veltair(['load', 'http://10.0.0.1:8000', '--models', 'tiny', '--qps', '1']), 'BAD_ARGUMENT', ['loopback']);
  assertOneClearError(await veltair(['serve', bundles['tiny']!, '--cores', '0']), 'BAD_ARGUMENT', ['--cores']);
});

test(
  'bin/veltair starts node with single-threaded garbage collection, and serve says so when started without it',
  { timeout: 120_000 },
  async () => {
    /** stderr of a server started by `command`, stopped once it listens. */
    const stderrOf = async (command: string, args: string[]) => {
      const child = execa(command, [...args, 'serve', bundles['tiny']!, '--cores', '1', '--port', '0', '--json'], {
        reject: false,
        stdin: 'ignore',
        buffer: false,
      });
      children.push(child);
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', () => resolve());
        void child.then((r) => reject(new Error(`serve exited ${r.exitCode}: ${err}`)));
      });
      child.kill('SIGTERM');
      assert.equal((await child).exitCode, 0, err);
      return err;
    };
    assert.doesNotMatch(await stderrOf(BIN, []), /--single-threaded-gc/, 'the executable runs node with the flag (its #! line)');
    assert.match(await stderrOf(process.execPath, [BIN]), /node runs without --single-threaded-gc/);
  },
);
