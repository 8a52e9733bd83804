import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { binaryAnswerBytes, requestFor, type LoadModel } from '../src/load/generator.js';
import { boundCanDecide, searchMaxQps } from '../src/load/find-max.js';
import { httpSender, runProbe, type ProbeResult } from '../src/load/probe.js';
import { answerOk } from '../src/load/post.js';
import type { Verdict } from '../src/load/early-stopping.js';
import type { NoiseRecord } from '../src/load/noise.js';

const QUIET: NoiseRecord = { outsideCpuS: 0, outsideShare: 0, stealShare: 0, clientCpuMsPerRequest: 0.1 };

const probe = (qps: number, verdict: Verdict, noise: NoiseRecord = QUIET): ProbeResult => ({
  totalQps: qps,
  durationS: 4,
  satisfaction: 1,
  verdict,
  stoppedBy: verdict === 'undecided' ? 'time' : 'verdict',
  noise,
  models: [
    {
      name: 'm',
      targetQps: qps,
      sent: 500,
      ok: 500,
      rejected: 0,
      errors: 0,
      achievedQps: qps,
      p50Ms: 1,
      p90Ms: 1,
      p99Ms: 1,
      meanMs: 1,
      qosMs: 10,
      satisfaction: 1,
      late: 0,
      needed: 459,
      verdict,
    },
  ],
});

test("a binary request asks for binary outputs (as Triton clients do), and knows the answer's size; a JSON one keeps JSON both ways", () => {
  const meta = {
    name: 'm',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4] }],
    outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 10] }],
  };
  const binary = requestFor(meta, 1, false);
  const headLength = Number(binary.headers['Inference-Header-Content-Length']);
  const head = JSON.parse(
    Buffer.from(binary.body as Uint8Array)
      .subarray(0, headLength)
      .toString('utf8'),
  ) as { parameters?: Record<string, unknown> };
  assert.equal(head.parameters?.['binary_data_output'], true);
  assert.equal((binary.body as Uint8Array).byteLength, headLength + 16, 'four float32 values after the header');
  assert.equal(binary.answerBytes, 40);
  assert.equal(
    binaryAnswerBytes({ inputs: [], outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 10] }] }),
    undefined,
    'a dynamic shape: unknown',
  );
  const json = requestFor(meta, 1, true);
  assert.equal((JSON.parse(json.body as string) as { parameters?: unknown }).parameters, undefined);
  assert.equal(json.answerBytes, undefined);
});

test('answers are checked by status, headers and size, and decoded only with verify', () => {
  const head = Buffer.from(JSON.stringify({ outputs: [{ name: 'y', parameters: { binary_data_size: 40 } }] }));
  const body = Buffer.concat([head, Buffer.alloc(40)]);
  const h = (n: number) => ({ 'content-length': String(n), 'inference-header-content-length': String(head.byteLength) });
  assert.equal(answerOk(h(body.byteLength), body.byteLength, { binaryBytes: 40 }), true);
  assert.equal(answerOk(h(body.byteLength), body.byteLength - 4, { binaryBytes: 40 }), false, 'cut short');
  assert.equal(answerOk(h(body.byteLength + 4), body.byteLength + 4, { binaryBytes: 40 }), false, 'the wrong size of tensors');
  assert.equal(answerOk({ 'content-type': 'application/json' }, 10, {}), true, 'a JSON answer');
  assert.equal(answerOk({ 'content-type': 'application/json' }, 10, { binaryBytes: 40 }), false, 'JSON where binary was asked for');
  assert.equal(answerOk(h(body.byteLength), body.byteLength, { binaryBytes: 40, verify: true }, body), true);
  const lying = Buffer.concat([
    Buffer.from(JSON.stringify({ outputs: [{ name: 'y', parameters: { binary_data_size: 30 } }] })),
    Buffer.alloc(40),
  ]);
  const hl = { 'inference-header-content-length': String(lying.byteLength - 40) };
  assert.equal(answerOk(hl, lying.byteLength, { binaryBytes: 40 }), true, 'unverified: size only');
  assert.equal(answerOk(hl, lying.byteLength, { binaryBytes: 40, verify: true }, lying), false, 'verified: the header disagrees');
});

test('find-max: passes raise the bound, fails cap it, and an undecided rate is neither (it caps the search but is reported apart)', async () => {
  // Capacity 20 QPS; 25 QPS ends undecided, as a rate near capacity does when its probe's time runs out.
  const seen: number[] = [];
  const server = async (qps: number) => {
    seen.push(qps);
    return probe(qps, qps <= 20 ? 'pass' : qps <= 30 ? 'undecided' : 'fail');
  };
  const found = await searchMaxQps(server, { seed: 1, startQps: 10, tolerance: 1.1, maxRuns: 12 });
  assert.deepEqual(seen.slice(0, 2), [10, 20], 'doubling while it passes');
  assert.equal(seen[2], 40, 'then 40 fails');
  assert.ok(found.maxQps >= 20 / 1.1 && found.maxQps <= 20, `max ${found.maxQps} is a rate that passed`);
  assert.ok(found.runs.filter((r) => r.verdict === 'pass').some((r) => r.totalQps === found.maxQps));
  assert.equal(found.failedQps, 40, 'the failed bound is only ever a rate that failed');
  assert.ok(found.undecidedQps.length > 0 && found.undecidedQps.every((q) => q > 20 && q <= 30), `undecided ${found.undecidedQps}`);
  // Every rate undecided (the probe bound is too short for the rule): nothing passes, nothing fails; the search says so.
  // Each probe sent 5,000 requests with some late: enough that a lower rate could still decide, so the search goes down.
  const many = (qps: number): ProbeResult => {
    const p = probe(qps, 'undecided');
    return { ...p, models: [{ ...p.models[0]!, sent: 5000, late: 60 }] };
  };
  const never = await searchMaxQps(async (qps) => many(qps), { seed: 1, startQps: 8, maxRuns: 10 });
  assert.equal(never.maxQps, 0);
  assert.equal(never.failedQps, null);
  assert.ok(never.undecidedQps.length > 1);
  assert.equal(never.boundTooShortBelowQps, null);
});

test('find-max does not go below an undecided probe when no lower rate can send enough requests within the bound', async () => {
  // 456 requests in the bound at 20.96 QPS, 0 late: 3 short of the 459 a pass needs, and a lower rate sends fewer.
  const short = (qps: number): ProbeResult => {
    const p = probe(qps, 'undecided');
    return { ...p, models: [{ ...p.models[0]!, sent: Math.round(456 * (qps / 20.96)) }] };
  };
  const seen: number[] = [];
  const found = await searchMaxQps(
    async (qps) => {
      seen.push(qps);
      return short(qps);
    },
    { seed: 1, startQps: 20.96, maxRuns: 10 },
  );
  assert.deepEqual(seen, [20.96], 'one probe, no descent');
  assert.equal(found.maxQps, 0);
  assert.equal(found.boundTooShortBelowQps, 20.96);
  assert.equal(boundCanDecide(short(20.96), 10.48), false);
  assert.equal(boundCanDecide({ ...short(20.96), models: [{ ...short(20.96).models[0]!, sent: 1000 }] }, 10.48), true, '500 at half');
  assert.equal(boundCanDecide({ ...short(20.96), stoppedBy: 'verdict' }, 1), true, 'a probe its verdict ended says nothing of the bound');
  // A failing start still goes down: fails are decided, and a lower rate with room passes.
  const down = await searchMaxQps(async (qps) => probe(qps, qps <= 5 ? 'pass' : 'fail'), { seed: 1, startQps: 20, maxRuns: 6 });
  assert.equal(down.maxQps, 5);
  assert.equal(down.boundTooShortBelowQps, null);
});

test('find-max runs a probe again, once, when work outside the arm took over 5% of the cores, and marks it', async () => {
  const noisy: NoiseRecord = { ...QUIET, outsideShare: 0.2 };
  let calls = 0;
  const found = await searchMaxQps(
    async (qps) => {
      calls++;
      if (calls === 1) return probe(qps, 'fail', noisy);
      return probe(qps, qps <= 10 ? 'pass' : 'fail', calls === 2 ? noisy : QUIET);
    },
    { seed: 1, startQps: 10, tolerance: 1.5, maxRuns: 3 },
  );
  assert.equal(found.runs[0]!.noise.outsideShare, 0.2);
  assert.equal(found.runs[1]!.rerunOfNoisy, true, 'the rerun is marked');
  assert.equal(found.runs[1]!.totalQps, 10, 'at the same rate');
  assert.equal(found.runs[2]!.rerunOfNoisy, undefined, 'a noisy rerun is not run a third time');
  assert.equal(found.maxQps, 10, 'the rerun judged the rate');
});

/** A stand-in v2 server: answers every POST with `status` and a binary answer of 40 bytes of outputs. */
async function fakeServer(status: number): Promise<{ url: URL; close: () => Promise<void> }> {
  const head = Buffer.from(
    JSON.stringify({ outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 10], parameters: { binary_data_size: 40 } }] }),
  );
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (status !== 200) {
        res.writeHead(status).end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.byteLength) });
      res.end(Buffer.concat([head, Buffer.alloc(40)]));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return {
    url,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const fakeModel = (qosMs: number): LoadModel => ({
  name: 'm',
  weight: 1,
  qosMs,
  answerBytes: 40,
  ...requestFor({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4] }] }, 1, false),
});

test('a probe stops sending once the rule decides: a pass after its covering requests, a fail after a few rejected ones', async () => {
  const ok = await fakeServer(200);
  try {
    // A lax QoS: every answer is in time, so the rule passes at 459 sent (a few more may be in flight when it decides).
    const r = await runProbe(httpSender(ok.url, [fakeModel(60_000)]), [fakeModel(60_000)], 400, {
      minDurationS: 0,
      maxDurationS: 30,
      seed: 1,
    });
    assert.equal(r.verdict, 'pass');
    assert.equal(r.stoppedBy, 'verdict');
    assert.ok(r.models[0]!.sent >= 459 && r.models[0]!.sent < (30 * 400) / 2, `sent ${r.models[0]!.sent}`);
    assert.equal(r.models[0]!.late, 0);
    assert.equal(r.models[0]!.ok, r.models[0]!.sent);
    assert.ok(r.noise.clientCpuMsPerRequest !== null && r.noise.clientCpuMsPerRequest > 0, "the client's CPU per request is on record");
    // A bound too short for the rule: undecided, not failed.
    const short = await runProbe(httpSender(ok.url, [fakeModel(60_000)]), [fakeModel(60_000)], 50, {
      minDurationS: 0,
      maxDurationS: 1,
      seed: 2,
    });
    assert.equal(short.verdict, 'undecided');
    assert.equal(short.stoppedBy, 'time');
  } finally {
    await ok.close();
  }
  const busy = await fakeServer(503);
  try {
    const r = await runProbe(httpSender(busy.url, [fakeModel(60_000)]), [fakeModel(60_000)], 400, {
      minDurationS: 0,
      maxDurationS: 30,
      seed: 1,
    });
    assert.equal(r.verdict, 'fail');
    assert.equal(r.stoppedBy, 'verdict');
    assert.ok(r.models[0]!.sent < 459, `a decisive fail needs few requests (${r.models[0]!.sent})`);
    assert.equal(r.models[0]!.rejected, r.models[0]!.sent);
  } finally {
    await busy.close();
  }
});
