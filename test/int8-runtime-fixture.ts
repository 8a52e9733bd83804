/**
 * A quantized model made runnable by the native executor without the tuner: every qconv2d / qmatmul
 * layer gets a few INT8 versions (the plain-C path and the fastest path this CPU has), compiled into
 * one shared library; the graph plan and its native translation are then the bundle's own.
 */
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import type { LayerGraph } from '../src/ir/layer.js';
import { generatedSamples, quantizeModel } from '../src/quantize/quantize-model.js';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { lowerToLayers } from '../src/ir/lower.js';
import { generateInt8Kernel } from '../src/codegen/int8-kernel.js';
import { int8Blob, packInt8 } from '../src/codegen/int8-pack.js';
import { int8ProblemOf } from '../src/space/int8-problem.js';
import { int8Space } from '../src/space/int8-knobs.js';
import { int8PathsAt, type Int8Path } from '../src/toolchain/isa.js';
import { runCompiler } from '../src/toolchain/compiler.js';
import { buildGraphPlan, type LayerChoice } from '../src/bundle/plan.js';
import { isInt8KernelLayer } from '../src/bundle/plan-quant.js';
import { translatePlan, type TranslatedPlan } from '../src/runtime/translate.js';
import { fromIrLayer, type RuntimeVersion } from '../src/runtime/runtime-layer.js';
import { seededRng } from '../src/random.js';

/** A float model quantized by `veltair quantize` from `calibration` generated inputs, lowered; and `extra` more inputs. */
export async function quantizedGraph(
  float: Uint8Array,
  calibration: number,
  extra: number,
): Promise<{ bytes: Uint8Array; graph: LayerGraph; samples: ReturnType<typeof generatedSamples> }> {
  const inputs = decodeModel(float, 'model.onnx').graph.inputs;
  const samples = generatedSamples(inputs, calibration + extra);
  const q = await quantizeModel(float, 'model.onnx', { method: 'minmax', samples: samples.slice(0, calibration) });
  return { bytes: q.bytes, graph: lowerToLayers(inferModel(decodeModel(q.bytes, 'model.int8.onnx'))), samples: samples.slice(calibration) };
}

/** The paths whose versions each INT8 layer gets: plain C first, then the fastest this CPU runs. */
export function fixturePaths(): Int8Path[] {
  const best = int8PathsAt('native')[0]!;
  return best === 'scalar' ? ['scalar'] : ['scalar', best];
}

/** Versions for every INT8 layer (seeded schedules), compiled into DIR/kernels.so; the plan translated at `threads`. */
export async function nativeInt8Plan(graph: LayerGraph, dir: string, threads: number): Promise<{ plan: TranslatedPlan; kernels: string }> {
  const rng = seededRng(45);
  const sources = new Map<string, string>();
  const versions = new Map<number, RuntimeVersion[]>();
  for (const l of graph.layers.filter(isInt8KernelLayer)) {
    const problem = int8ProblemOf(l);
    const list = fixturePaths().map((path): RuntimeVersion => {
      const s = rng.pick(int8Space(problem, path));
      const k = generateInt8Kernel(problem, s);
      sources.set(k.symbol, k.source);
      const blob = int8Blob(packInt8(l, problem, s));
      return {
        id: k.symbol,
        symbol: k.symbol,
        packedWeight: blob.bytes,
        workspaceBytes: k.workspaceBytes,
        int8: { compOffset: blob.compOffset, multOffset: blob.multOffset },
      };
    });
    versions.set(l.index, list);
  }
  const files: string[] = [];
  for (const [sym, text] of sources) {
    const f = join(dir, `${sym}.c`);
    await writeFile(f, text);
    files.push(f);
  }
  const kernels = join(dir, 'kernels.so');
  await runCompiler(['-O2', '-march=x86-64', '-fopenmp', '-fPIC', '-shared', '-std=gnu11', '-o', kernels, ...files]);
  const choices = new Map<number, LayerChoice>([...versions].map(([i, vs]) => [i, { vec: 1, versions: vs.map((v) => v.id) }]));
  const gp = buildGraphPlan(graph, choices, 1);
  const layers = graph.layers.map((l) => fromIrLayer(l, versions.get(l.index) ?? []));
  return { plan: translatePlan(gp, layers, { threads }), kernels };
}
