/**
 * manifest.json: the bundle's table of contents and the runtime's contract. Everything the runtime
 * needs to execute the model lives here or in a file the manifest names (with its sha256); nothing
 * in it depends on when or where the bundle was built (no timestamps, no absolute paths), so a
 * compile from a complete tuning database reproduces the same bytes.
 */
import type { Schedule } from '../space/knobs.js';
import type { Int8Schedule } from '../space/int8-knobs.js';
import type { ScheduleFeatures } from '../space/features.js';
import type { Target } from '../toolchain/target.js';
import type { DType } from '../onnx/model.js';
import type { WorkloadShape } from '../ir/workload.js';
import type { Activation } from '../ir/layer.js';
import type { LevelModel } from '../interference/proxy-model.js';
import type { GraphPlan } from './plan.js';

/**
 * semver of the bundle format. Bump the major on any change an older reader would misread.
 * 2.0.0: kernel ABI 2 (kernels take their workspace from the caller; versions state workspaceBytes).
 * 2.1.0: a layer's versions are one family per tuned thread count (up to MAX_LAYER_VERSIONS in
 * all; family.byThreads has each count's own regret); graph-plan values may alias a slice of
 * another value (`viewOf`: zero-copy concat and channel split), and layer steps may carry a fused
 * prologue/chain (`fused`).
 * 2.2.0: a small-cin conv's step may read its input in 'nchw' (the graph input as it is) while
 * the step runs nchw{V}c: the runtime calls the kernel's `<sym>_run_nchw`. An older runtime
 * refuses such a bundle at load (the kernel's input size differs), it never misreads it.
 * 2.3.0: the target says which of its required flags the build machine's cpuinfo did not list and
 * a probe found running (`probedIsa`, toolchain/cpu.ts); absent in older bundles.
 * 2.4.0: an INT8 version's schedule may say `ocOuter` (its kernel's task order; the kernel's C is in
 * the bundle, so nothing else reads it).
 */
export const BUNDLE_FORMAT_VERSION = '2.4.0';
/** Versions one layer may ship: at most 5 per thread count, for up to 16 counts (16 × 5 = 80, bounded lower). */
export const MAX_LAYER_VERSIONS = 64;
export const BUNDLE_FORMAT_MAJOR = 2;

/** Fixed file names inside a bundle (never derived from the model). */
export const BUNDLE_FILES = {
  manifest: 'manifest.json',
  kernels: 'kernels/kernels.so',
  kernelsSource: 'kernels/kernels.c',
  packedWeights: 'weights/packed.bin',
  params: 'weights/params.bin',
} as const;

/** Where a blob lives: a file listed in `files`, a byte range in it. Offsets are 64-byte aligned. */
export interface BlobRef {
  readonly file: string;
  readonly offset: number;
  readonly length: number;
  readonly sha256: string;
}

/** A raw constant (layer norm gamma, bias, constant operand) in weights/params.bin, natural layout. */
export interface ParamRef extends BlobRef {
  readonly dtype: DType;
  readonly dims: readonly number[];
}

export interface ManifestVersion {
  /** Tuning record id of the measured candidate. */
  readonly id: string;
  /** C symbol prefix in kernels.so (`vt_k` + 16 hex; an INT8 kernel's `vt_q` + 16 hex). */
  readonly symbol: string;
  /** An FP32 kernel's schedule, or an INT8 kernel's (it names its `path`). */
  readonly schedule: Schedule | Int8Schedule;
  readonly threads: number;
  readonly features: ScheduleFeatures;
  /** Scratch bytes `<symbol>_run` needs from its caller (vt_desc.workspace_bytes); the runtime plans it in the arena. */
  readonly workspaceBytes: number;
  /** Interference level → median latency (ms) measured at the schedule's thread count. */
  readonly latencyMs: Readonly<Record<string, number>>;
  /** Thread count → level-0 median latency (ms), where measured. */
  readonly latencyByThreadsMs: Readonly<Record<string, number>>;
  /** Usable in the graph plan (its vector width is the layer's layout width). */
  readonly inPlan: boolean;
  /** The layer's weight packed by `<symbol>_pack_weight` (absent: no constant weight, or not in the plan). */
  readonly packedWeight?: BlobRef;
  /** INT8 versions: packedWeight holds w | comp | mult (codegen/int8-pack.ts int8Blob); where comp and mult start. */
  readonly int8?: { readonly compOffset: number; readonly multOffset: number };
}

/** An FP32 version's schedule (undefined for an INT8 version). */
export function fp32Schedule(v: Pick<ManifestVersion, 'schedule'>): Schedule | undefined {
  return 'path' in v.schedule ? undefined : v.schedule;
}

export type ManifestEpilogueStep =
  | { readonly kind: 'bias' }
  | { readonly kind: 'activation'; readonly activation: Activation }
  | { readonly kind: 'residual_add'; readonly value: number }
  | { readonly kind: 'channel_mul'; readonly value: number };

export interface ManifestThreadFamily {
  readonly count: number;
  readonly regretPercent: Readonly<Record<string, number>>;
  readonly bestMs: Readonly<Record<string, number>>;
  readonly candidates: number;
  readonly dominated: number;
}

export interface ManifestFamily {
  /** Of the primary thread count's family (the widest count leaving a core for the co-runner). */
  readonly regretPercent: Readonly<Record<string, number>>;
  readonly bestMs: Readonly<Record<string, number>>;
  readonly candidates: number;
  readonly dominated: number;
  /** Thread count → that count's family (absent in 1.0 bundles). */
  readonly byThreads?: Readonly<Record<string, ManifestThreadFamily>>;
}

export interface ManifestLayer {
  readonly index: number;
  /** The ONNX node name (model-supplied; display only, never a path or a symbol). */
  readonly name: string;
  readonly op: string;
  readonly tunable: boolean;
  readonly workload: string | null;
  readonly workloadSpec?: WorkloadShape;
  /** Value ids (graphPlan.values) as their writer produced them; a step may read a reordered copy. */
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  readonly inputShapes: readonly (readonly number[])[];
  readonly outputShape: readonly number[];
  readonly dtype: DType;
  readonly attrs: Readonly<Record<string, number | string | readonly number[]>>;
  readonly epilogue: readonly ManifestEpilogueStep[];
  /** The ABI's epi_params: clip (min, max), leaky_relu (alpha), hard_sigmoid (alpha, beta), in step order. */
  readonly epilogueParams: readonly number[];
  readonly params: Readonly<Record<string, ParamRef>>;
  readonly versions: readonly ManifestVersion[];
  readonly family?: ManifestFamily;
}

/** A fitted linear map features → interference level (src/interference/proxy-fit.ts fits it, proxy-model.ts applies it). */
export type ManifestLevelModel = LevelModel;

/** One calibrated level as the proxy calibration saw it (medians over its samples). */
export interface ProxyLevelSummary {
  readonly samples: number;
  /** Median observed/profiled kernel time of the probe (the model itself) at this level. */
  readonly latencyRatio: number;
  readonly otherCoresBusy: number;
  /** The co-runner's own memory traffic over its window (GB/s); 0 at level 0. */
  readonly coRunnerMemGBps: number;
  /** Median of the system model's continuous prediction on this level's samples. */
  readonly predictedLevel: number;
}

/**
 * The interference proxy's coefficients (optional; added by `veltair bench --calibrate-proxy`):
 * linear models fitted by least squares on features recorded while the noise generator ran at
 * each calibrated level with the bundle's own model as the probe.
 */
export interface ManifestInterferenceProxy {
  readonly levels: readonly number[];
  /** Executor threads and core counts the calibration ran with. */
  readonly threads: number;
  readonly kernelCores: number;
  readonly noiseCores: number;
  readonly refreshMs: number;
  /** Runs the latency-ratio feature is the median of. */
  readonly ratioWindow: number;
  /** `system`: OS features + latency ratio; `tenant`: also the co-runners' known memory traffic. */
  readonly models: { readonly system: ManifestLevelModel; readonly tenant: ManifestLevelModel };
  readonly perLevel: Readonly<Record<string, ProxyLevelSummary>>;
}

export interface ManifestTensorInfo {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export interface Manifest {
  readonly formatVersion: string;
  readonly compilerVersion: { readonly veltair: string; readonly codegen: number; readonly kernelAbi: number };
  readonly model: {
    readonly path: string;
    readonly sha256: string;
    readonly opset: number;
    readonly inputs: readonly ManifestTensorInfo[];
    readonly outputs: readonly ManifestTensorInfo[];
  };
  readonly target: {
    readonly fingerprint: string;
    readonly spec: Target;
    /** CPU instruction-set flags (as /proc/cpuinfo names them) the -march=native kernels may use. */
    readonly requiredIsa: readonly string[];
    /**
     * Those of requiredIsa the build machine's /proc/cpuinfo did not list, which veltair settled by
     * running their instructions there (a hypervisor hiding a flag the CPU has). Absent before 2.3.0.
     */
    readonly probedIsa?: readonly string[];
  };
  readonly options: {
    readonly trials: number;
    readonly levels: readonly number[];
    readonly maxVersions: number;
    readonly threads: readonly number[];
    readonly profileThreads: readonly number[];
    readonly seed: number;
  };
  readonly layers: readonly ManifestLayer[];
  readonly graphPlan: GraphPlan;
  readonly interferenceProxy?: ManifestInterferenceProxy;
  /** Every other file of the bundle: relative path → sha256 and size. */
  readonly files: Readonly<Record<string, { readonly sha256: string; readonly bytes: number }>>;
}

/** The manifest's bytes: 2-space JSON with a final newline (fields are built in a fixed order). */
export function manifestText(m: Manifest): string {
  return JSON.stringify(m, null, 2) + '\n';
}
