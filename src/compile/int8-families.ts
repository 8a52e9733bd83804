/**
 * The INT8 half of a compile: every qconv2d / qmatmul layer the INT8 kernels take (the others were
 * refused before tuning: refuseUncompilableQuantized) tuned into a family (tune/int8-tune.ts) on the
 * INT8 paths the target's ISA level runs, checked against the integer reference, timed at the
 * compile's levels with a co-runner bank of its own when a noisy level is asked for.
 */
import type { Layer, LayerGraph } from '../ir/layer.js';
import { int8ProblemOf } from '../space/int8-problem.js';
import { isInt8KernelLayer } from '../bundle/plan-quant.js';
import { referenceOfU8 } from '../ir/quant-reference.js';
import { tuneInt8Layer, type Int8LayerFamily } from '../tune/int8-tune.js';
import { int8PathsAt } from '../toolchain/isa.js';
import { targetLevel, type Target } from '../toolchain/target.js';
import { openLevelBank, planCores } from '../interference/bank.js';

/** Throws UNSUPPORTED_QUANTIZATION naming the first INT8 layer the kernels cannot take (int8ProblemOf says why). */
export function refuseUncompilableQuantized(graph: LayerGraph): void {
  for (const l of graph.layers.filter(isInt8KernelLayer)) int8ProblemOf(l);
}

export const int8LayersOf = (graph: LayerGraph): Layer[] => graph.layers.filter(isInt8KernelLayer);

export interface Int8CompileOptions {
  readonly trials: number;
  readonly maxVersions: number;
  readonly levels: readonly number[];
  readonly threads: number;
  readonly seed: number;
  /** Timing window per measurement, ms (the compile's --window-ms). */
  readonly minTimeMs: number;
  readonly say: (m: string) => void;
}

export async function tuneInt8Families(graph: LayerGraph, target: Target, o: Int8CompileOptions): Promise<Map<number, Int8LayerFamily>> {
  const layers = int8LayersOf(graph);
  const out = new Map<number, Int8LayerFamily>();
  if (layers.length === 0) return out;
  const noisy = o.levels.some((l) => l !== 0);
  const bank = noisy ? await openLevelBank({ levels: o.levels, plan: planCores([o.threads]) }) : undefined;
  try {
    for (const l of layers) {
      const f = await tuneInt8Layer(l, {
        reference: referenceOfU8,
        paths: int8PathsAt(targetLevel(target)),
        trials: o.trials,
        maxVersions: o.maxVersions,
        threads: o.threads,
        cflags: target.cflags,
        seed: o.seed,
        levels: o.levels,
        minTimeMs: o.minTimeMs,
        ...(bank ? { bank } : {}),
        onNote: (m) => o.say(`note: ${m}`),
      });
      out.set(l.index, f);
    }
  } finally {
    await bank?.close();
  }
  return out;
}

export interface Int8Summary {
  readonly layers: number;
  /** Versions kept per layer → how many layers kept that many. */
  readonly versionsHistogram: Record<string, number>;
  readonly measured: number;
  /** Candidates that crashed, timed out or differed from the integer reference. */
  readonly failed: number;
  /** The thread count INT8 candidates were timed at. */
  readonly threads: number;
}

export function int8Summary(families: ReadonlyMap<number, Int8LayerFamily>, threads: number): Int8Summary {
  const histogram: Record<string, number> = {};
  let measured = 0,
    failed = 0;
  for (const f of families.values()) {
    histogram[String(f.family.count)] = (histogram[String(f.family.count)] ?? 0) + 1;
    measured += f.measured;
    failed += f.failed;
  }
  return { layers: families.size, versionsHistogram: histogram, measured, failed, threads };
}
