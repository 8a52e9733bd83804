/**
 * Per-step dispatch cost of the native executor: a plan of thousands of tiny steps (64-byte copies,
 * 16-element ReLUs with 2 threads allowed) against a one-step plan, in the same process and run.
 * Reported as a test diagnostic; the only assertion is relative — stepping through the flat step
 * array costs less per step than one JS → native run() call does — never an absolute time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { arenaRef, type NativePlan, type NativeStep } from '../src/runtime/native-plan.js';
import { OP, UNARY_FN } from '../src/runtime/ops.js';

const BYTES = 64;

function tinyPlan(steps: number, kind: 'copy' | 'relu'): NativePlan {
  const step = (i: number): NativeStep => ({
    op: kind === 'copy' ? OP.COPY : OP.UNARY, threads: kind === 'copy' ? 1 : 2, label: `${kind} ${i}`, floats: [0, 0],
    inputs: [arenaRef((i % 2) * BYTES)], outputs: [arenaRef(((i + 1) % 2) * BYTES)],
    ints: kind === 'copy' ? [BYTES] : [UNARY_FN['relu']!, BYTES / 4, 0, 0, 0, 0],
  });
  return {
    arenaBytes: 2 * BYTES,
    inputs: [{ name: 'x', dtype: 'float32', shape: [BYTES / 4], offset: 0, bytes: BYTES }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [BYTES / 4], offset: (steps % 2) * BYTES, bytes: BYTES }],
    steps: Array.from({ length: steps }, (_, i) => step(i)), symbols: [], params: [],
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function runTime(plan: NativePlan, reps: number): Promise<number> {
  const exec = await createExecutor(plan, null);
  const x = [new Float32Array(BYTES / 4).fill(1.5)];
  const out = [new Float32Array(BYTES / 4)];
  for (let i = 0; i < 20; i++) exec.run(x, out);
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    exec.run(x, out);
    samples.push((performance.now() - t0) * 1e6);
  }
  assert.deepEqual([...out[0]!], new Array(BYTES / 4).fill(1.5), 'the tiny steps really moved the data');
  exec.close();
  return median(samples);
}

test('per-step dispatch costs less than one JS → native run() call', async (t) => {
  const many = 20_000;
  for (const kind of ['copy', 'relu'] as const) {
    const one = await runTime(tinyPlan(1, kind), 400);
    const lots = await runTime(tinyPlan(many, kind), 60);
    const perStep = (lots - one) / (many - 1);
    t.diagnostic(`${kind}: run() of 1 step ${one.toFixed(0)} ns, of ${many} steps ${(lots / 1e3).toFixed(1)} µs → ${perStep.toFixed(1)} ns per step `
      + '(median; machine shared and noisy)');
    assert.ok(perStep < one, `${kind}: ${perStep.toFixed(1)} ns per step vs ${one.toFixed(0)} ns per run() call`);
  }
});
