/**
 * Where a bundle's inference time goes, step by step: the executor's own step timer (two clock
 * reads per step) over R runs on a seeded input after one warm-up run, on the level-0 versions,
 * with the bundle's thread counts (--threads N: the versions tuned for N, as `run --threads`).
 * Reports the mean per step, the kernel steps' total against the sum of their profiled level-0
 * latencies (what tuning measured for the same versions, one layer at a time), the other steps'
 * total, and the slowest steps with their observed/profiled ratio. The non-kernel share is taken
 * from each step's median over the runs (as `veltair run --profile` does): on this shared VM one
 * run in 15 stalled for a millisecond moved the mean-based share of ShuffleNet x1.0 from 8% to 14%.
 *   node dist/src/bench/step-times.js BUNDLE [--runs 15] [--top 10] [--threads N] [--json]
 * A timing: run it under the benchmark lock (`flock -x "$BENCH_LOCK" …`).
 */
import { fileURLToPath } from 'node:url';
import { loadBundle } from '../runtime/session.js';
import { modelFeeds } from '../compile/feeds.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { median } from '../stats.js';

export interface StepTime {
  readonly step: number;
  readonly kind: string;
  readonly layer: number | null;
  /** The graph plan's step this executor step runs (manifest graphPlan.steps index). */
  readonly planStep?: number;
  readonly meanMs: number;
  readonly medianMs: number;
  /** Kernel steps: the running version's profiled level-0 latency at its thread count. */
  readonly profiledMs?: number;
}

export interface StepProfile {
  readonly runs: number;
  readonly totalMs: number;
  readonly kernelMs: number;
  readonly kernelProfiledMs: number;
  readonly otherMs: number;
  /** Sums of the steps' medians: kernel steps, the others. */
  readonly medianKernelMs: number;
  readonly medianOtherMs: number;
  readonly steps: readonly StepTime[];
}

export async function profileSteps(bundleDir: string, runs: number, threads?: number): Promise<StepProfile> {
  const session = await loadBundle(bundleDir, threads === undefined ? {} : { threads });
  try {
    session.setLevel(0);
    const arrays = modelFeeds(session.manifest.model.inputs);
    const byName = Object.fromEntries(session.manifest.model.inputs.map((t, i) => [t.name, arrays[i]!]));
    session.executor.setProfiling(true);
    session.runSync(byName);
    const times = Array.from({ length: session.executor.stepCount }, () => new Array<number>(runs));
    for (let r = 0; r < runs; r++) {
      session.runSync(byName);
      session.executor.stepTimesNs().forEach((ns, i) => {
        times[i]![r] = ns / 1e6;
      });
    }
    session.executor.setProfiling(false);
    const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
    const profiled = new Map(
      session.tunableLayers.map((t, i) => {
        const v = t.versions[session.versions[i]!]!;
        return [t.step, v.latencyByThreadsMs[String(v.threads)] ?? v.latencyMs['0']] as const;
      }),
    );
    const steps: StepTime[] = session.steps.map((s) => ({
      step: s.index,
      kind: s.kind,
      layer: s.layer,
      planStep: s.planStep,
      meanMs: sum(times[s.index]!) / runs,
      medianMs: median(times[s.index]!),
      ...(profiled.get(s.index) !== undefined ? { profiledMs: profiled.get(s.index)! } : {}),
    }));
    const kernels = steps.filter((s) => s.profiledMs !== undefined),
      others = steps.filter((s) => s.profiledMs === undefined);
    return {
      runs,
      totalMs: sum(steps.map((s) => s.meanMs)),
      kernelMs: sum(kernels.map((s) => s.meanMs)),
      kernelProfiledMs: sum(kernels.map((s) => s.profiledMs!)),
      otherMs: sum(others.map((s) => s.meanMs)),
      medianKernelMs: sum(kernels.map((s) => s.medianMs)),
      medianOtherMs: sum(others.map((s) => s.medianMs)),
      steps,
    };
  } finally {
    session.close();
  }
}

/** The run's share outside tuned kernels, from the steps' medians. */
export function nonKernelShareOf(p: StepProfile): number {
  const total = p.medianKernelMs + p.medianOtherMs;
  return total > 0 ? p.medianOtherMs / total : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bundle = process.argv[2];
  if (!bundle || bundle.startsWith('--')) {
    process.stderr.write('usage: node dist/src/bench/step-times.js BUNDLE [--runs 15] [--top 10] [--threads N] [--json]\n');
    process.exit(1);
  }
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const p = await profileSteps(bundle, arg('--runs', 15), process.argv.includes('--threads') ? arg('--threads', 1) : undefined);
  if (process.argv.includes('--json')) {
    process.stdout.write(
      JSON.stringify({
        machine: await machineInfo(),
        bundle,
        nonKernelShare: nonKernelShareOf(p),
        meanNonKernelShare: p.otherMs / p.totalMs,
        ...p,
      }) + '\n',
    );
  } else {
    const f = (x: number) => x.toFixed(3);
    const top = [...p.steps].sort((a, b) => b.meanMs - a.meanMs).slice(0, arg('--top', 10));
    process.stdout.write(
      [
        `machine: ${machineLine(await machineInfo())}`,
        `${bundle}: mean of ${p.runs} profiled runs (level-0 versions): steps ${f(p.totalMs)} ms in all; kernel steps ${f(p.kernelMs)} ms ` +
          `against ${f(p.kernelProfiledMs)} ms profiled at level 0 (ratio ${(p.kernelMs / p.kernelProfiledMs).toFixed(2)}); other steps ${f(p.otherMs)} ms`,
        `steps' medians: kernel ${f(p.medianKernelMs)} ms, other ${f(p.medianOtherMs)} ms: ${(nonKernelShareOf(p) * 100).toFixed(1)}% outside tuned kernels`,
        'slowest steps:',
        ...top.map(
          (s) =>
            `  step ${s.step} ${s.kind}${s.layer === null ? '' : ` (layer ${s.layer})`}: ${f(s.meanMs)} ms` +
            (s.profiledMs !== undefined ? ` (profiled ${f(s.profiledMs)}, ratio ${(s.meanMs / s.profiledMs).toFixed(2)})` : ''),
        ),
      ].join('\n') + '\n',
    );
  }
}
