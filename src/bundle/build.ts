/**
 * From a lowered model and its tuned families to the bundle's files: choose each layer's layout
 * width and usable versions, plan the graph, build kernels.so, pack every usable version's weight
 * with the kernels themselves, store raw constants, and write the manifest last (hashes of every
 * other file in it). Runs inside a staging directory (write.ts). INT8 layers (qconv2d / qmatmul)
 * ship their tuned family's versions like FP32 ones: kernels in kernels.so, each version's packed
 * w | comp | mult in the packed-weights file (packed in TypeScript, int8-pack.ts), no raw constants.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { generateKernel, kernelWorkspaceBytes, CODEGEN_VERSION } from '../codegen/kernel.js';
import { EPILOGUE_PARAMS } from '../codegen/epilogue.js';
import { targetFingerprint } from '../db/target-fingerprint.js';
import { internalError, quoteForMessage, userError } from '../errors.js';
import type { EpilogueStep, Layer, LayerGraph } from '../ir/layer.js';
import type { KernelUnit } from '../measure/build.js';
import type { InferredModel } from '../onnx/model.js';
import { makeCandidate } from '../space/candidate.js';
import { KERNEL_ABI_VERSION } from '../toolchain/abi.js';
import { cpuInfo } from '../toolchain/cpu.js';
import { requiredIsaFor, vectorWidths } from '../toolchain/isa.js';
import { compilerTargetHelp } from '../toolchain/compiler.js';
import { targetLevel, type Target } from '../toolchain/target.js';
import type { WorkloadFamily } from '../tune/tune-model.js';
import type { Int8LayerFamily, Int8Version } from '../tune/int8-tune.js';
import { isInt8KernelLayer } from './plan-quant.js';
import { VERSION } from '../version.js';
import { addParam, openBlobFile } from './blobs.js';
import { writeBundleKernels } from './kernels.js';
import {
  BUNDLE_FILES,
  BUNDLE_FORMAT_VERSION,
  manifestText,
  type Manifest,
  type ManifestEpilogueStep,
  type ManifestLayer,
  type ManifestVersion,
  type BlobRef,
  type ParamRef,
} from './manifest.js';
import { packWeights, type PackJob } from './packer.js';
import { PROFILES_FILE, profilesText } from './candidates-file.js';
import { buildGraphPlan, type GraphPlan, type LayerChoice } from './plan.js';
import { assertManifestSchema } from './schema.js';

export interface BundleSource {
  readonly modelPath: string;
  readonly model: InferredModel;
  readonly graph: LayerGraph;
  readonly families: ReadonlyMap<string, WorkloadFamily>;
  readonly target: Target;
  readonly options: Manifest['options'];
  /** INT8 layers' families by layer index, and the thread count they were timed at. */
  readonly int8?: { readonly families: ReadonlyMap<number, Int8LayerFamily>; readonly threads: number };
}

function int8FamilyOf(l: Layer, src: BundleSource): Int8LayerFamily {
  const f = src.int8?.families.get(l.index);
  if (!f || f.family.versions.length === 0) {
    throw userError(
      'COMPILE_FAILED',
      `layer ${l.index} (${l.op} ${quoteForMessage(l.name)}) has no working INT8 version: every candidate measured for it failed`,
      'raise --trials; run with --json to see each failed candidate in the notes',
    );
  }
  return f;
}

/** A version's id in the manifest: its symbol's content hash. */
const int8VersionId = (v: Int8Version): string => v.symbol.slice('vt_q'.length);

export interface BuiltBundle {
  readonly manifest: Manifest;
  /** One line each: versions left out of the plan and why. */
  readonly notes: readonly string[];
  /** Total bytes of the bundle's files. */
  readonly bytes: number;
}

function familyForLayer(l: Layer, families: ReadonlyMap<string, WorkloadFamily>): WorkloadFamily {
  const fam = families.get(l.workload!.key);
  if (!fam || fam.versions.length === 0) {
    throw userError(
      'COMPILE_FAILED',
      `layer ${l.index} (${quoteForMessage(l.name)}, workload ${l.workload!.key}) has no working version: every candidate measured for it failed`,
      'raise --trials, or check `veltair db stats` for failed records of this workload',
    );
  }
  return fam;
}

/** Per tunable layer: the widest vector width the target runs and the family has, and its versions. */
export function chooseLayouts(
  graph: LayerGraph,
  families: ReadonlyMap<string, WorkloadFamily>,
  target: Target,
): { choices: Map<number, LayerChoice>; notes: string[] } {
  const widest = vectorWidths(target.isa)[0]!;
  const choices = new Map<number, LayerChoice>();
  const notes: string[] = [];
  for (const l of graph.layers.filter((x) => x.tunable)) {
    const fam = familyForLayer(l, families);
    const widths = [...new Set(fam.versions.map((v) => v.schedule.vec as number))];
    const vec = widths.includes(widest) ? widest : Math.max(...widths);
    const usable = fam.versions.filter((v) => v.schedule.vec === vec);
    if (usable.length < fam.versions.length) {
      notes.push(
        `layer ${l.index} (${l.workload!.key}): ${fam.versions.length - usable.length} of ${fam.versions.length} versions use ` +
          `another vector width than the plan's ${vec} and are kept out of the plan`,
      );
    }
    choices.set(l.index, { vec, versions: usable.map((v) => v.id) });
  }
  return { choices, notes };
}

function epilogueParams(steps: readonly EpilogueStep[]): number[] {
  const out: number[] = [];
  for (const s of steps) {
    if (s.kind !== 'activation') continue;
    const a = s.activation;
    if (a.fn === 'clip') out.push(a.min, a.max);
    else if (a.fn === 'leaky_relu') out.push(a.alpha);
    else if (a.fn === 'hard_sigmoid') out.push(a.alpha, a.beta);
    else if (EPILOGUE_PARAMS[a.fn] !== 0) throw internalError(`epilogue ${a.fn} takes parameters the bundle does not know`);
  }
  return out;
}

/** The id of the value as its writer produced it (the first plan value of that name). */
function logicalIds(plan: GraphPlan): Map<string, number> {
  const ids = new Map<string, number>();
  for (const v of plan.values) if (!ids.has(v.name)) ids.set(v.name, v.id);
  return ids;
}

async function fileDigest(path: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return { sha256: hash.digest('hex'), bytes: (await stat(path)).size };
}

function kernelUnits(graph: LayerGraph, families: ReadonlyMap<string, WorkloadFamily>, target: Target): KernelUnit[] {
  const units = new Map<string, KernelUnit>();
  for (const l of graph.layers.filter((x) => x.tunable)) {
    for (const v of familyForLayer(l, families).versions) {
      if (units.has(v.symbol)) continue;
      const unit = generateKernel(makeCandidate(l.workload!, v.schedule, target));
      if (unit.symbol !== v.symbol) throw internalError(`version ${v.id} names symbol ${v.symbol} but generates ${unit.symbol}`);
      units.set(unit.symbol, unit);
    }
  }
  return [...units.values()];
}

/** Build every file of the bundle into `dir` (an empty staging directory with kernels/ and weights/). */
export async function buildBundleFiles(dir: string, src: BundleSource): Promise<BuiltBundle> {
  const { graph, families, target } = src;
  const { choices, notes } = chooseLayouts(graph, families, target);
  const int8Layers = graph.layers.filter(isInt8KernelLayer);
  for (const l of int8Layers) choices.set(l.index, { vec: 1, versions: int8FamilyOf(l, src).family.versions.map(int8VersionId) });
  const plan = buildGraphPlan(graph, choices, vectorWidths(target.isa)[0]!);
  const ids = logicalIds(plan);
  const idOf = (name: string) => {
    const id = ids.get(name);
    if (id === undefined) throw internalError(`value ${JSON.stringify(name)} is not in the plan`);
    return id;
  };

  const int8Units = int8Layers.flatMap((l) => int8FamilyOf(l, src).family.versions.map((v) => v.kernel));
  const kernels = await writeBundleKernels(dir, [...kernelUnits(graph, families, target), ...int8Units], target.cflags);

  // Packed weights: every in-plan version of every layer with a constant weight.
  const jobs: (PackJob & { layer: number; version: string })[] = [];
  for (const l of graph.layers.filter((x) => x.tunable && x.params['weight'])) {
    const weight = l.params['weight']!;
    if (!(weight.data instanceof Float32Array)) throw internalError(`layer ${l.index}: weight is not float32`);
    const fam = familyForLayer(l, families);
    for (const v of fam.versions.filter((x) => choices.get(l.index)!.versions.includes(x.id))) {
      jobs.push({ symbol: v.symbol, weight: weight.data, layer: l.index, version: v.id });
    }
  }
  const packedRefs = new Map<string, BlobRef>();
  const packed = openBlobFile(join(dir, BUNDLE_FILES.packedWeights), BUNDLE_FILES.packedWeights);
  const work = await mkdtemp(join(tmpdir(), 'veltair-pack-'));
  try {
    for (const l of int8Layers)
      for (const v of int8FamilyOf(l, src).family.versions) packedRefs.set(`${l.index}/${int8VersionId(v)}`, packed.add(v.blob.bytes));
    await packWeights(join(dir, BUNDLE_FILES.kernels), jobs, work, (i, bytes) => {
      packedRefs.set(`${jobs[i]!.layer}/${jobs[i]!.version}`, packed.add(bytes));
    });
  } finally {
    packed.close();
    await rm(work, { recursive: true, force: true });
  }

  // Raw constants: everything but a tunable layer's weight (that one ships packed).
  const params = openBlobFile(join(dir, BUNDLE_FILES.params), BUNDLE_FILES.params);
  const layers: ManifestLayer[] = [];
  try {
    for (const l of graph.layers) {
      const refs: Record<string, ParamRef> = {};
      // an INT8 layer's constants all ship inside its versions' packed operands
      for (const name of isInt8KernelLayer(l) ? [] : Object.keys(l.params).sort()) {
        if (l.tunable && name === 'weight') continue;
        if (!/^[A-Za-z0-9_]{1,64}$/.test(name)) throw internalError(`layer ${l.index}: parameter name ${quoteForMessage(name)}`);
        refs[name] = addParam(params, l.params[name]!, l.name);
      }
      const int8 = isInt8KernelLayer(l) ? { family: int8FamilyOf(l, src), threads: src.int8!.threads } : undefined;
      layers.push(
        manifestLayer(l, refs, idOf, l.tunable ? familyForLayer(l, families) : undefined, choices.get(l.index), packedRefs, int8),
      );
    }
  } finally {
    params.close();
  }

  const tunedKeys = new Set(graph.layers.filter((l) => l.tunable).map((l) => l.workload!.key));
  await mkdir(join(dir, dirname(PROFILES_FILE)), { recursive: true });
  await writeFile(join(dir, PROFILES_FILE), profilesText([...tunedKeys].map((k) => families.get(k)!.profile)));

  const files: Record<string, { sha256: string; bytes: number }> = {};
  for (const f of [...kernels.files, BUNDLE_FILES.packedWeights, BUNDLE_FILES.params, PROFILES_FILE].sort())
    files[f] = await fileDigest(join(dir, f));
  const m = src.model;
  // What the kernels' flags let the compiler use: a portable level's extensions, or what -march=native enables here.
  const level = targetLevel(target);
  const requiredIsa = requiredIsaFor(level, level === 'native' ? await compilerTargetHelp('-march=native') : undefined);
  const manifest: Manifest = {
    formatVersion: BUNDLE_FORMAT_VERSION,
    compilerVersion: { veltair: VERSION, codegen: CODEGEN_VERSION, kernelAbi: KERNEL_ABI_VERSION },
    model: {
      path: basename(src.modelPath),
      sha256: m.model.sha256,
      opset: m.model.opsetImports.get('') ?? m.model.opsetImports.get('ai.onnx') ?? 0,
      inputs: graph.inputs.map((i) => ({ name: i.name, dtype: i.dtype, shape: [...i.shape] })),
      outputs: graph.outputs.map((o) => ({ name: o.name, dtype: o.dtype, shape: [...o.shape] })),
    },
    target: {
      fingerprint: targetFingerprint(target),
      spec: {
        cpuModel: target.cpuModel,
        isa: { ...target.isa },
        cores: target.cores,
        caches: { ...target.caches },
        cc: target.cc,
        cflags: [...target.cflags],
      },
      requiredIsa,
      probedIsa: requiredIsa.filter((f) => cpuInfo().probed[f] === true),
    },
    options: src.options,
    layers,
    graphPlan: plan,
    files,
  };
  const text = manifestText(manifest);
  assertManifestSchema(JSON.parse(text), 'the manifest veltair just built');
  await writeFile(join(dir, BUNDLE_FILES.manifest), text);
  const bytes = Object.values(files).reduce((s, f) => s + f.bytes, 0) + Buffer.byteLength(text);
  return { manifest, notes, bytes };
}

function manifestLayer(
  l: Layer,
  params: Record<string, ParamRef>,
  idOf: (name: string) => number,
  fam: WorkloadFamily | undefined,
  choice: LayerChoice | undefined,
  packedRefs: ReadonlyMap<string, BlobRef>,
  int8?: { readonly family: Int8LayerFamily; readonly threads: number },
): ManifestLayer {
  const epilogue: ManifestEpilogueStep[] = l.epilogue.map((s) =>
    s.kind === 'residual_add' || s.kind === 'channel_mul' ? { kind: s.kind, value: idOf(s.value) } : s,
  );
  const int8Versions: ManifestVersion[] = (int8?.family.family.versions ?? []).map((v) => {
    const id = int8VersionId(v);
    return {
      id,
      symbol: v.symbol,
      schedule: v.schedule,
      threads: int8!.threads,
      features: v.features,
      workspaceBytes: v.kernel.workspaceBytes,
      latencyMs: sortedRecord(v.latencyMs),
      latencyByThreadsMs: v.latencyMs['0'] !== undefined ? { [String(int8!.threads)]: v.latencyMs['0'] } : {},
      inPlan: true,
      packedWeight: packedRefs.get(`${l.index}/${id}`)!,
      int8: { compOffset: v.blob.compOffset, multOffset: v.blob.multOffset },
    };
  });
  const fp32Versions: ManifestVersion[] = (fam?.versions ?? []).map((v, i) => {
    const packed = packedRefs.get(`${l.index}/${v.id}`);
    return {
      id: v.id,
      symbol: v.symbol,
      schedule: v.schedule,
      threads: v.schedule.threads,
      features: v.features,
      workspaceBytes: kernelWorkspaceBytes(l.workload!, v.schedule),
      latencyMs: sortedRecord(v.latencyMs),
      latencyByThreadsMs: sortedRecord(fam!.threadProfiles[i] ?? {}),
      inPlan: choice?.versions.includes(v.id) ?? false,
      ...(packed ? { packedWeight: packed } : {}),
    };
  });
  return {
    index: l.index,
    name: l.name,
    op: l.op,
    tunable: l.tunable,
    workload: l.workload?.key ?? null,
    ...(l.workload ? { workloadSpec: l.workload } : {}),
    inputs: l.inputs.map(idOf),
    outputs: l.outputs.map(idOf),
    inputShapes: l.inputShapes,
    outputShape: l.outputShape,
    dtype: l.dtype,
    attrs: l.attrs,
    epilogue,
    epilogueParams: epilogueParams(l.epilogue),
    params,
    versions: [...fp32Versions, ...int8Versions],
    ...(int8
      ? {
          family: {
            regretPercent: sortedRecord(int8.family.family.regretPercent),
            bestMs: sortedRecord(int8.family.family.bestMs),
            candidates: int8.family.family.candidates,
            dominated: int8.family.family.dominated,
          },
        }
      : {}),
    ...(fam
      ? {
          family: {
            regretPercent: sortedRecord(fam.regretPercent),
            bestMs: sortedRecord(fam.bestMs),
            candidates: fam.candidates,
            dominated: fam.dominated,
            byThreads: Object.fromEntries(
              Object.keys(fam.byThreads)
                .sort((a, b) => Number(a) - Number(b))
                .map((t) => {
                  const f = fam.byThreads[t]!;
                  return [
                    t,
                    {
                      count: f.count,
                      regretPercent: sortedRecord(f.regretPercent),
                      bestMs: sortedRecord(f.bestMs),
                      candidates: f.candidates,
                      dominated: f.dominated,
                    },
                  ];
                }),
            ),
          },
        }
      : {}),
  };
}

/** Numeric-string keys in numeric order, so the manifest text never depends on insertion order. */
function sortedRecord(r: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(
    Object.keys(r)
      .sort((a, b) => Number(a) - Number(b))
      .map((k) => [k, r[k]!]),
  );
}
