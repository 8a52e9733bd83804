/**
 * TypeScript's handle on the native executor. The addon (native-kernels/runtime/addon.c, built on
 * first use by native-build.ts) is loaded with createRequire; one `run` call per inference runs the
 * whole plan in C, so the binding's per-call cost is paid once per inference, never per layer.
 *
 * Threads: each step's OpenMP thread count is a step argument (setThreads / setAllThreads), so the
 * scheduler can size every layer block. Pinning is libgomp's: it reads OMP_PROC_BIND / OMP_PLACES
 * once, when it is first loaded — `loadRuntimeAddon({ pinThreads: true })` sets them (unless the
 * user already did) before the first load; after that they cannot change in this process.
 */
import { createRequire } from 'node:module';
import { VeltairError, internalError, userError, quoteForMessage } from '../errors.js';
import type { DType } from '../onnx/model.js';
import { ABI_DIGEST } from '../toolchain/abi.js';
import { ensureRuntimeAddon } from './native-build.js';
import { encodePlan, type NativePlan, type NativeTensor } from './native-plan.js';

type Handle = object;

/** The addon's exports (see the comment at the top of addon.c). */
export interface RuntimeAddon {
  /** VT_ABI_DIGEST of the vt_abi.h the addon was compiled with. */
  readonly abiDigest: string;
  create(blob: Float64Array, kernelsPath: string | null, symbols: readonly string[], params: readonly ArrayBufferView[]): Handle;
  info(h: Handle): { steps: number; inputBytes: number[]; outputBytes: number[] };
  run(h: Handle, inputs: readonly ArrayBufferView[], outputs: readonly ArrayBufferView[]): void;
  setVersion(h: Handle, step: number, version: number): void;
  setThreads(h: Handle, step: number, threads: number): void;
  setProfiling(h: Handle, on: boolean): void;
  setTeams(h: Handle, on: boolean): void;
  stepTimes(h: Handle): Float64Array;
  versions(h: Handle): Int32Array;
  close(h: Handle): void;
  copy(h: Handle, inputs: readonly ArrayBufferView[] | null, outputs: readonly ArrayBufferView[] | null): void;
  runBlock(h: Handle, from: number, to: number, cores: readonly number[]): Promise<BlockTiming>;
  runChain(h: Handle, from: number, to: number, cores: readonly number[], stops: Int32Array, preempted?: boolean): Promise<ChainTiming>;
  preempt(h: Handle): void;
  clone(h: Handle): Handle;
  /** Every thread of a block runs at this nice value (0..19), and for n > 0 as a batch thread, from the next block on (addon.c says why). */
  setBlockNice(n: number): void;
  /** The calling thread, and the threads it starts later, at nice n (1..19) and the batch policy, as block threads; true when both held. */
  setBackgroundThread(n: number): boolean;
}

/** What a block reports: the CPU of each team thread, and CLOCK_MONOTONIC ns at its start and end. */
export interface BlockTiming {
  readonly cpus: readonly number[];
  readonly startNs: number;
  readonly endNs: number;
}

/** What a chain reports: a block's timing and the step it ended at (`to` unless preempted). */
export interface ChainTiming extends BlockTiming {
  readonly stoppedAt: number;
}

let loaded: RuntimeAddon | undefined;

export interface LoadOptions {
  /** Pin OpenMP threads to cores (OMP_PROC_BIND=close, OMP_PLACES=cores) unless already set. */
  readonly pinThreads?: boolean;
  readonly cacheDir?: string;
}

export async function loadRuntimeAddon(options: LoadOptions = {}): Promise<RuntimeAddon> {
  if (loaded) return loaded;
  const path = await ensureRuntimeAddon(options.cacheDir === undefined ? {} : { cacheDir: options.cacheDir });
  if (options.pinThreads) {
    process.env['OMP_PROC_BIND'] ??= 'close';
    process.env['OMP_PLACES'] ??= 'cores';
  }
  const addon = createRequire(import.meta.url)(path) as RuntimeAddon;
  if (addon.abiDigest !== ABI_DIGEST) {
    throw internalError(
      `the runtime addon at ${path} was built for ABI ${String(addon.abiDigest)}, this veltair speaks ${ABI_DIGEST}`,
      'delete the veltair cache (VELTAIR_CACHE_DIR or ~/.cache/veltair) and retry; this is a bug if it persists',
    );
  }
  loaded = addon;
  return loaded;
}

export type TensorData = Float32Array | Float64Array | Int32Array | BigInt64Array | Int8Array | Uint8Array | Int16Array | Uint16Array;

/** A fresh typed array of the dtype's JS type holding `bytes`. */
export function allocateTensor(dtype: DType, bytes: number): TensorData {
  switch (dtype) {
    case 'float32':
      return new Float32Array(bytes / 4);
    case 'float64':
      return new Float64Array(bytes / 8);
    case 'int32':
      return new Int32Array(bytes / 4);
    case 'int64':
      return new BigInt64Array(bytes / 8);
    case 'int8':
      return new Int8Array(bytes);
    case 'uint8':
    case 'bool':
      return new Uint8Array(bytes);
    case 'int16':
      return new Int16Array(bytes / 2);
    case 'uint16':
      return new Uint16Array(bytes / 2);
    default:
      throw internalError(`no JS array type for ${dtype} outputs`);
  }
}

export interface Executor {
  readonly inputs: readonly NativeTensor[];
  readonly outputs: readonly NativeTensor[];
  readonly stepCount: number;
  /** Run the whole plan once; feeds in `inputs` order (byte sizes checked). Outputs are new arrays unless `into` is given. */
  run(feeds: readonly ArrayBufferView[], into?: readonly ArrayBufferView[]): ArrayBufferView[];
  /** Pick version `version` (an index into that step's versions) for kernel step `step`. */
  setVersion(step: number, version: number): void;
  /** One entry per step; negative entries leave that step's version as it is. */
  setVersions(versions: readonly number[]): void;
  setThreads(step: number, threads: number): void;
  setAllThreads(threads: number): void;
  /** Record per-step wall time (ns) on every run from now on (two clock reads per step). */
  setProfiling(on: boolean): void;
  /**
   * Run consecutive kernels and team-safe ops at one thread count in one OpenMP region, separated
   * by barriers instead of a fork and join per step (on by default; off: each step its own region).
   * Results are bit-identical either way: each thread gets the same share.
   */
  setTeams(on: boolean): void;
  /** Nanoseconds per step of the last profiled run. */
  stepTimesNs(): Float64Array;
  /** Per step, the version index the native executor runs (-1: not a kernel step): its state, read back. */
  runningVersions(): Int32Array;
  /** Copy feeds into the arena's inputs (byte sizes checked). */
  writeInputs(feeds: readonly ArrayBufferView[]): void;
  /** Copy the arena's outputs out: into `into`, else into new arrays. */
  readOutputs(into?: readonly ArrayBufferView[]): ArrayBufferView[];
  /**
   * Run steps [from, to) asynchronously on the executor's own thread with its OpenMP team pinned to
   * `cores` (each step on at most cores.length threads). Resolves with the CPU each team thread
   * was on and the block's native start/end. While it runs, every other call on this executor
   * throws VT_BUSY (BAD_ARGUMENT).
   */
  runBlock(from: number, to: number, cores: readonly number[]): Promise<BlockTiming>;
  /**
   * runBlock over [from, to) that may end early: at each of `stops` (ascending steps strictly
   * inside the range) the worker reads the preemption flag and, when preempt() raised it, ends
   * there (`preempted`: the flag starts raised). Resolves with the step it ended at (`to` when it ran through).
   */
  runChain(from: number, to: number, cores: readonly number[], stops: Int32Array, preempted?: boolean): Promise<ChainTiming>;
  /** Raise the preemption flag of the chain in flight (no effect on a plain block; lowered when the next run starts). */
  preempt(): void;
  /** Another executor with its own arena, sharing this one's plan, kernels and weights. */
  clone(): Executor;
  close(): void;
}

/** The addon's exceptions as VeltairErrors: a bundle problem is the user's, a plan problem is ours. */
export function nativeError(e: unknown, context: string): VeltairError {
  if (e instanceof VeltairError) return e;
  const code = (e as { code?: string }).code;
  const message = `${context}: ${(e as Error).message ?? String(e)}`;
  if (code === 'VT_KERNELS') {
    return userError('BAD_BUNDLE', message, "the bundle's kernels.so does not match its manifest; recompile it with veltair compile");
  }
  if (code === 'VT_RUN') return userError('BAD_INPUT', message, 'check the input values (e.g. token ids within the vocabulary)');
  if (code === 'VT_BUSY')
    return userError('BAD_ARGUMENT', message, 'queue calls on one session, or clone it (session.replicate()) to run two at once');
  return internalError(message);
}

export async function createExecutor(plan: NativePlan, kernelsPath: string | null, options: LoadOptions = {}): Promise<Executor> {
  const addon = await loadRuntimeAddon(options);
  const blob = encodePlan(plan);
  let h: Handle;
  try {
    h = addon.create(blob, kernelsPath, plan.symbols, plan.params);
  } catch (e) {
    throw nativeError(e, kernelsPath === null ? 'loading the plan' : `loading kernels ${kernelsPath}`);
  }
  return wrapExecutor(addon, h, plan);
}

function checkFeeds(plan: NativePlan, feeds: readonly ArrayBufferView[]): void {
  if (feeds.length !== plan.inputs.length) {
    throw userError(
      'BAD_INPUT',
      `the model takes ${plan.inputs.length} inputs (${plan.inputs.map((i) => quoteForMessage(i.name)).join(', ')}), got ${feeds.length}`,
      'pass one array per model input, in order',
    );
  }
  feeds.forEach((f, i) => {
    const t = plan.inputs[i]!;
    if (f.byteLength !== t.bytes) {
      throw userError(
        'BAD_INPUT',
        `input ${quoteForMessage(t.name)} has ${f.byteLength} bytes; expected ${t.dtype} [${t.shape.join(', ')}] = ${t.bytes} bytes`,
        'check the input shape and dtype against the model',
      );
    }
  });
}

function wrapExecutor(addon: RuntimeAddon, h: Handle, plan: NativePlan): Executor {
  const n = plan.steps.length;
  const call = <T>(what: string, f: () => T): T => {
    try {
      return f();
    } catch (e) {
      throw nativeError(e, what);
    }
  };
  const outputsOrNew = (into?: readonly ArrayBufferView[]) =>
    into ? [...into] : plan.outputs.map((o) => allocateTensor(o.dtype, o.bytes));
  return {
    inputs: plan.inputs,
    outputs: plan.outputs,
    stepCount: n,
    run(feeds, into) {
      checkFeeds(plan, feeds);
      const outs = outputsOrNew(into);
      call('running the model', () => addon.run(h, feeds, outs));
      return outs;
    },
    setVersion: (step, version) => call('choosing a version', () => addon.setVersion(h, step, version)),
    setVersions(versions) {
      versions.forEach((v, s) => {
        if (v >= 0) call('choosing a version', () => addon.setVersion(h, s, v));
      });
    },
    setThreads: (step, threads) => call('setting threads', () => addon.setThreads(h, step, threads)),
    setAllThreads(threads) {
      for (let s = 0; s < n; s++) call('setting threads', () => addon.setThreads(h, s, threads));
    },
    setProfiling: (on) => call('profiling', () => addon.setProfiling(h, on)),
    setTeams: (on) => call('setting teams', () => addon.setTeams(h, on)),
    stepTimesNs: () => call('profiling', () => addon.stepTimes(h)),
    runningVersions: () => call('reading versions', () => addon.versions(h)),
    writeInputs(feeds) {
      checkFeeds(plan, feeds);
      call('copying the inputs', () => addon.copy(h, feeds, null));
    },
    readOutputs(into) {
      const outs = outputsOrNew(into);
      call('copying the outputs', () => addon.copy(h, null, outs));
      return outs;
    },
    async runBlock(from, to, cores) {
      const pending = call('starting a block', () => addon.runBlock(h, from, to, cores));
      try {
        return await pending;
      } catch (e) {
        throw nativeError(e, `running steps ${from}..${to - 1}`);
      }
    },
    async runChain(from, to, cores, stops, preempted = false) {
      const pending = call('starting a chain', () => addon.runChain(h, from, to, cores, stops, preempted));
      try {
        return await pending;
      } catch (e) {
        throw nativeError(e, `running steps ${from}..${to - 1}`);
      }
    },
    preempt: () => call('preempting a chain', () => addon.preempt(h)),
    clone: () =>
      wrapExecutor(
        addon,
        call('cloning the executor', () => addon.clone(h)),
        plan,
      ),
    close: () => addon.close(h),
  };
}
