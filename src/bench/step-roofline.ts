/**
 * Where a model's time goes against this machine's limits ("the per-step profile says
 * which steps, as a fraction of the memory-bandwidth or FMA limit measured in the same run").
 *
 * Each step of a bundle's level-0 run is timed as step-times.ts times it (median over R runs after a
 * warm-up, --threads N). Right after, in the same process and on the same cores, the FMA peak
 * (measure/peak.ts) and memcpy's bandwidth at each step's traffic size (measure/copy-bandwidth.ts) are
 * measured. A step's limit is the larger of
 *   - its compute time: 2 × its layer's MACs / the FMA peak (an INT8 layer: / the u8×s8 dot-product
 *     peak, VNNI where the CPU has it, measured the same way), and
 *   - its traffic time: its compulsory bytes (distinct activation inputs, outputs and parameters, once
 *     each) / memcpy's bytes-moved rate at that size;
 * its fraction of the limit is limit / observed median (1 = at the machine's limit). Steps are grouped by
 * what they compute (conv k×k, conv 1×1, depthwise, grouped, dense, batch matmul, each runtime op kind).
 *
 *   node dist/src/bench/step-roofline.js BUNDLE [--threads 1] [--runs 30] [--json]
 * A timing: run it under the benchmark lock (`flock -x "$BENCH_LOCK" …`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GraphPlan } from '../bundle/plan.js';
import { workloadMacs, type WorkloadShape } from '../ir/workload.js';
import { measureCopyBandwidth } from '../measure/copy-bandwidth.js';
import { measurePeakGflops, measurePeakInt8Gops } from '../measure/peak.js';
import { availableCores } from '../toolchain/cpu.js';
import { bytesMoved, copySizeFor } from './op-bandwidth.js';
import { profileSteps } from './step-times.js';

/** One step's work and its observed time. */
export interface StepCost {
  /** What it computes: 'conv 3×3', 'conv 1×1', 'depthwise conv', 'dense', 'batch matmul', or the runtime op kind. */
  readonly group: string;
  readonly layer: number | null;
  readonly ms: number;
  readonly flops: number;
  /** Compulsory traffic: what the step must read and write at least once. */
  readonly bytes: number;
  /** An INT8 kernel: held to the INT8 dot-product peak, not the FMA peak. */
  readonly int8?: boolean;
}

/** What bounds a step: the FMA peak, the INT8 dot-product peak, or memory. */
export type Bound = 'fma' | 'int8' | 'memory';

export interface StepLimit extends StepCost {
  /** 2 × MACs at the peak that holds this step (FMA, or INT8 for an INT8 kernel). */
  readonly computeMs: number;
  readonly memoryMs: number;
  /** max(computeMs, memoryMs). */
  readonly limitMs: number;
  readonly bound: Bound;
  /** limitMs / ms. */
  readonly fraction: number;
}

/** A step against the machine's limits (peaks in GFLOP/s and INT8 GOP/s, memcpy's bytes moved in GB/s). */
export function stepLimit(s: StepCost, peakGflops: number, copyGbps: number, int8PeakGops = 0): StepLimit {
  const peak = s.int8 ? int8PeakGops : peakGflops;
  const computeMs = peak > 0 ? s.flops / peak / 1e6 : 0;
  const memoryMs = copyGbps > 0 ? s.bytes / copyGbps / 1e6 : 0;
  const limitMs = Math.max(computeMs, memoryMs);
  const bound: Bound = computeMs < memoryMs ? 'memory' : s.int8 ? 'int8' : 'fma';
  return { ...s, computeMs, memoryMs, limitMs, bound, fraction: s.ms > 0 ? limitMs / s.ms : 0 };
}

/** What a tunable layer computes, as the groups of a profile name it. */
export function groupOf(w: WorkloadShape): string {
  if (w.op === 'dense') return 'dense';
  if (w.op === 'batch_matmul') return 'batch matmul';
  if (w.groups > 1 && w.groups === w.cin && w.groups === w.cout) return 'depthwise conv';
  if (w.groups > 1) return 'grouped conv';
  return w.kh === 1 && w.kw === 1 ? 'conv 1×1' : `conv ${w.kh}×${w.kw}`;
}

/** What an INT8 kernel layer (qconv2d / qmatmul, from its manifest shapes and attrs) computes, in a profile's groups. */
export function int8Work(
  l: Pick<ManifestLayer, 'op' | 'inputShapes' | 'outputShape' | 'attrs'>,
): { group: string; macs: number } | undefined {
  const count = (d: readonly number[]): number => d.reduce((a, b) => a * b, 1);
  if (l.op === 'qmatmul') {
    const x = l.inputShapes[0]!;
    return { group: 'int8 dense', macs: count(x) * l.outputShape[l.outputShape.length - 1]! };
  }
  if (l.op !== 'qconv2d') return undefined;
  const [kh, kw] = l.attrs['kernel'] as readonly number[];
  const groups = l.attrs['groups'] as number;
  const [cin, cout] = [l.inputShapes[0]![1]!, l.outputShape[1]!];
  const shape = groups > 1 && groups === cin && groups === cout ? 'depthwise conv' : groups > 1 ? 'grouped conv' : `conv ${kh}×${kw}`;
  return { group: `int8 ${shape}`, macs: count(l.outputShape) * (cin / groups) * kh! * kw! };
}

export interface GroupLimit {
  readonly group: string;
  readonly steps: number;
  readonly ms: number;
  /** Of the profile's total. */
  readonly share: number;
  /** The group's summed limit / its summed time. */
  readonly fraction: number;
  /** The bound of most of the group's limit time. */
  readonly bound: Bound;
}

/** Steps summed by group, largest time first. */
export function groupLimits(steps: readonly StepLimit[]): GroupLimit[] {
  const total = steps.reduce((s, x) => s + x.ms, 0);
  const by = new Map<string, { steps: number; ms: number; limit: number; byBound: Record<Bound, number> }>();
  for (const s of steps) {
    const g = by.get(s.group) ?? { steps: 0, ms: 0, limit: 0, byBound: { fma: 0, int8: 0, memory: 0 } };
    by.set(s.group, {
      steps: g.steps + 1,
      ms: g.ms + s.ms,
      limit: g.limit + s.limitMs,
      byBound: { ...g.byBound, [s.bound]: g.byBound[s.bound] + s.limitMs },
    });
  }
  // Ties go to a compute bound, the FMA one first (a group with no limit at all reads 'fma').
  const most = (b: Record<Bound, number>): Bound => (['fma', 'int8', 'memory'] as const).reduce((x, y) => (b[y] > b[x] ? y : x));
  return [...by]
    .map(([group, g]) => ({
      group,
      steps: g.steps,
      ms: g.ms,
      share: total > 0 ? g.ms / total : 0,
      fraction: g.ms > 0 ? g.limit / g.ms : 0,
      bound: most(g.byBound),
    }))
    .sort((a, b) => b.ms - a.ms);
}

export interface Roofline {
  readonly threads: number;
  readonly runs: number;
  readonly peakGflops: number;
  /** The INT8 dot-product peak (GOP/s), measured only when the bundle has INT8 kernels. */
  readonly int8PeakGops: number | null;
  /** memcpy's bytes moved per second for a 64 MiB copy (out of cache), for the reader. */
  readonly memoryGbps: number;
  /** Sum of the steps' medians. */
  readonly totalMs: number;
  /** Sum of the steps' limits / totalMs: how far the whole run is from the machine's limit. */
  readonly fraction: number;
  readonly groups: readonly GroupLimit[];
  readonly steps: readonly StepLimit[];
}

interface ManifestLayer {
  readonly op: string;
  readonly inputShapes: readonly (readonly number[])[];
  readonly outputShape: readonly number[];
  readonly attrs: Readonly<Record<string, unknown>>;
  readonly tunable: boolean;
  readonly workloadSpec?: WorkloadShape;
  readonly params?: Readonly<Record<string, { readonly length: number }>>;
}

/** Profile a bundle's steps at `threads`, then measure the limits on the same cores. */
export async function roofline(bundle: string, threads: number, runs: number): Promise<Roofline> {
  const manifest = JSON.parse(await readFile(join(bundle, 'manifest.json'), 'utf8')) as { layers: ManifestLayer[]; graphPlan: GraphPlan };
  const plan = manifest.graphPlan;
  const bytesOf = new Map(plan.values.map((v) => [v.id, v.bytes]));
  const profile = await profileSteps(bundle, runs, threads);
  const costs: StepCost[] = profile.steps.map((s) => {
    const layer = s.layer === null ? undefined : manifest.layers[s.layer];
    const planStep = s.planStep === undefined ? undefined : plan.steps[s.planStep];
    const activations = planStep ? bytesMoved(planStep, s.kind, (id) => bytesOf.get(id) ?? 0) : 0;
    const params = Object.values(layer?.params ?? {}).reduce((sum, p) => sum + p.length, 0);
    const spec = layer?.tunable ? layer.workloadSpec : undefined;
    const int8 = layer === undefined ? undefined : int8Work(layer);
    return {
      group: int8?.group ?? (spec ? groupOf(spec) : s.kind),
      int8: int8 !== undefined,
      layer: s.layer,
      ms: s.medianMs,
      flops: int8 ? 2 * int8.macs : spec ? 2 * workloadMacs(spec) : 0,
      bytes: activations + params,
    };
  });
  const cores = availableCores().slice(0, threads);
  const peak = await measurePeakGflops({ cores, reps: 5 });
  const int8Peak = costs.some((c) => c.int8) ? await measurePeakInt8Gops({ cores, reps: 5 }) : undefined;
  const out = 64 * 2 ** 20;
  const bw = await measureCopyBandwidth([...costs.filter((c) => c.bytes > 0).map((c) => copySizeFor(c.bytes)), out], {
    cores,
    ms: 10,
    reps: 3,
  });
  const steps = costs.map((c) => stepLimit(c, peak.gflops, c.bytes > 0 ? bw.get(copySizeFor(c.bytes))! : 0, int8Peak?.gops ?? 0));
  const totalMs = steps.reduce((s, x) => s + x.ms, 0);
  const limitMs = steps.reduce((s, x) => s + x.limitMs, 0);
  return {
    threads,
    runs,
    peakGflops: peak.gflops,
    int8PeakGops: int8Peak?.gops ?? null,
    memoryGbps: bw.get(out)!,
    totalMs,
    fraction: totalMs > 0 ? limitMs / totalMs : 0,
    groups: groupLimits(steps),
    steps,
  };
}

const BOUND_NAME: Readonly<Record<Bound, string>> = { fma: 'FMA', int8: 'INT8 peak', memory: 'memory' };

/** "conv 3×3 41% of the time at 58% of FMA; …" for the groups that hold most of the time. */
export function describeRoofline(r: Pick<Roofline, 'groups' | 'fraction'>, top = 3): string {
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const parts = r.groups.slice(0, top).map((g) => `${g.group} ${pct(g.share)} at ${pct(g.fraction)} of ${BOUND_NAME[g.bound]}`);
  return `${parts.join('; ')} (whole run at ${pct(r.fraction)} of its limit)`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bundle = process.argv[2];
  if (!bundle || bundle.startsWith('--')) {
    process.stderr.write('usage: node dist/src/bench/step-roofline.js BUNDLE [--threads 1] [--runs 30] [--json]\n');
    process.exit(1);
  }
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const r = await roofline(bundle, arg('--threads', 1), arg('--runs', 30));
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify(r)}\n`);
  } else {
    const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
    process.stdout.write(
      [
        `${bundle}, ${r.threads} thread(s), medians of ${r.runs} runs: ${r.totalMs.toFixed(3)} ms; FMA peak ${r.peakGflops.toFixed(0)} GFLOP/s, ` +
          (r.int8PeakGops === null ? '' : `INT8 peak ${r.int8PeakGops.toFixed(0)} GOP/s, `) +
          `memcpy out of cache ${r.memoryGbps.toFixed(1)} GB/s moved (both measured now, same cores)`,
        '| group | steps | ms | share | fraction of limit | bound |',
        '|---|---|---|---|---|---|',
        ...r.groups.map((g) => `| ${g.group} | ${g.steps} | ${g.ms.toFixed(3)} | ${pct(g.share)} | ${pct(g.fraction)} | ${g.bound} |`),
      ].join('\n') + '\n',
    );
  }
}
