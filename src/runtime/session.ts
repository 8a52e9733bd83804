/**
 * The public runtime API: `loadBundle(dir)` → a Session that runs the model.
 *
 * Loading = readBundle (format major, JSON Schema, paths stay inside the bundle, every file's size
 * and sha256, the CPU's ISA) → the native executor (bundle-executor.ts) → every tunable layer on
 * its best version at the starting level. Running is synchronous native code (one N-API call per
 * inference, the whole plan in C); `run` wraps it in a Promise so a later thread-pool executor can
 * keep the signature, `runSync` is the same call without the Promise for hot loops.
 *
 * Versions: a *version vector* has one entry per tunable layer (in `tunableLayers` order): an
 * index into that layer's `versions`. `versionsForLevel(l)` is the vector of each layer's lowest
 * profiled latency at interference level l; `useVersions(v)` switches to any vector;
 * `setLevel(l)` does both. The interference proxy drives these (or the executor directly).
 */
import type { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { readBundle, type LoadedBundle, type ReadOptions } from '../bundle/read.js';
import { trustedKeyFrom } from '../bundle/sign.js';
import type { Manifest, ManifestVersion } from '../bundle/manifest.js';
import { userError, quoteForMessage } from '../errors.js';
import { executorForBundle } from './bundle-executor.js';
import type { Executor } from './native-bridge.js';
import { orderFeeds, type Feeds, type TensorInfo } from './feeds.js';
import type { HostTensor } from './host-tensor.js';
import { bestVersionAt, kernelSteps } from './version-picker.js';

export type { Feed, Feeds, TensorInfo } from './feeds.js';
export type { HostTensor, TensorData } from './host-tensor.js';

export interface LoadBundleOptions {
  /**
   * One thread count for every step, kernels included. Default: each kernel runs at the thread
   * count its version was tuned and profiled at; the other ops at the bundle's widest tuned count.
   */
  readonly threads?: number;
  /** Interference level whose best versions the session starts on (default 0). */
  readonly level?: number;
  /** Pin OpenMP threads to cores (OMP_PROC_BIND=close, OMP_PLACES=cores) unless already set. */
  readonly pinThreads?: boolean;
  /** Passed to readBundle (tests fake the machine's CPU flags; a trusted caller may skip hashing). */
  readonly read?: ReadOptions;
  /**
   * Run the bundle only if one of these Ed25519 keys (KeyObjects or PEM text) signed it
   * (`veltair compile --sign`): an unsigned bundle is UNSIGNED_BUNDLE, a wrong signature
   * BAD_SIGNATURE, a file changed since signing BAD_BUNDLE — before any native code is loaded.
   */
  readonly trustedKeys?: readonly (KeyObject | string)[];
}

/** A layer with a family of compiled versions the session can switch between. */
export interface TunableLayer {
  /** Manifest layer index and the model's node name (display only). */
  readonly layer: number;
  readonly name: string;
  readonly op: string;
  /** The executor's step index (what Executor.setVersion takes). */
  readonly step: number;
  /** The versions in executor order, with their profiles (latencyMs per level, threads). */
  readonly versions: readonly ManifestVersion[];
}

export interface Session {
  /** The bundle directory (absolute, symlinks resolved). */
  readonly path: string;
  readonly manifest: Manifest;
  /** Non-fatal load findings (e.g. tuned on another CPU model). */
  readonly warnings: readonly string[];
  /** Key id of the trusted key that signed the bundle (loaded with trustedKeys), else undefined. */
  readonly signedBy: string | undefined;
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  /** Interference levels the bundle's versions were profiled at. */
  readonly levels: readonly number[];
  readonly tunableLayers: readonly TunableLayer[];
  /** The version vector in use. */
  readonly versions: readonly number[];
  /** The level whose picks are in use; undefined after useVersions with another vector. */
  readonly level: number | undefined;
  /** Advanced: the native executor and plan-step → executor-step map (for the interference proxy). */
  readonly executor: Executor;
  readonly stepOfPlan: readonly number[];
  /** Run once; feeds by input name. Resolves to every output by name (fresh arrays). */
  run(feeds: Feeds): Promise<Record<string, HostTensor>>;
  runSync(feeds: Feeds): Record<string, HostTensor>;
  versionsForLevel(level: number): number[];
  useVersions(vector: readonly number[]): void;
  /** useVersions(versionsForLevel(level)); returns the vector. */
  setLevel(level: number): number[];
  /** Change the thread override (undefined: back to each version's own count). */
  setThreads(threads: number | undefined): void;
  close(): void;
}

const MAX_LEVEL = 4;

function checkLevel(level: number): void {
  if (!Number.isInteger(level) || level < 0 || level > MAX_LEVEL) {
    throw userError('BAD_ARGUMENT', `interference level ${quoteForMessage(String(level))} is not an integer from 0 to ${MAX_LEVEL}`,
      'levels are 0 (quiet) to 4 (heaviest co-runner)');
  }
}

function checkThreads(threads: number | undefined): void {
  if (threads !== undefined && (!Number.isInteger(threads) || threads < 1 || threads > 4096)) {
    throw userError('BAD_ARGUMENT', `thread count ${quoteForMessage(String(threads))} is not an integer from 1 to 4096`, 'e.g. threads: 1');
  }
}

/** Widest thread count the bundle's versions were tuned with, bounded by this machine. */
function defaultOpThreads(m: Manifest): number {
  const tuned = Math.max(1, ...m.options.threads);
  return Math.max(1, Math.min(tuned, availableParallelism()));
}

function tunableLayersOf(b: LoadedBundle, stepOfPlan: readonly number[]): TunableLayer[] {
  const layers = new Map(b.manifest.layers.map((l) => [l.index, l]));
  return kernelSteps(b.manifest, stepOfPlan).map((k) => {
    const l = layers.get(k.layer)!;
    return { layer: k.layer, name: l.name, op: l.op, step: k.step, versions: k.versions };
  });
}

export async function loadBundle(path: string, options: LoadBundleOptions = {}): Promise<Session> {
  checkThreads(options.threads);
  if (options.level !== undefined) checkLevel(options.level);
  const trustedKeys = options.trustedKeys?.map((k) => trustedKeyFrom(k));
  const bundle = await readBundle(path, { ...(options.read ?? {}), ...(trustedKeys ? { trustedKeys } : {}) });
  const opThreads = options.threads ?? defaultOpThreads(bundle.manifest);
  const { executor, translated } = await executorForBundle(bundle, {
    threads: opThreads, ...(options.pinThreads ? { pinThreads: true } : {}),
  });
  return createSession(bundle, executor, translated.stepOfPlan, options, opThreads);
}

function createSession(bundle: LoadedBundle, executor: Executor, stepOfPlan: readonly number[], options: LoadBundleOptions, opThreads: number): Session {
  const m = bundle.manifest;
  const tunable = tunableLayersOf(bundle, stepOfPlan);
  const inputs: TensorInfo[] = executor.inputs.map((t) => ({ name: t.name, dtype: t.dtype, shape: [...t.shape] }));
  const outputs: TensorInfo[] = executor.outputs.map((t) => ({ name: t.name, dtype: t.dtype, shape: [...t.shape] }));
  let threadOverride = options.threads;
  let current: number[] = tunable.map(() => -1);
  let level: number | undefined;
  let closed = false;

  const live = () => {
    if (closed) throw userError('BAD_ARGUMENT', `the session for ${bundle.paths.dir} is closed`, 'load the bundle again with loadBundle');
  };
  const applyThreads = () => {
    if (threadOverride !== undefined) { executor.setAllThreads(threadOverride); return; }
    executor.setAllThreads(opThreads);
    tunable.forEach((t, i) => executor.setThreads(t.step, Math.max(1, t.versions[Math.max(0, current[i]!)]!.threads)));
  };
  const versionsForLevel = (l: number): number[] => {
    checkLevel(l);
    return tunable.map((t) => bestVersionAt(t.versions, l));
  };
  const useVersions = (vector: readonly number[]): void => {
    live();
    if (!Array.isArray(vector) || vector.length !== tunable.length) {
      throw userError('BAD_ARGUMENT',
        `a version vector has one entry per tunable layer (${tunable.length}); got ${Array.isArray(vector) ? vector.length : typeof vector}`,
        'start from session.versionsForLevel(level)');
    }
    vector.forEach((v, i) => {
      const t = tunable[i]!;
      if (!Number.isInteger(v) || v < 0 || v >= t.versions.length) {
        throw userError('BAD_ARGUMENT',
          `layer ${t.layer} (${quoteForMessage(t.name)}) has ${t.versions.length} version(s); ${quoteForMessage(String(v))} is not one of them`,
          'version indices count from 0 in session.tunableLayers[i].versions');
      }
    });
    vector.forEach((v, i) => { if (current[i] !== v) executor.setVersion(tunable[i]!.step, v); });
    current = [...vector];
    level = undefined;
    applyThreads();
  };
  const setLevel = (l: number): number[] => {
    const vector = versionsForLevel(l);
    useVersions(vector);
    level = l;
    return vector;
  };
  const runSync = (feeds: Feeds): Record<string, HostTensor> => {
    live();
    const arrays = orderFeeds(inputs, feeds);
    const results = executor.run(arrays);
    const out: Record<string, HostTensor> = {};
    outputs.forEach((o, i) => { out[o.name] = { dtype: o.dtype, shape: o.shape, data: results[i] as HostTensor['data'] }; });
    return out;
  };

  setLevel(options.level ?? 0);
  return {
    path: bundle.paths.dir, manifest: m, warnings: bundle.warnings, signedBy: bundle.signedBy, inputs, outputs,
    levels: [...m.options.levels], tunableLayers: tunable, executor, stepOfPlan,
    get versions() { return [...current]; },
    get level() { return level; },
    run: async (feeds) => runSync(feeds),
    runSync, versionsForLevel, useVersions, setLevel,
    setThreads(threads) { live(); checkThreads(threads); threadOverride = threads; applyThreads(); },
    close() { if (!closed) { closed = true; executor.close(); } },
  };
}
