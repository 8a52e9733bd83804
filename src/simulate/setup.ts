/**
 * From loaded profiles and the user's options to what the simulator runs: each model's latency
 * table at 1..N cores (measured figures kept, the rest from the scaling model), its QoS, its
 * requirement plan, and the interference calibration (from the first profile that measured the
 * noise levels' co-runners). Every refusal is one clear error naming the model or flag.
 */
import { quoteForMessage, userError } from '../errors.js';
import { buildModelTable } from '../schedule/model-table.js';
import { planModel, type ModelPlan } from '../schedule/requirement.js';
import { DEFAULT_FORK_JOIN_US, DEFAULT_MEMORY_GBPS, DEFAULT_SERIAL_FRACTION, type ScalingConstants } from '../schedule/scaling.js';
import { calibrateInterference, NO_INTERFERENCE, type InterferenceModel } from './interference.js';
import type { LoadedProfile } from './profile-sources.js';
import type { ModelSummary } from './report.js';
import { QOS } from './workloads.js';
import { unknownModel } from './experiment.js';

export interface SetupOptions {
  readonly profiles: ReadonlyMap<string, LoadedProfile>;
  readonly models: readonly string[];
  readonly weights: readonly number[];
  readonly cores: number;
  readonly qos?: ReadonlyMap<string, number>;
  readonly scale?: ReadonlyMap<string, number>;
  readonly repeat?: ReadonlyMap<string, number>;
  readonly memoryGBps?: number;
  readonly forkJoinUs?: number;
  readonly serialFraction?: number;
  readonly claimUs?: number;
  /** L3 of the simulated machine (MiB) for the interference pressure. */
  readonly l3MiB?: number;
  /** Per model: use only the profile's figures at these core counts (others held out). */
  readonly useCores?: ReadonlyMap<string, readonly number[]>;
}

/** The simulated machine's L3: a 3990X's 16 CCX × 16 MiB (an assumption, like its bandwidth). */
export const DEFAULT_L3_MIB = 256;

export interface Setup {
  readonly plans: readonly ModelPlan[];
  readonly summaries: readonly ModelSummary[];
  readonly interference: InterferenceModel;
  readonly scaling: ScalingConstants;
}

/** One core's streaming bandwidth: the strongest measured co-runner (one core) of any profile. */
function coreGBpsOf(profiles: readonly LoadedProfile[]): number | null {
  const g = profiles.flatMap((p) => p.profile.levels.map((l) => l.coRunnerGBps ?? 0)).filter((x) => x > 0);
  return g.length > 0 ? Math.max(...g) : null;
}

export function scalingConstants(o: SetupOptions, used: readonly LoadedProfile[]): ScalingConstants {
  const coreGBps = coreGBpsOf(used);
  const forkJoinUs = o.forkJoinUs ?? DEFAULT_FORK_JOIN_US;
  const serialFraction = o.serialFraction ?? DEFAULT_SERIAL_FRACTION;
  const memoryGBps = o.memoryGBps ?? DEFAULT_MEMORY_GBPS;
  const provenance = [
    `fork/join ${forkJoinUs} µs per doubling of threads and serial fraction ` +
      `${serialFraction}${
        o.forkJoinUs === undefined && o.serialFraction === undefined
          ? " (fitted to the VELTAIR artifact's 3990X ResNet-50 profile, " + '8–56 cores)'
          : ' (given)'
      }`,
    `socket bandwidth ${memoryGBps} GB/s${o.memoryGBps === undefined ? ' (assumed: four DDR4-3200 channels)' : ' (given)'}`,
    coreGBps === null
      ? 'no per-core bandwidth cap (no measured co-runner)'
      : `per-core bandwidth ${coreGBps.toFixed(1)} GB/s (the strongest measured co-runner, one core)`,
  ].join('; ');
  return { forkJoinUs, serialFraction, coreGBps, memoryGBps, provenance };
}

export function setupModels(o: SetupOptions): Setup {
  const known = [...o.profiles.keys()];
  for (const [flag, map] of [
    ['--qos', o.qos],
    ['--scale', o.scale],
    ['--repeat', o.repeat],
    ['--use-cores', o.useCores],
  ] as const) {
    for (const name of map?.keys() ?? []) {
      if (!o.models.includes(name))
        throw userError(
          'BAD_ARGUMENT',
          `${flag} names ${quoteForMessage(name)}, which is not in the simulated mix (${o.models.join(', ')})`,
          'name a model of --models / --mix',
        );
    }
  }
  const used = o.models.map((name) => o.profiles.get(name) ?? unknownModel(name, known));
  const scaling = scalingConstants(o, used);
  const plans: ModelPlan[] = [];
  const summaries: ModelSummary[] = [];
  o.models.forEach((name, i) => {
    const lp = used[i]!;
    const given = o.qos?.get(name);
    const bound = given !== undefined ? { ms: given, why: 'given with --qos' } : (QOS[name] ?? QOS[name.split('@')[0]!]);
    if (!bound) {
      throw userError(
        'BAD_ARGUMENT',
        `model ${quoteForMessage(name)} has no QoS bound (no MLPerf bound is known for it)`,
        `give one with --qos ${name}=MS`,
      );
    }
    const table = buildModelTable(lp.profile, {
      maxCores: o.cores,
      scaling,
      ...(o.scale?.has(name) ? { scale: o.scale.get(name)! } : {}),
      ...(o.repeat?.has(name) ? { repeat: o.repeat.get(name)! } : {}),
      ...(o.claimUs !== undefined ? { claimUs: o.claimUs } : {}),
      ...(o.useCores?.has(name) ? { useCores: o.useCores.get(name)! } : {}),
    });
    const plan = planModel(table, bound.ms);
    plans.push(plan);
    const claim =
      table.claimSource === 'none'
        ? 'none in the profile (0)'
        : `${(table.claimMs[1]! * 1000).toFixed(1)} µs at 1 core … ` +
          `${(table.claimMs[o.cores]! * 1000).toFixed(1)} µs at ${o.cores} (${table.claimSource} at ` +
          `the profiled team size, scaled by log2(cores) beyond: modelled)`;
    summaries.push({
      name,
      qosMs: bound.ms,
      qosWhy: bound.why,
      weight: o.weights[i]!,
      units: table.units.length,
      averageRequirement: plan.averageRequirement,
      peakRequirement: plan.peakRequirement,
      infeasibleUnits: plan.feasible.filter((x) => !x).length,
      qosReachable: plan.qosReachable,
      fastestCores: plan.fastestCores,
      fastestMs: plan.fastestMs,
      profile: lp.file,
      machine: lp.profile.machine.description,
      figures: table.sources,
      claim,
      notes: table.notes,
    });
  });
  const calibrated = used.find((p) => p.profile.levels.some((l) => l.level > 0 && l.coRunnerGBps !== null));
  const target = { gbps: scaling.memoryGBps, l3Bytes: (o.l3MiB ?? DEFAULT_L3_MIB) * 2 ** 20 };
  const interference = calibrated
    ? calibrateInterference(calibrated.profile.levels, calibrated.file, calibrated.profile.machine, target)
    : NO_INTERFERENCE;
  return { plans, summaries, interference, scaling };
}
