import test from 'node:test';
import assert from 'node:assert/strict';
import { requestFor } from '../src/load/generator.js';
import { hasInProcessForm, seededFeeds, statusOf } from '../src/bench/serve-in-process.js';
import { badRequest, unavailable } from '../src/serve/errors.js';

test('in-process feeds hold the same seeded values the HTTP request carries; integers are zero', () => {
  const meta = {
    inputs: [
      { name: 'x', datatype: 'FP32', shape: [1, 6] },
      { name: 'ids', datatype: 'INT64', shape: [1, 3] },
    ],
  };
  const http = requestFor(meta, 7, false);
  const head = Number(http.headers['Inference-Header-Content-Length']);
  const body = Buffer.from(http.body as Uint8Array);
  const sent = new Float32Array(body.buffer.slice(body.byteOffset + head, body.byteOffset + head + 24));
  const feeds = seededFeeds(
    [
      { name: 'x', dtype: 'float32', shape: [1, 6] },
      { name: 'ids', dtype: 'int64', shape: [1, 3] },
    ],
    7,
  );
  assert.deepEqual(Array.from(feeds['x']!.data as Float32Array), Array.from(sent));
  assert.ok(feeds['ids']!.data instanceof BigInt64Array);
  assert.deepEqual([...feeds['ids']!.shape], [1, 3]);
});

test("a backend's refusal counts as the HTTP status would: 503 for a full queue, 0 for anything else; ort-pinned has no in-process form", () => {
  assert.equal(statusOf(unavailable('full', 1)), 503);
  assert.equal(statusOf(badRequest('bad')), 0);
  assert.equal(statusOf(new Error('boom')), 0);
  assert.equal(hasInProcessForm('ort-pinned'), false);
  assert.equal(hasInProcessForm('ort-instances'), true);
  assert.equal(hasInProcessForm('veltair'), true);
});
