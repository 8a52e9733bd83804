import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

const LIMIT = 60 * 1024 * 1024;

test(
  'the serving pack holds node, the production modules and ONNX Runtime for Linux x64 only, fits 60 MiB, and plans its run',
  { timeout: 600_000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'veltair-pack-'));
    try {
      const out = join(dir, 'pack.tar.xz');
      const r = await execa('bash', ['bench/serve/pack.sh', '--out', out, '--stage', dir, '--xz-level', '1'], { reject: false });
      assert.equal(r.exitCode, 0, r.stderr);
      assert.ok(statSync(out).size <= LIMIT, `${statSync(out).size} bytes`);
      const pack = join(dir, 'veltair-serve');
      const node = await execa(join(pack, 'node/bin/node'), ['--version']);
      assert.equal(node.stdout, process.version, 'the pack carries this node');
      const ort = join(pack, 'node_modules/onnxruntime-node/bin/napi-v6');
      assert.deepEqual(readdirSync(ort), ['linux']);
      assert.deepEqual(readdirSync(join(ort, 'linux')), ['x64']);
      assert.ok(readdirSync(join(ort, 'linux/x64')).some((f) => f.startsWith('libonnxruntime.so')));
      for (const prod of ['fastify', 'commander', 'onnxruntime-common']) assert.ok(existsSync(join(pack, 'node_modules', prod)), prod);
      for (const dev of ['typescript', 'eslint', 'prettier']) assert.ok(!existsSync(join(pack, 'node_modules', dev)), `${dev} left out`);
      for (const f of [
        'dist/src/bench/serve-bench.js',
        'bench/serve/16core.sh',
        'run.sh',
        'native-kernels/runtime/addon.c',
        'tuning-db/index.json',
      ])
        assert.ok(existsSync(join(pack, f)), f);
      // The pack's own entry, with its own node, plans the run without building anything.
      const plan = await execa('bash', [join(pack, 'run.sh'), '--plan', '--cores', '1', 'het1'], {
        reject: false,
        cwd: dir,
        env: { PATH: '/usr/bin:/bin' },
      });
      assert.equal(plan.exitCode, 0, plan.stderr);
      assert.match(plan.stderr, /models: mobilenet_v2 resnet50/);
      assert.match(plan.stderr, /^plan: 1 cores/m);
      assert.match(plan.stderr, /--mix het1/);
      const bad = await execa('bash', [join(pack, 'run.sh'), '--plan', 'het9'], { reject: false });
      assert.equal(bad.exitCode, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
