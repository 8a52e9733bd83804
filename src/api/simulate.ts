/**
 * `simulate` for library users: `veltair simulate`'s experiment — seeded, deterministic, every
 * figure SIMULATED from measured profiles (beyond the profiled core counts, modelled by the
 * scaling model) — returned as data instead of printed. The same steps as the command
 * (src/cli/simulate.ts): load the profiles, set up the models, run every policy at every load.
 */
import { quoteForMessage, userError } from '../errors.js';
import { parsePolicyList } from '../schedule/policies.js';
import { equalWeights, runExperiment, type ExperimentResult, type LoadSpec } from '../simulate/experiment.js';
import { loadProfiles } from '../simulate/profile-sources.js';
import { setupModels, type Setup } from '../simulate/setup.js';
import { MIXES } from '../simulate/workloads.js';
import { dispatchLabel } from '../simulate/engine.js';

/** Options of {@link simulate}; `veltair simulate`'s flags, one field each. */
export interface SimulateOptions {
  /** Profile files (`veltair profile`), bundle directories, or directories of *.profile.json. */
  readonly profiles: readonly string[];
  /** Models to serve, by profile name; or give `mix`. */
  readonly models?: readonly string[];
  /** A named mix of models instead of `models` (see `veltair simulate --help`). */
  readonly mix?: string;
  /** Simulated cores (default 64). */
  readonly cores?: number;
  /** Scheduling policies to compare (default ['fcfs', 'veltair']). */
  readonly policies?: readonly string[];
  /** Offered load: requests per second, fractions of capacity, or a search for each policy's maximum (default load 0.5). */
  readonly load?: LoadSpec;
  /** Arrival seed (default 1): the same options give the same result. */
  readonly seed?: number;
  /** Seconds of arrivals (default 10), the first `warmupS` (default 1) not counted. */
  readonly durationS?: number;
  readonly warmupS?: number;
  /** Stop a point after this many events (default 50 000 000). */
  readonly maxEvents?: number;
  /** Simulate chained dispatch, as the server runs it (default true); false: a hand-off per block. */
  readonly chain?: boolean;
  /** Per-model QoS target in ms, by model name (default: from the profile). */
  readonly qosMs?: Readonly<Record<string, number>>;
}

export interface SimulateResult extends ExperimentResult {
  /** Always true: every figure is simulated, none measured. */
  readonly simulated: true;
  /** What was simulated, on which profiles. */
  readonly label: string;
  readonly models: Setup['summaries'];
}

function modelNames(o: SimulateOptions): string[] {
  if ((o.mix === undefined) === (o.models === undefined)) {
    throw userError('BAD_ARGUMENT', 'give exactly one of mix and models', `mixes: ${Object.keys(MIXES).join(', ')}`);
  }
  if (o.mix !== undefined) {
    const mix = MIXES[o.mix];
    if (!mix)
      throw userError('BAD_ARGUMENT', `mix ${quoteForMessage(o.mix)} is not one of ${Object.keys(MIXES).join(', ')}`, "e.g. mix: 'medium'");
    return [...mix];
  }
  return [...o.models!];
}

function positive(name: string, x: number, integer = false): number {
  if (!Number.isFinite(x) || x <= 0 || (integer && !Number.isSafeInteger(x))) {
    throw userError('BAD_ARGUMENT', `${name} ${JSON.stringify(x)} is not a positive ${integer ? 'integer' : 'number'}`, `e.g. ${name}: 4`);
  }
  return x;
}

/** Run the experiment: every policy at every offered load, on the same arrivals. */
export function simulate(o: SimulateOptions): SimulateResult {
  const cores = positive('cores', o.cores ?? 64, true);
  const durationMs = positive('durationS', o.durationS ?? 10) * 1000;
  const warmupMs = (o.warmupS ?? 1) * 1000;
  if (!(warmupMs >= 0 && warmupMs < durationMs)) {
    throw userError('BAD_ARGUMENT', `warmupS ${o.warmupS} is not from 0 to below durationS`, 'e.g. durationS: 10, warmupS: 1');
  }
  const seed = o.seed ?? 1;
  if (!Number.isSafeInteger(seed) || seed < 0 || seed > 2 ** 32 - 1) {
    throw userError('BAD_ARGUMENT', `seed ${seed} is not an integer from 0 to 2^32-1`, 'e.g. seed: 1');
  }
  const policies = parsePolicyList((o.policies ?? ['fcfs', 'veltair']).join(','));
  const models = modelNames(o);
  const profiles = loadProfiles(o.profiles);
  const weights = equalWeights(models.length);
  const setup = setupModels({ profiles, models, weights, cores, ...(o.qosMs ? { qos: new Map(Object.entries(o.qosMs)) } : {}) });
  const result = runExperiment({
    models: setup.plans.map((plan, i) => ({ plan, weight: weights[i]! })),
    cores,
    policies,
    seed,
    durationMs,
    warmupMs,
    maxSimMs: durationMs * 10 + 10_000,
    maxEvents: positive('maxEvents', o.maxEvents ?? 50_000_000, true),
    interference: setup.interference,
    loads: o.load ?? { kind: 'load', values: [0.5] },
    timeDecisions: false,
    chain: o.chain !== false,
  });
  const label =
    `simulated: ${cores} cores; profiles ${[...new Set(setup.summaries.map((s) => s.machine))].join(' | ')}; figures beyond the profiled core ` +
    `counts modelled by the scaling model; ${dispatchLabel(o.chain !== false)}`;
  return { ...result, simulated: true, label, models: setup.summaries };
}
