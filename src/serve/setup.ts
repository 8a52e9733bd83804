/**
 * From the models to serve to a running dispatcher: each bundle loaded once (its instances share
 * the weights), its scheduling profile read from beside the bundle (or measured now, quiet, at
 * every core count the server may grant, and said so), its latency table over the server's cores
 * (figures beyond what was measured from the scaling model, labelled modelled in the profile's
 * summary), its QoS (configured, else `qosMultiple` × its fastest quiet latency here) and plan.
 */
import type { Manifest } from '../bundle/manifest.js';
import { readBundleProfile } from '../profile/profile-file.js';
import { measureProfile } from '../profile/measure.js';
import { loadBundle, setBlockNice, type Session } from '../runtime/session.js';
import type { KeyObject } from 'node:crypto';
import { buildModelTable } from '../schedule/model-table.js';
import type { Policy } from '../schedule/policies.js';
import type { Profile } from '../schedule/scheduling-profile.js';
import { planModel } from '../schedule/requirement.js';
import { DEFAULT_FORK_JOIN_US, DEFAULT_MEMORY_GBPS, DEFAULT_SERIAL_FRACTION, type ScalingConstants } from '../schedule/scaling.js';
import type { ModelConfig } from './config.js';
import { defaultInstances, Dispatcher, type DispatchModel } from './dispatcher.js';
import { LevelPredictor } from './level-predictor.js';
import type { ServerMetrics } from './metrics.js';

/**
 * Block threads run this much nicer than the server's own thread. Measured live on 2 cores
 * (resnet50 + mobilenet_v2 at 10 QPS): at equal priority a light request that missed its QoS had
 * waited ~30 ms (median of the misses) from its block's end to the event loop taking it; with the
 * server's other threads at nice 10, ~0.2 ms. Nice 19 did worse than 10 at 30 QPS. Nice is relative
 * to other processes too: on a machine shared with other work, the kernels yield to it more.
 */
export const DEFAULT_BLOCK_NICE = 10;

export interface SetupOptions {
  readonly models: readonly ModelConfig[];
  readonly policy: Policy;
  readonly cpus: readonly number[];
  readonly metrics: ServerMetrics;
  /** QoS of a model without one: this many times its fastest quiet latency on the server's cores. */
  readonly qosMultiple: number;
  /** Chain each request's blocks on its native worker (default true; dispatcher.ts). */
  readonly chain?: boolean;
  /** Nice value of the block threads (runtime setBlockNice; default DEFAULT_BLOCK_NICE). */
  readonly blockNice?: number;
  readonly onProgress?: (message: string) => void;
  /** Serve only bundles one of these Ed25519 keys signed (`veltair serve --trust`): checked before any kernel loads. */
  readonly trustedKeys?: readonly KeyObject[];
}

export interface ServedSetup {
  readonly dispatcher: Dispatcher;
  /** One line per model: QoS and where it came from, profile source, units, requirements. */
  readonly summaries: readonly string[];
  readonly predictor: LevelPredictor;
}

function scalingFor(profile: Profile): ScalingConstants {
  const g = profile.levels.map((l) => l.coRunnerGBps ?? 0).filter((x) => x > 0);
  return {
    forkJoinUs: DEFAULT_FORK_JOIN_US,
    serialFraction: DEFAULT_SERIAL_FRACTION,
    memoryGBps: DEFAULT_MEMORY_GBPS,
    coreGBps: g.length > 0 ? Math.max(...g) : null,
    provenance: "veltair serve: the scaling model's default constants",
  };
}

async function profileOf(m: ModelConfig, cores: number, say: (s: string) => void): Promise<{ profile: Profile; how: string }> {
  const onDisk = readBundleProfile(m.bundle, m.profile);
  if (onDisk) return { profile: onDisk.profile, how: `profile ${onDisk.file}` };
  say(
    `model ${m.name}: no profile beside the bundle; measuring one now (quiet, 1..${cores} cores; \`veltair profile\` writes a fuller one)`,
  );
  const run = await measureProfile({
    bundleDir: m.bundle,
    cores: Array.from({ length: cores }, (_, i) => i + 1),
    levels: [0],
    rounds: 1,
    runs: 3,
  });
  return { profile: run.profile, how: 'profile measured at start-up (quiet only)' };
}

export async function setupDispatcher(o: SetupOptions): Promise<ServedSetup> {
  const say = o.onProgress ?? (() => undefined);
  const N = o.cpus.length;
  // Sessions first: the runtime addon must load before any profiling pins threads (libgomp reads
  // its binding environment once, and the server pins each block itself).
  const sessions: Session[] = [];
  for (const m of o.models) sessions.push(await loadBundle(m.bundle, o.trustedKeys ? { trustedKeys: o.trustedKeys } : {}));
  await setBlockNice(o.blockNice ?? DEFAULT_BLOCK_NICE);
  const models: DispatchModel[] = [];
  const summaries: string[] = [];
  for (const [i, m] of o.models.entries()) {
    const session = sessions[i]!;
    const { profile, how } = await profileOf(m, N, say);
    const table = buildModelTable(profile, { maxCores: N, scaling: scalingFor(profile) });
    // A sparse output layer runs after the plan (runtime/sparse-head.ts): its dense version's measured time is part of the model's.
    const fastest = planModel(table, 1).fastestMs + (session.sparse?.versions[0]!.latencyMs['0'] ?? 0);
    const qosMs = m.qosMs ?? o.qosMultiple * fastest;
    const plan = planModel(table, qosMs);
    models.push({
      served: { name: m.name, inputs: session.inputs, outputs: session.outputs, qosMs, platform: 'veltair' },
      session,
      plan,
      priority: m.priority,
      maxQueue: m.maxQueue,
      maxInstances: m.replicas ?? defaultInstances(N),
    });
    const src = table.sources;
    const qosWhy = m.qosMs !== undefined ? 'configured' : `${o.qosMultiple} × its fastest quiet latency here, ${fastest.toFixed(2)} ms`;
    summaries.push(
      `${m.name}: QoS ${qosMs.toFixed(2)} ms (${qosWhy}); ` +
        `${how}; ${table.units.length} units, average requirement ${plan.averageRequirement.toFixed(2)} cores, peak ${plan.peakRequirement}; ` +
        `latency figures ${src.measured} measured, ${src.modelled} modelled`,
    );
  }
  const predictor = new LevelPredictor(
    o.cpus,
    sessions.map((s) => s.manifest as Manifest),
  );
  const dispatcher = new Dispatcher({
    models,
    policy: o.policy,
    cpus: o.cpus,
    metrics: o.metrics,
    ...(predictor.calibrated ? { predictLevel: (_cpus: readonly number[], model: number) => predictor.predict(model) } : {}),
    observeBlock: (_model, observed, expected) => predictor.observe(observed, expected),
    ...(o.chain === undefined ? {} : { chain: o.chain }),
  });
  return { dispatcher, summaries, predictor };
}
