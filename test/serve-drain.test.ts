/**
 * SIGTERM loses nothing (src/serve/drain.ts): sixteen ~600 KB inferences on sixteen connections,
 * SIGTERM as the first answer arrives — every request is answered, 200 if it was admitted before
 * the signal and 503 with Retry-After otherwise, none reset (twenty rounds); readiness and
 * inference on a connection opened during the grace period answer 503; the drain deadline cuts
 * off a client that stalls and says so, and `veltair serve` then exits 3; a second SIGTERM brings that
 * deadline forward to its own moment.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { execa } from 'execa';
import { parsePolicy } from '../src/schedule/policies.js';
import type { Backend } from '../src/serve/backend.js';
import type { Dispatcher } from '../src/serve/dispatcher.js';
import { createMetrics, type ServerMetrics } from '../src/serve/metrics.js';
import { setupDispatcher } from '../src/serve/setup.js';
import { startServer } from '../src/serve/start.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { assertOneClearError, BIN, veltair } from './compile-fixture.js';
import { seeded } from './runtime-harness.js';
import { compileModels, model } from './serve-fixture.js';
import { metricValue, postBytes, rawRequest, type RawOutcome } from './serve-raw-client.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-serve-drain-'));
let bundles: Record<string, string>;
let dispatcher: Dispatcher;
let metrics: ServerMetrics;
/** The dispatcher, kept across servers: each round's drain releases this wrapper, not the sessions. */
let backend: Backend;

before(
  async () => {
    bundles = await compileModels(root, ['slow']);
    metrics = createMetrics();
    dispatcher = (
      await setupDispatcher({
        models: [model('slow', bundles['slow']!)],
        policy: parsePolicy('veltair'),
        cpus: availableCores(),
        metrics,
        qosMultiple: 50,
      })
    ).dispatcher;
    backend = {
      name: dispatcher.name,
      models: dispatcher.models,
      infer: (m, f) => dispatcher.infer(m, f),
      inFlight: () => dispatcher.inFlight(),
      close: async () => undefined,
    };
  },
  { timeout: 600_000 },
);
after(async () => {
  await dispatcher?.close();
  rmSync(root, { recursive: true, force: true });
});

/** A 602,112-byte binary-extension inference of the slow model: its 19,200-byte input after a JSON header padded with spaces. */
function largeInference(): Buffer {
  const x = Buffer.from(seeded(3 * 40 * 40, 7, -1, 1).buffer);
  const header = JSON.stringify({
    inputs: [{ name: 'x', shape: [1, 3, 40, 40], datatype: 'FP32', parameters: { binary_data_size: x.byteLength } }],
  });
  const json = Buffer.from(header.padEnd(602_112 - x.byteLength, ' '));
  return postBytes('/v2/models/slow/infer', Buffer.concat([json, x]), {
    'Content-Type': 'application/octet-stream',
    'Inference-Header-Content-Length': String(json.byteLength),
  });
}

// Options as a variable, not a literal: the same file then also builds against the server before these limits existed.
const serverOptions = (limits: Record<string, number>, signals = false) => ({
  backend,
  metrics,
  host: '127.0.0.1',
  port: 0,
  bodyLimit: 4 << 20,
  signals,
  limits,
});
const portOf = (url: string) => Number(new URL(url).port);

interface Tally {
  ok: number;
  busy: number;
  wrong: string[];
  lost: string[];
}

function tallyInto(t: Tally, outcomes: readonly RawOutcome[]): void {
  for (const o of outcomes) {
    if (o.status === 200) t.ok++;
    else if (o.status === 503 && /^\d+$/.test(o.headers['retry-after'] ?? '')) t.busy++;
    else if (o.status !== undefined) t.wrong.push(`${o.status} ${o.body.slice(0, 80)}`);
    else t.lost.push(o.error ?? 'closed');
  }
}

test(
  'SIGTERM at the first answer of 16 large requests: every one answered, 200 or 503 with Retry-After, none reset (20 rounds)',
  { timeout: 900_000 },
  async (t) => {
    const request = largeInference();
    const tally: Tally = { ok: 0, busy: 0, wrong: [], lost: [] };
    const cut: number[] = [];
    for (let round = 0; round < 20; round++) {
      const server = await startServer(serverOptions({ drainGraceMs: 200, drainTimeoutMs: 300_000 }, true));
      let signalled = false;
      const onFirstByte = () => {
        if (signalled) return;
        signalled = true;
        process.kill(process.pid, 'SIGTERM'); // the server's handler is installed: this process drains, it does not exit
      };
      const outcomes = await Promise.all(Array.from({ length: 16 }, () => rawRequest(portOf(server.url), request, { onFirstByte })));
      const report = (await server.closed) as { cutShort?: boolean } | undefined;
      if (report?.cutShort) cut.push(round);
      assert.ok(
        outcomes.some((o) => o.status === 200),
        `round ${round}: the answer that triggered the signal was admitted before it`,
      );
      tallyInto(tally, outcomes);
    }
    t.diagnostic(
      `20 rounds × 16 requests: ${tally.ok} answered 200, ${tally.busy} 503 with Retry-After, ${tally.wrong.length} other answers, ` +
        `${tally.lost.length} without an answer (${[...new Set(tally.lost)].join(', ') || 'none'})`,
    );
    assert.deepEqual(tally.lost, [], `${tally.lost.length} of 320 requests got no answer (reset) — every request sent must be answered`);
    assert.deepEqual(tally.wrong, [], 'every answer is 200, or 503 with Retry-After');
    assert.deepEqual(cut, [], 'no drain needed its deadline');
  },
);

test(
  'during the grace period a new connection gets 503 from readiness and inference (with Retry-After); afterwards nothing listens',
  { timeout: 120_000 },
  async () => {
    const server = await startServer(serverOptions({ drainGraceMs: 3000, drainTimeoutMs: 60_000 }));
    const port = portOf(server.url);
    assert.equal((await fetch(`${server.url}/v2/health/ready`)).status, 200);
    const closed = server.stop();
    // Connected in this tick (before the grace timer can fire, however loaded the machine): a connection made during the drain.
    const ready = rawRequest(port, Buffer.from('GET /v2/health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    const infer = rawRequest(port, largeInference());
    const [r, i] = await Promise.all([ready, infer]);
    assert.equal(r.status, 503, `readiness during the drain: ${r.status ?? r.error}`);
    assert.equal(r.headers['connection'], 'close');
    assert.equal(i.status, 503, `an inference sent during the drain: ${i.status ?? i.error}`);
    assert.match(i.headers['retry-after'] ?? '', /^\d+$/);
    const report = (await closed) as { cutShort?: boolean } | undefined;
    assert.equal(report?.cutShort, false);
    const after = await rawRequest(port, Buffer.from('GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    assert.equal(after.error, 'ECONNREFUSED', 'the listener is closed once the drain is done');
  },
);

/**
 * A client that stalls halfway through its body, once the server surely holds its request: it asks
 * `Expect: 100-continue`, and the server says 100 Continue only once it has parsed the headers.
 * Resolves when half the body is written; `ended` resolves with whatever the client got in the end.
 */
async function stallMidBody(port: number): Promise<{ ended: Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  let got = '';
  const ended = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(got));
  });
  socket.on('error', () => undefined);
  socket.write(
    'POST /v2/models/slow/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n' +
      'Expect: 100-continue\r\n\r\n',
  );
  await new Promise<void>((resolve) => {
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (/100 Continue/.test(got)) resolve();
    });
  });
  await new Promise<void>((resolve) => socket.write(Buffer.alloc(5_000, 0x20), () => resolve()));
  return { ended };
}

test('the drain deadline cuts off a client that stalls mid-body, and the report (and metric) say so', { timeout: 120_000 }, async () => {
  const server = await startServer(
    serverOptions({ drainGraceMs: 50, drainTimeoutMs: 1500, bodyTimeoutMs: 600_000, headerTimeoutMs: 600_000 }),
  );
  const drainsBefore = metricValue(await metrics.registry.metrics(), 'veltair_timeouts_total', 'kind="drain"');
  const stalled = await stallMidBody(portOf(server.url));
  const report = (await server.stop()) as { cutShort?: boolean; connectionsCut?: number } | undefined;
  assert.equal(report?.cutShort, true, 'the drain says it was cut short');
  assert.ok((report?.connectionsCut ?? 0) >= 1);
  assert.doesNotMatch(await stalled.ended, /HTTP\/1\.1 [2-5]\d\d/, 'the stalled client was cut off without an answer');
  assert.ok(metricValue(await metrics.registry.metrics(), 'veltair_timeouts_total', 'kind="drain"') > drainsBefore);
});

test('a second SIGTERM cuts the drain short at once: the stalled client is cut off, the report says so', { timeout: 120_000 }, async () => {
  // A deadline far beyond the test's timeout: only the second signal can end this drain in time.
  const server = await startServer(
    serverOptions({ drainGraceMs: 50, drainTimeoutMs: 1_200_000, bodyTimeoutMs: 1_200_000, headerTimeoutMs: 1_200_000 }, true),
  );
  const port = portOf(server.url);
  const stalled = await stallMidBody(port);
  process.kill(process.pid, 'SIGTERM');
  const readiness = Buffer.from('GET /v2/health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
  // The first signal has been handled once readiness fails (or the listener is gone after the grace period).
  for (let r = await rawRequest(port, readiness); r.status === 200; r = await rawRequest(port, readiness))
    await new Promise((w) => setTimeout(w, 20));
  process.kill(process.pid, 'SIGTERM');
  const report = (await server.closed) as { cutShort?: boolean; connectionsCut?: number } | undefined;
  assert.equal(report?.cutShort, true, 'the drain says it was cut short');
  assert.ok((report?.connectionsCut ?? 0) >= 1, 'the stalled connection was cut');
  assert.doesNotMatch(await stalled.ended, /HTTP\/1\.1 [2-5]\d\d/, 'the stalled client was cut off without an answer');
});

test(
  'veltair serve exits 3 when the drain deadline cut something short; bad drain flags are one clear error',
  { timeout: 300_000 },
  async () => {
    assertOneClearError(
      await veltair(['serve', bundles['slow']!, '--drain-grace-ms', '5000', '--drain-timeout-ms', '1000']),
      'BAD_ARGUMENT',
      ['--drain-timeout-ms'],
    );
    assertOneClearError(await veltair(['serve', bundles['slow']!, '--header-timeout-ms', 'soon']), 'BAD_ARGUMENT', ['--header-timeout-ms']);
    const child = execa(
      process.execPath,
      [
        BIN,
        'serve',
        bundles['slow']!,
        '--cores',
        '1',
        '--port',
        '0',
        '--json',
        '--drain-grace-ms',
        '50',
        '--drain-timeout-ms',
        '1500',
        '--body-timeout-ms',
        '600000',
      ],
      { reject: false, stdin: 'ignore', buffer: false },
    );
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          try {
            resolve(String((JSON.parse(out) as { url: string }).url));
          } catch {
            /* not complete yet */
          }
        });
        void child.then((r) => reject(new Error(`serve exited ${r.exitCode}`)));
      });
      const stalled = await stallMidBody(portOf(url));
      child.kill('SIGTERM');
      assert.equal((await child).exitCode, 3, 'a drain cut short by its deadline exits 3');
      await stalled.ended;
    } finally {
      child.kill('SIGKILL');
    }
  },
);
