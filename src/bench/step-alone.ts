/**
 * Why a kernel step takes longer in the model than its profile says: for the slowest kernel steps
 * of a bundle, the same version timed four ways in one run, so that drift since the compile and
 * the state of the caches can be told apart.
 *  - model: the step's mean in whole-model runs (the executor's step timer, as step-profile.js);
 *  - alone: the step run by itself, 20 times back to back, in the session's own arena (warm: its
 *    input and weights stay in cache from one call to the next);
 *  - harness warm / harness flushed: the tuner's measurement of the same schedule, now, without and
 *    with the input and packed weights flushed from the caches before every call;
 *  - profiled: what the compile recorded for the version.
 * model ≈ alone ≈ harness warm, all above profiled: the machine has drifted since the compile.
 * model ≈ harness flushed, above alone: the step pays for its data coming from memory.
 *   node dist/src/bench/step-alone.js BUNDLE [--top 6] [--rounds 2] [--core 0]
 * A timing: run it under the benchmark lock (`flock -x "$BENCH_LOCK" …`). One thread.
 */
import { fp32Schedule } from '../bundle/manifest.js';
import { fileURLToPath } from 'node:url';
import { withKey, type WorkloadShape } from '../ir/workload.js';
import { measureCandidates } from '../measure/measure-candidates.js';
import { loadBundle } from '../runtime/session.js';
import { makeCandidate } from '../space/candidate.js';
import { median } from '../stats.js';
import { detectTarget } from '../toolchain/target.js';
import { modelFeeds } from '../compile/feeds.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';

export interface StepAlone {
  readonly step: number;
  readonly layer: string;
  readonly modelMs: number;
  readonly profiledMs: number;
  /** One entry per round. */
  readonly aloneMs: readonly number[];
  readonly harnessWarmMs: readonly (number | undefined)[];
  readonly harnessFlushedMs: readonly (number | undefined)[];
}

export async function timeStepsAlone(bundleDir: string, o: { top: number; rounds: number; core: number }): Promise<StepAlone[]> {
  const target = await detectTarget();
  const session = await loadBundle(bundleDir, { threads: 1 });
  try {
    session.setLevel(0);
    const arrays = modelFeeds(session.manifest.model.inputs);
    const feeds = Object.fromEntries(session.manifest.model.inputs.map((t, i) => [t.name, arrays[i]!]));
    const ex = session.executor;
    ex.setProfiling(true);
    session.runSync(feeds);
    const runs = 8,
      model = new Float64Array(ex.stepCount);
    for (let r = 0; r < runs; r++) {
      session.runSync(feeds);
      ex.stepTimesNs().forEach((ns, i) => {
        model[i]! += ns / runs / 1e6;
      });
    }
    const chosen = session.tunableLayers
      .map((t, i) => ({ t, v: t.versions[session.versions[i]!]! }))
      .sort((a, b) => model[b.t.step]! - model[a.t.step]!)
      .slice(0, o.top);
    const out: StepAlone[] = [];
    for (const { t, v } of chosen) {
      const spec = session.manifest.layers[t.layer]!.workloadSpec as WorkloadShape;
      const schedule = fp32Schedule(v);
      // an INT8 version has no FP32 harness to be timed in
      if (!schedule) continue;
      const candidate = makeCandidate(withKey(spec), schedule, target);
      const aloneMs: number[] = [],
        harnessWarmMs: (number | undefined)[] = [],
        harnessFlushedMs: (number | undefined)[] = [];
      for (let r = 0; r < o.rounds; r++) {
        const alone: number[] = [];
        for (let i = 0; i < 20; i++) {
          await ex.runBlock(t.step, t.step + 1, [o.core]);
          alone.push(ex.stepTimesNs()[t.step]! / 1e6);
        }
        aloneMs.push(median(alone));
        const [warm] = await measureCandidates([candidate], { cores: [o.core] });
        const [flushed] = await measureCandidates([candidate], { cores: [o.core], flushCache: true });
        harnessWarmMs.push(warm?.measurement.medianMs);
        harnessFlushedMs.push(flushed?.measurement.medianMs);
      }
      out.push({
        step: t.step,
        layer: t.name,
        modelMs: model[t.step]!,
        profiledMs: v.latencyByThreadsMs['1'] ?? v.latencyMs['0']!,
        aloneMs,
        harnessWarmMs,
        harnessFlushedMs,
      });
    }
    ex.setProfiling(false);
    return out;
  } finally {
    session.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bundle = process.argv[2];
  if (!bundle || bundle.startsWith('--')) {
    process.stderr.write('usage: node dist/src/bench/step-alone.js BUNDLE [--top 6] [--rounds 2] [--core 0]\n');
    process.exit(1);
  }
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(name);
    const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
    if (!Number.isInteger(v) || v < 0) {
      process.stderr.write(`step-alone: ${name} takes a whole number ≥ 0, not ${JSON.stringify(process.argv[i + 1] ?? '')}\n`);
      process.exit(1);
    }
    return v;
  };
  const rows = await timeStepsAlone(bundle, { top: arg('--top', 6), rounds: arg('--rounds', 2), core: arg('--core', 0) });
  const f = (x: number | undefined) => (x === undefined ? 'failed' : x.toFixed(3));
  const fs = (xs: readonly (number | undefined)[]) => xs.map(f).join(' / ');
  process.stdout.write(
    [
      `machine: ${machineLine(await machineInfo())}`,
      `${bundle}, one thread, ms (one figure per round):`,
      '| step | layer | model | alone | harness warm | harness flushed | profiled |',
      '|---|---|---|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.step} | ${r.layer} | ${f(r.modelMs)} | ${fs(r.aloneMs)} | ${fs(r.harnessWarmMs)} | ${fs(r.harnessFlushedMs)} ` +
          `| ${f(r.profiledMs)} |`,
      ),
    ].join('\n') + '\n',
  );
}
