/**
 * The native executor's per-step dispatch cost: a plan of N tiny steps (64-byte copies, or
 * 16-element ReLUs with 2 threads allowed) against a one-step plan, run back to back in one
 * process; per step = (median run of N steps − median run of 1 step) / (N − 1), with the one-step
 * run (one JS → native call) beside it.
 *   node dist/src/bench/dispatch.js [--steps 20000] [--reps 60] [--json]
 * Run it under the benchmark lock (`flock -x "$BENCH_LOCK" …`): the figure is a timing.
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createExecutor } from '../runtime/native-bridge.js';
import { arenaRef, type NativePlan, type NativeStep } from '../runtime/native-plan.js';
import { OP, UNARY_FN } from '../runtime/ops.js';
import { median } from '../stats.js';

const BYTES = 64;

/** `steps` steps ping-ponging a 64-byte value between two arena slots (also the dispatch test's plan). */
export function tinyStepPlan(steps: number, kind: 'copy' | 'relu'): NativePlan {
  const step = (i: number): NativeStep => ({
    op: kind === 'copy' ? OP.COPY : OP.UNARY,
    threads: kind === 'copy' ? 1 : 2,
    label: `${kind} ${i}`,
    floats: [0, 0],
    inputs: [arenaRef((i % 2) * BYTES)],
    outputs: [arenaRef(((i + 1) % 2) * BYTES)],
    inputBytes: [BYTES],
    outputBytes: [BYTES],
    ints: kind === 'copy' ? [BYTES] : [UNARY_FN['relu']!, BYTES / 4, 0, 0, 0, 0],
  });
  return {
    arenaBytes: 2 * BYTES,
    inputs: [{ name: 'x', dtype: 'float32', shape: [BYTES / 4], offset: 0, bytes: BYTES }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [BYTES / 4], offset: (steps % 2) * BYTES, bytes: BYTES }],
    steps: Array.from({ length: steps }, (_, i) => step(i)),
    symbols: [],
    params: [],
  };
}

async function medianRunNs(plan: NativePlan, reps: number): Promise<number> {
  const exec = await createExecutor(plan, null);
  const x = [new Float32Array(BYTES / 4).fill(1.5)];
  const out = [new Float32Array(BYTES / 4)];
  try {
    for (let i = 0; i < 20; i++) exec.run(x, out);
    const samples: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      exec.run(x, out);
      samples.push((performance.now() - t0) * 1e6);
    }
    return median(samples);
  } finally {
    exec.close();
  }
}

export interface DispatchCost {
  readonly kind: 'copy' | 'relu';
  readonly steps: number;
  readonly oneStepRunNs: number;
  readonly perStepNs: number;
}

export async function dispatchCost(steps: number, reps: number): Promise<DispatchCost[]> {
  const out: DispatchCost[] = [];
  for (const kind of ['copy', 'relu'] as const) {
    const one = await medianRunNs(tinyStepPlan(1, kind), reps * 6);
    const many = await medianRunNs(tinyStepPlan(steps, kind), reps);
    out.push({ kind, steps, oneStepRunNs: one, perStepNs: (many - one) / (steps - 1) });
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const results = await dispatchCost(arg('--steps', 20_000), arg('--reps', 60));
  if (process.argv.includes('--json')) process.stdout.write(JSON.stringify(results) + '\n');
  else
    for (const r of results) {
      process.stdout.write(
        `${r.kind}: one run() of 1 step ${r.oneStepRunNs.toFixed(0)} ns; ` +
          `${r.perStepNs.toFixed(1)} ns per step over ${r.steps} steps (medians)\n`,
      );
    }
}
