/**
 * `veltair serve --policy veltair-partition` through the dispatcher: two models, each kept on its
 * own CPUs, answer every request with the same outputs as each other (one bundle served twice),
 * and say in their answers which partition ran them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { parsePolicy } from '../src/schedule/policies.js';
import { createMetrics } from '../src/serve/metrics.js';
import { setupDispatcher } from '../src/serve/setup.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { seeded } from './runtime-harness.js';
import { compileModels, model } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-serve-partition-'));
after(() => rmSync(root, { recursive: true, force: true }));

test(
  'veltair-partition serves two models, each on its own CPUs, and names the partition in every answer',
  { timeout: 600_000 },
  async () => {
    const bundles = await compileModels(root, ['tiny']);
    const cpus = availableCores().slice(0, 2);
    const { dispatcher } = await setupDispatcher({
      models: [model('a', bundles['tiny']!), model('b', bundles['tiny']!)],
      policy: parsePolicy('veltair-partition'),
      cpus,
      metrics: createMetrics(),
      qosMultiple: 50,
    });
    try {
      const spatial = dispatcher.spatial;
      // Two CPUs or more: one each; a host with one CPU time-shares it.
      if (cpus.length >= 2) assert.deepEqual(spatial.partition?.cores, [1, 1]);
      else assert.equal(spatial.partition, null);
      const feeds = { input: { dtype: 'float32' as const, shape: [1, 3, 8, 8], data: seeded(3 * 8 * 8, 4) } };
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => dispatcher.infer(i % 2 === 0 ? 'a' : 'b', feeds)));
      const first = Array.from(answers[0]!.outputs['output']!.data as Float32Array);
      for (const a of answers) {
        assert.deepEqual(Array.from(a.outputs['output']!.data as Float32Array), first);
        assert.equal(a.parameters['veltair_policy'], 'veltair-partition');
        assert.equal(a.parameters['veltair_spatial'], cpus.length >= 2 ? 'partitioned 1+1' : 'time-shared');
      }
      assert.equal(dispatcher.spatial.switches, 0);
    } finally {
      await dispatcher.close();
    }
  },
);
