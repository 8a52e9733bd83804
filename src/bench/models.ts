/**
 * The benchmark models: zoo models built into a temp folder, loaded and lowered by veltair's own
 * front end, so the benchmarked workloads are exactly the layers `veltair inspect` reports.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LayerGraph } from '../ir/layer.js';
import { lowerToLayers } from '../ir/lower.js';
import { loadModel } from '../onnx/load.js';
import { writeZooModel } from '../zoo/index.js';

export interface BenchModel {
  readonly name: string;
  readonly path: string;
  readonly graph: LayerGraph;
}

export interface BenchModels {
  readonly dir: string;
  readonly models: ReadonlyMap<string, BenchModel>;
  dispose(): Promise<void>;
}

export async function buildBenchModels(names: readonly string[]): Promise<BenchModels> {
  const dir = await mkdtemp(join(tmpdir(), 'veltair-bench-'));
  const models = new Map<string, BenchModel>();
  try {
    for (const name of names) {
      const path = join(dir, `${name}.onnx`);
      await writeZooModel(name, path);
      models.set(name, { name, path, graph: lowerToLayers(await loadModel(path)) });
    }
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  return { dir, models, dispose: () => rm(dir, { recursive: true, force: true }) };
}
