/**
 * `veltair compile` on a quantized model, then the bundle run natively: the small quantized CNN
 * (QuantizeLinear, two qconv2d, qmaxpool, qadd, qglobal_avgpool, the classifier qmatmul) compiled
 * with a tiny budget; every INT8 layer ships a family; the session runs it and every version of every
 * INT8 layer gives the integer reference's output bit for bit; against ONNX Runtime's INT8 output on
 * the same QDQ model at least 99.9% of outputs are within one quantization step (docs/quantize.md).
 * ORT is an optional peer: that comparison is skipped, with the reason, without it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileModel } from '../src/compile/compile-model.js';
import { loadBundle } from '../src/runtime/session.js';
import { decodeModel } from '../src/onnx/decode.js';
import { ortInstalled } from '../src/ort/available.js';
import { runReferenceGraph } from '../src/quantize/run-graph.js';
import type { Tensor } from '../src/onnx/model.js';
import { measureProfile } from '../src/profile/measure.js';
import { parseProfile, profileText } from '../src/schedule/scheduling-profile.js';
import { int8PathsAt } from '../src/toolchain/isa.js';
import { int8TuningPaths } from '../src/tune/int8-tune.js';
import { assertWithinOneStepOfOrt, smallCnn } from './quantize-fixture.js';
import { quantizedGraph } from './int8-runtime-fixture.js';

test(
  'a quantized small CNN compiles into INT8 families and runs natively, equal to the integer reference and within one step of ORT',
  {
    timeout: 600_000,
  },
  async (t) => {
    const { bytes, graph, samples } = await quantizedGraph(smallCnn(), 8, 16);
    const dir = await mkdtemp(join(tmpdir(), 'veltair-compile-int8-'));
    try {
      const model = join(dir, 'small.int8.onnx');
      await writeFile(model, bytes);
      const out = join(dir, 'small.bundle');
      const r = await compileModel(model, { output: out, trials: 4, levels: [0], maxVersions: 3, db: join(dir, 'db') });
      assert.equal(r.int8?.layers, 3);
      assert.equal(r.int8?.failed, 0, r.notes.join('\n'));
      const s = await loadBundle(out);
      try {
        const int8 = s.tunableLayers.map((l) => l.op);
        assert.deepEqual(int8, ['qconv2d', 'qconv2d', 'qmatmul']);
        const paths = int8TuningPaths(int8PathsAt('native'));
        for (const l of s.tunableLayers)
          assert.ok(l.versions.length >= paths.length && l.versions.length <= 3, `${l.versions.length} versions`);
        const [input, output] = [graph.inputs[0]!.name, graph.outputs[0]!.name];
        const most = Math.max(...s.tunableLayers.map((l) => l.versions.length));
        const outputs: Float32Array[] = [];
        for (const [i, sample] of samples.entries()) {
          const x = sample[input]!;
          const feed: Tensor = { dtype: 'float32', dims: x.shape, data: x.data as Float32Array };
          const want = Array.from(runReferenceGraph(graph, new Map([[input, feed]])).get(output)!.data as Float32Array);
          for (let v = 0; v < (i === 0 ? most : 1); v++) {
            s.useVersions(s.tunableLayers.map((l) => Math.min(v, l.versions.length - 1)));
            const got = (await s.run({ [input]: { dtype: 'float32', shape: x.shape, data: x.data as Float32Array } }))[output]!;
            assert.deepEqual(Array.from(got.data as Float32Array), want, `sample ${i}, versions ${v}`);
            if (v === 0) outputs.push(got.data as Float32Array);
          }
        }
        // The scheduler's profile covers INT8 kernels too: every version of every layer gets a figure.
        const prof = await measureProfile({ bundleDir: out, cores: [1], levels: [0], rounds: 2, runs: 1 });
        const reread = parseProfile(profileText(prof.profile), 'small.profile.json');
        const kernels = reread.steps.filter((st) => st.kind === 'tunable');
        assert.equal(kernels.length, 3);
        for (const st of kernels)
          for (const v of st.versions) {
            assert.match(v.symbol ?? '', /^vt_q[0-9a-f]{16}$/);
            assert.ok((v.latencyUs['1']?.['0']?.us ?? 0) > 0, `step ${st.index} version ${v.id}`);
          }
        if (!ortInstalled()) {
          t.diagnostic('onnxruntime-node is not installed: the comparison with ONNX Runtime is skipped');
          return;
        }
        const q = decodeModel(bytes, 'small.int8.onnx');
        const last = q.graph.nodes.find((n) => n.outputs[0] === output)!;
        const step = (q.graph.initializers.get(last.inputs[1]!)!.data as Float32Array)[0]!;
        const { openOrtSession } = await import('../src/ort/run-model.js');
        const ort = await openOrtSession(bytes);
        let [total, within] = [0, 0];
        try {
          for (const [i, sample] of samples.entries()) {
            const want = (await ort.run(sample))[output]!.data as Float32Array;
            want.forEach((w, j) => {
              total++;
              if (Math.abs(outputs[i]![j]! - w) <= step * 1.0001) within++;
            });
          }
        } finally {
          await ort.close();
        }
        t.diagnostic(`native INT8 bundle vs ONNX Runtime INT8: ${within}/${total} outputs within one quantization step`);
        assertWithinOneStepOfOrt(t, within, total);
      } finally {
        s.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
