import test from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseSweep, runSweep, sweepPoints, sweepRates } from '../src/load/sweep.js';

test('--qps-sweep FROM:TO:STEPS: evenly spaced rates, ends included; bad specs are typed errors', () => {
  assert.deepEqual(sweepRates(parseSweep('10:40:4')), [10, 20, 30, 40]);
  assert.deepEqual(sweepRates(parseSweep('5:5:1')), [5]);
  assert.deepEqual(sweepRates(parseSweep('2.5:7.5:3')), [2.5, 5, 7.5]);
  for (const bad of ['10:5:3', '0:5:3', '1:2', 'a:b:c', '1:2:0', '1:2:101', '1:2000000:3']) {
    assert.throws(
      () => parseSweep(bad),
      (e: { code?: string }) => e.code === 'BAD_ARGUMENT',
      bad,
    );
  }
});

test('a sweep runs one load per rate and reports attainment and p99 per model per step', async () => {
  // A fake v2 endpoint: model "ok" answers 200 with a JSON body (the client checks the answer's type
  // and size), model "busy" answers 503 (every request a miss).
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.statusCode = req.url!.includes('/busy/') ? 503 : 200;
      res.setHeader('Content-Type', 'application/json');
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  try {
    const models = ['ok', 'busy'].map((name) => ({
      name,
      weight: 1,
      qosMs: 60_000,
      body: '{}',
      headers: { 'Content-Type': 'application/json' },
    }));
    const steps: number[] = [];
    const runs = await runSweep(base, models, parseSweep('20:40:2'), 1, 3, (r) => steps.push(r.totalQps));
    assert.deepEqual(steps, [20, 40]);
    const points = sweepPoints(runs);
    assert.equal(points.length, 4);
    for (const p of points) {
      assert.ok([20, 40].includes(p.offeredQps));
      if (p.model === 'busy') {
        assert.equal(p.attainment, 0);
        assert.equal(p.p99Ms, null);
      } else {
        assert.equal(p.attainment, 1, 'every answer within a minute');
        assert.ok(p.p99Ms !== null && p.p99Ms >= 0);
      }
    }
  } finally {
    server.close();
  }
});
