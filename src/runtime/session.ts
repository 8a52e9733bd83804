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
 * index into that layer's `versions`. A layer ships one family per thread count it was tuned at;
 * `versionsForLevel(l)` is the vector of each layer's lowest profiled latency at interference
 * level l among the versions tuned for the session's thread count (`threads`, default: the widest
 * tuned count that leaves a core free); `versionsFor(l, t)` the same for t threads; `useVersions(v)`
 * switches to any vector; `setLevel(l)` does both. The interference proxy drives these (or the
 * executor directly). A block run on c cores without versions runs the versions tuned for c.
 *
 * Sharing a CPU: `run` and `begin` execute off the event loop, on the session's own native thread,
 * with the OpenMP team pinned to the cores given (default: the first `threads` cores this process
 * may use). An inference can run as a sequence of *blocks* — consecutive native steps, each on its
 * own core set with its own versions — which is what the scheduler grants (src/schedule). A session
 * has one activation arena, so inferences on it are queued, never interleaved; `replicate()` gives
 * another session of the same model (its own arena, the same weights) to run two at once.
 */
import type { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { availableCores } from '../toolchain/cpu.js';
import { readBundle, type LoadedBundle, type ReadOptions } from '../bundle/read.js';
import { trustedKeyFrom } from '../bundle/sign.js';
import type { Manifest, ManifestVersion } from '../bundle/manifest.js';
import { userError, quoteForMessage } from '../errors.js';
import { executorForBundle } from './bundle-executor.js';
import { loadRuntimeAddon, type Executor } from './native-bridge.js';
import { orderFeeds, type Feeds, type TensorInfo } from './feeds.js';
import type { HostTensor } from './host-tensor.js';
import { bestVersionAt, defaultThreadsOf, kernelSteps } from './version-picker.js';
import { hasSparseHead, loadSparseHead, type SparseHead, type SparseHeadControl, type SparseOptions } from './sparse-head.js';

export type { Feed, Feeds, TensorInfo } from './feeds.js';
export type { HostTensor, TensorData } from './host-tensor.js';

export interface LoadBundleOptions {
  /**
   * One thread count for every step, kernels included, and the versions tuned for that count (the
   * nearest tuned count below it when the bundle has none at it). Default: the widest tuned count
   * that leaves a core free (bounded by this machine); each kernel runs at its version's tuned count.
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
  /**
   * For a bundle with a sparse output layer (sparse-head.ts): an accuracy floor, e.g.
   * { minRecallAt1: 0.95 } runs the fastest kept version meeting it; without one, the densest.
   */
  readonly sparse?: SparseOptions;
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

/** One native step of the plan: the unit a block is made of. */
export interface SessionStep {
  /** Executor step index (block boundaries are step indices). */
  readonly index: number;
  /** graphPlan step it runs, and the manifest layer (null: a layout reorder). */
  readonly planStep: number;
  readonly layer: number | null;
  /** 'kernel' (a tunable layer with versions) or the runtime op's layer kind / 'reorder'. */
  readonly kind: string;
  readonly tunable: boolean;
}

export interface BlockOptions {
  /** Cores the block runs on, pinned (one OpenMP thread per core). */
  readonly cores: readonly number[];
  /** A full version vector (tunableLayers order); only the block's steps are switched (and read). */
  readonly versions?: ArrayLike<number>;
  /**
   * Or: each layer's best version at this interference level among those tuned for the block's
   * core count. With none of versions, level and stepVersions: the versions tuned for the block's
   * core count at the session's level (0 after useVersions).
   */
  readonly level?: number;
  /** Or: step index → version index for the block's tunable steps (what the scheduler decides). */
  readonly stepVersions?: ReadonlyMap<number, number>;
  /**
   * Make it a chain: steps (ascending, strictly inside (next, to)) where the native worker reads
   * the inference's preemption flag (`preempt()`) and, when it is raised, ends the block there.
   * Between stops the steps run back to back on the worker, with no hand-off to JS.
   */
  readonly stops?: readonly number[] | Int32Array;
  /** Start the chain with its preemption flag raised: it ends at its first stop. */
  readonly preempted?: boolean;
}

export interface BlockResult {
  /** First step and one past the last step that ran (a preempted chain: the stop it ended at). */
  readonly from: number;
  readonly to: number;
  /** The CPU each team thread was on when the block started. */
  readonly cpus: readonly number[];
  /** The block's native start and end (CLOCK_MONOTONIC ns). */
  readonly startNs: number;
  readonly endNs: number;
}

/** One inference in flight on a session, run block by block. */
export interface Inference {
  /** The next step to run (steps.length when done). */
  readonly next: number;
  /** Run steps [next, to) as one block (or a chain that a preemption may end at one of its stops). */
  block(to: number, options: BlockOptions): Promise<BlockResult>;
  /** Raise the preemption flag: the chain running now ends at its next stop (no effect on a plain block). */
  preempt(): void;
  /** After the last block: the outputs by name (fresh arrays); frees the session for the next inference. */
  finish(): Record<string, HostTensor>;
  /**
   * After the last block: reads the plan's outputs and frees the session at once; the returned
   * function queues the sparse output layer, if the bundle has one, on a worker thread (one query
   * at a time per head, in call order; `atStart` runs as this one's turn comes, before the head's
   * version is read). A server's way to finish: its event loop and the session are not held while
   * a large head scores.
   */
  finishPlan(): (atStart?: () => void) => Promise<Record<string, HostTensor>>;
  /** Give up on this inference (e.g. its request was cancelled); frees the session. */
  abort(): void;
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
  /** The sparse output layer's family and its version in use (sparse-head.ts), when the bundle has one. */
  readonly sparse: SparseHeadControl | undefined;
  /** Advanced: the native executor and plan-step → executor-step map (for the interference proxy). */
  readonly executor: Executor;
  readonly stepOfPlan: readonly number[];
  /** Native steps in execution order (what block boundaries index). */
  readonly steps: readonly SessionStep[];
  /**
   * Run once, off the event loop, as one block on `cores` (default: the first threads-many cores
   * this process may use). Feeds by input name; resolves to every output by name (fresh arrays).
   */
  run(feeds: Feeds, options?: { readonly cores?: readonly number[] }): Promise<Record<string, HostTensor>>;
  /** The same on the calling thread, blocking it (benchmarks, tools). */
  runSync(feeds: Feeds): Record<string, HostTensor>;
  /** Start an inference (waits for the one in flight, if any): copies the feeds in. */
  begin(feeds: Feeds): Promise<Inference>;
  /** Another session of the same model: its own arena and queue, the same weights and kernels. */
  replicate(): Session;
  versionsForLevel(level: number): number[];
  /** Each layer's best version at `level` among those tuned for `threads` threads. */
  versionsFor(level: number, threads: number): number[];
  useVersions(vector: readonly number[]): void;
  /** useVersions(versionsForLevel(level)); returns the vector. */
  setLevel(level: number): number[];
  /**
   * Change the thread override (undefined: back to the default count, each version at its own
   * count); when the session is on a level's picks, it moves to the versions tuned for the new count.
   */
  setThreads(threads: number | undefined): void;
  close(): void;
}

const MAX_LEVEL = 4;

function checkLevel(level: number): void {
  if (!Number.isInteger(level) || level < 0 || level > MAX_LEVEL) {
    throw userError(
      'BAD_ARGUMENT',
      `interference level ${quoteForMessage(String(level))} is not an integer from 0 to ${MAX_LEVEL}`,
      'levels are 0 (quiet) to 4 (heaviest co-runner)',
    );
  }
}

function checkThreads(threads: number | undefined): void {
  if (threads !== undefined && (!Number.isInteger(threads) || threads < 1 || threads > 4096)) {
    throw userError('BAD_ARGUMENT', `thread count ${quoteForMessage(String(threads))} is not an integer from 1 to 4096`, 'e.g. threads: 1');
  }
}

/** The session's default thread count: the widest tuned count that leaves a core free, bounded by this machine. */
function defaultOpThreads(m: Manifest): number {
  return defaultThreadsOf(m.options.threads, availableParallelism());
}

function tunableLayersOf(b: LoadedBundle, stepOfPlan: readonly number[]): TunableLayer[] {
  const layers = new Map(b.manifest.layers.map((l) => [l.index, l]));
  return kernelSteps(b.manifest, stepOfPlan).map((k) => {
    const l = layers.get(k.layer)!;
    return { layer: k.layer, name: l.name, op: l.op, step: k.step, versions: k.versions };
  });
}

function stepsOf(b: LoadedBundle, stepOfPlan: readonly number[]): SessionStep[] {
  const layers = new Map(b.manifest.layers.map((l) => [l.index, l]));
  const out: SessionStep[] = [];
  for (const p of b.manifest.graphPlan.steps) {
    const index = stepOfPlan[p.index] ?? -1;
    if (index < 0) continue;
    const layer = p.op === 'layer' ? layers.get(p.layer!) : undefined;
    out[index] = {
      index,
      planStep: p.index,
      layer: layer ? layer.index : null,
      kind: layer ? (layer.tunable ? 'kernel' : layer.op) : p.op,
      tunable: layer?.tunable ?? false,
    };
  }
  return out;
}

/**
 * Run every thread of every block (Inference.block) at this nice value, 0..19, and above 0 as a
 * batch thread, from the next block on. A server raises it so that its event loop, on the same
 * cores, never waits for a kernel's time slice, nor for a worker it has just woken (the runtime
 * addon, addon.c, says why).
 */
export async function setBlockNice(nice: number): Promise<void> {
  (await loadRuntimeAddon()).setBlockNice(nice);
}

export async function loadBundle(path: string, options: LoadBundleOptions = {}): Promise<Session> {
  checkThreads(options.threads);
  if (options.level !== undefined) checkLevel(options.level);
  const trustedKeys = options.trustedKeys?.map((k) => trustedKeyFrom(k));
  const bundle = await readBundle(path, { ...(options.read ?? {}), ...(trustedKeys ? { trustedKeys } : {}) });
  const opThreads = options.threads ?? defaultOpThreads(bundle.manifest);
  const { executor, translated } = await executorForBundle(bundle, {
    threads: opThreads,
    ...(options.pinThreads ? { pinThreads: true } : {}),
  });
  // After readBundle: the head's files were hashed with the rest; readHead checks its weights' sha256.
  const head = hasSparseHead(bundle.manifest.files) ? await loadSparseHead(bundle.paths.dir, options.sparse ?? {}) : undefined;
  return createSession(bundle, executor, translated.stepOfPlan, options, opThreads, head);
}

function checkCores(cores: readonly number[]): void {
  if (
    !Array.isArray(cores) ||
    cores.length === 0 ||
    cores.some((c) => !Number.isInteger(c) || c < 0) ||
    new Set(cores).size !== cores.length
  ) {
    throw userError(
      'BAD_ARGUMENT',
      `cores ${quoteForMessage(JSON.stringify(cores))} is not a non-empty list of distinct core ids`,
      'e.g. cores: [0, 1]',
    );
  }
}

function createSession(
  bundle: LoadedBundle,
  executor: Executor,
  stepOfPlan: readonly number[],
  options: LoadBundleOptions,
  opThreads: number,
  head?: SparseHead,
): Session {
  const m = bundle.manifest;
  const tunable = tunableLayersOf(bundle, stepOfPlan);
  const steps = stepsOf(bundle, stepOfPlan);
  const inputs: TensorInfo[] = executor.inputs.map((t) => ({ name: t.name, dtype: t.dtype, shape: [...t.shape] }));
  const planOutputs: TensorInfo[] = executor.outputs.map((t) => ({ name: t.name, dtype: t.dtype, shape: [...t.shape] }));
  const outputs: TensorInfo[] = head ? head.outputsFor(planOutputs) : planOutputs;
  let threadOverride = options.threads;
  let current: number[] = tunable.map(() => -1);
  let level: number | undefined;
  let closed = false;

  const live = () => {
    if (closed) throw userError('BAD_ARGUMENT', `the session for ${bundle.paths.dir} is closed`, 'load the bundle again with loadBundle');
  };
  // Each step's thread count as the last block set it (0: set otherwise since): a block skips the native call when it holds.
  const blockThreads = new Int32Array(steps.length);
  const applyThreads = () => {
    blockThreads.fill(0);
    if (threadOverride !== undefined) {
      executor.setAllThreads(threadOverride);
      return;
    }
    executor.setAllThreads(opThreads);
    tunable.forEach((t, i) => executor.setThreads(t.step, Math.max(1, t.versions[Math.max(0, current[i]!)]!.threads)));
  };
  const versionsFor = (l: number, threads: number): number[] => {
    checkLevel(l);
    checkThreads(threads);
    return tunable.map((t) => bestVersionAt(t.versions, l, threads));
  };
  const versionsForLevel = (l: number): number[] => versionsFor(l, threadOverride ?? opThreads);
  const useVersions = (vector: readonly number[]): void => {
    live();
    if (!Array.isArray(vector) || vector.length !== tunable.length) {
      throw userError(
        'BAD_ARGUMENT',
        `a version vector has one entry per tunable layer (${tunable.length}); got ${Array.isArray(vector) ? vector.length : typeof vector}`,
        'start from session.versionsForLevel(level)',
      );
    }
    vector.forEach((v, i) => {
      const t = tunable[i]!;
      if (!Number.isInteger(v) || v < 0 || v >= t.versions.length) {
        throw userError(
          'BAD_ARGUMENT',
          `layer ${t.layer} (${quoteForMessage(t.name)}) has ${t.versions.length} version(s); ${quoteForMessage(String(v))} is not one of them`,
          'version indices count from 0 in session.tunableLayers[i].versions',
        );
      }
    });
    vector.forEach((v, i) => {
      if (current[i] !== v) executor.setVersion(tunable[i]!.step, v);
    });
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
  // A block sets its steps' threads to its core count (and, given no versions, the versions tuned
  // for it); whole-model runs restore the session's counts and its level's versions.
  let threadsSetByBlocks = false;
  let versionsSetByBlocks = false;
  const restoreAfterBlocks = () => {
    if (versionsSetByBlocks && level !== undefined) setLevel(level);
    else applyThreads();
    threadsSetByBlocks = false;
    versionsSetByBlocks = false;
  };
  const planByName = (results: readonly ArrayBufferView[]): Record<string, HostTensor> => {
    const out: Record<string, HostTensor> = {};
    planOutputs.forEach((o, i) => {
      out[o.name] = { dtype: o.dtype, shape: o.shape, data: results[i] as HostTensor['data'] };
    });
    return out;
  };
  const byName = (results: readonly ArrayBufferView[]) => (head ? head.apply(planByName(results)) : planByName(results));
  const runSync = (feeds: Feeds): Record<string, HostTensor> => {
    live();
    if (threadsSetByBlocks) restoreAfterBlocks();
    return byName(executor.run(orderFeeds(inputs, feeds)));
  };

  // One inference at a time per arena: `begin` waits on the previous one's release.
  let tail: Promise<void> = Promise.resolve();
  // Step → its tunable layer's index, -1 for the others: a block reads it per step, so an array.
  const tunableOfStep = new Int32Array(steps.length).fill(-1);
  tunable.forEach((t, i) => {
    tunableOfStep[t.step] = i;
  });
  const begin = async (feeds: Feeds): Promise<Inference> => {
    live();
    const arrays = orderFeeds(inputs, feeds);
    let release!: () => void;
    const previous = tail;
    tail = new Promise<void>((r) => {
      release = r;
    });
    await previous;
    try {
      live();
      executor.writeInputs(arrays);
    } catch (e) {
      release();
      throw e;
    }
    let next = 0,
      done = false,
      running = false;
    const end = () => {
      if (!done) {
        done = true;
        release();
      }
    };
    /** The plan's outputs, once every step has run; the session is free for the next inference after it. */
    const readPlan = () => {
      if (done) throw userError('BAD_ARGUMENT', 'this inference has finished', 'start another with session.begin(feeds)');
      if (next !== steps.length) {
        throw userError(
          'BAD_ARGUMENT',
          `the inference has run ${next} of ${steps.length} steps`,
          'run blocks up to session.steps.length first',
        );
      }
      try {
        return executor.readOutputs();
      } finally {
        end();
      }
    };
    const inference: Inference = {
      get next() {
        return next;
      },
      async block(to, o) {
        if (done) throw userError('BAD_ARGUMENT', 'this inference has finished', 'start another with session.begin(feeds)');
        if (running)
          throw userError('BAD_ARGUMENT', 'a block of this inference is still running', 'await each block before starting the next');
        if (!Number.isInteger(to) || to <= next || to > steps.length) {
          throw userError(
            'BAD_ARGUMENT',
            `block end ${quoteForMessage(String(to))} is not a step after ${next} and at most ${steps.length}`,
            'blocks cover consecutive steps: from inference.next to a later step index',
          );
        }
        checkCores(o.cores);
        const stops =
          o.stops === undefined || o.stops.length === 0 ? undefined : o.stops instanceof Int32Array ? o.stops : Int32Array.from(o.stops);
        if (stops?.some((s, i) => !Number.isInteger(s) || s <= next || s >= to || (i > 0 && s <= stops[i - 1]!))) {
          throw userError(
            'BAD_ARGUMENT',
            `chain stops ${quoteForMessage(String(o.stops))} are not ascending steps strictly between ${next} and ${to}`,
            'stops are the layer boundaries where a preempted chain may end',
          );
        }
        const given = o.versions !== undefined || o.level !== undefined || o.stepVersions !== undefined;
        const vector = o.versions ?? (given && o.level === undefined ? undefined : versionsFor(o.level ?? level ?? 0, o.cores.length));
        for (let s = next; s < to; s++) {
          const t = tunableOfStep[s]!;
          const chosen = t < 0 ? undefined : (o.stepVersions?.get(s) ?? vector?.[t]);
          if (chosen !== undefined) {
            const v = chosen;
            if (!Number.isInteger(v) || v! < 0 || v! >= tunable[t]!.versions.length) {
              throw userError(
                'BAD_ARGUMENT',
                `version ${quoteForMessage(String(v))} does not exist for layer ${tunable[t]!.layer}`,
                'pass a vector from session.versionsForLevel(level)',
              );
            }
            if (current[t] !== v) {
              executor.setVersion(s, v!);
              current[t] = v!;
              if (given) level = undefined;
              else versionsSetByBlocks = true;
            }
          }
          if (blockThreads[s] !== o.cores.length) {
            executor.setThreads(s, o.cores.length);
            blockThreads[s] = o.cores.length;
          }
        }
        threadsSetByBlocks = true;
        running = true;
        const from = next;
        try {
          if (stops) {
            const { stoppedAt, ...timing } = await executor.runChain(from, to, o.cores, stops, o.preempted ?? false);
            next = stoppedAt;
            return { from, to: stoppedAt, ...timing };
          }
          const timing = await executor.runBlock(from, to, o.cores);
          next = to;
          return { from, to, ...timing };
        } catch (e) {
          end();
          throw e;
        } finally {
          running = false;
        }
      },
      preempt: () => {
        if (running) executor.preempt();
      },
      finish: () => byName(readPlan()),
      finishPlan() {
        const plan = planByName(readPlan());
        return (atStart) => {
          if (head) return head.applyAsync(plan, atStart);
          atStart?.();
          return Promise.resolve(plan);
        };
      },
      abort: end,
    };
    return inference;
  };
  const defaultCores = () => {
    const want = threadOverride ?? Math.max(opThreads, ...tunable.map((t, i) => t.versions[Math.max(0, current[i]!)]!.threads));
    const all = availableCores();
    return all.slice(0, Math.max(1, Math.min(want, all.length)));
  };
  const run = async (feeds: Feeds, o: { readonly cores?: readonly number[] } = {}) => {
    const cores = o.cores ?? defaultCores();
    checkCores(cores);
    const inference = await begin(feeds);
    if (threadsSetByBlocks) restoreAfterBlocks();
    // One block over every step, each on its own thread count (capped at the cores given).
    try {
      if (steps.length > 0) await executor.runBlock(0, steps.length, cores);
    } catch (e) {
      inference.abort();
      throw e;
    }
    try {
      return byName(executor.readOutputs());
    } finally {
      inference.abort();
    }
  };

  setLevel(options.level ?? 0);
  const session: Session = {
    path: bundle.paths.dir,
    manifest: m,
    warnings: bundle.warnings,
    signedBy: bundle.signedBy,
    inputs,
    outputs,
    levels: [...m.options.levels],
    tunableLayers: tunable,
    sparse: head,
    executor,
    stepOfPlan,
    steps,
    get versions() {
      return [...current];
    },
    get level() {
      return level;
    },
    run,
    runSync,
    begin,
    versionsForLevel,
    versionsFor,
    useVersions,
    setLevel,
    replicate() {
      live();
      const twin = createSession(bundle, executor.clone(), stepOfPlan, { ...options, level: options.level ?? 0 }, opThreads, head);
      twin.useVersions(current);
      if (threadOverride !== undefined) twin.setThreads(threadOverride);
      return twin;
    },
    setThreads(threads) {
      live();
      checkThreads(threads);
      threadOverride = threads;
      if (level !== undefined) setLevel(level);
      else applyThreads();
    },
    close() {
      if (!closed) {
        closed = true;
        executor.close();
      }
    },
  };
  return session;
}
