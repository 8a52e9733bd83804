/**
 * Before anything is tuned: can the runtime execute every step of this model's plan? The graph is
 * planned with every tunable layer at the target's widest vector width (what compile will choose),
 * INT8 kernel layers as the kernels compile will build, and every other layer lowered to its native op; a layer the runtime has no lowering for — or
 * cannot lower with these attributes and layouts — is collected, so `veltair compile` refuses a
 * model in seconds, naming every such layer, instead of after an hour of tuning.
 */
import { buildGraphPlan, type LayerChoice } from '../bundle/plan.js';
import { userError, type VeltairError } from '../errors.js';
import type { LayerGraph } from '../ir/layer.js';
import { fromIrLayer } from './runtime-layer.js';
import { isInt8KernelLayer } from '../bundle/plan-quant.js';
import { translatePlan } from './translate.js';

export interface UnsupportedStep {
  readonly layer: number;
  readonly message: string;
}

/** Every layer of `graph` the runtime could not run (empty: it can run them all). */
export function unsupportedLayers(graph: LayerGraph, vectorWidth: number): UnsupportedStep[] {
  const choices = new Map<number, LayerChoice>([
    ...graph.layers.filter((l) => l.tunable).map((l): [number, LayerChoice] => [l.index, { vec: vectorWidth, versions: [] }]),
    ...graph.layers.filter(isInt8KernelLayer).map((l): [number, LayerChoice] => [l.index, { vec: 1, versions: [] }]),
  ]);
  const plan = buildGraphPlan(graph, choices, vectorWidth);
  const found: UnsupportedStep[] = [];
  const tunable = new Set(choices.keys());
  const layers = graph.layers.map((l) => fromIrLayer(l));
  // Tunable layers are the kernels compile is about to build; only the other steps are checked here.
  translatePlan({ ...plan, steps: plan.steps.filter((p) => p.op !== 'layer' || !tunable.has(p.layer)) }, layers, {
    onUnsupported: (e: VeltairError) => found.push({ layer: Number(/^layer (\d+)/.exec(e.message)?.[1] ?? -1), message: e.message }),
  });
  return found;
}

/** Throw one UNSUPPORTED_OPS error listing every layer the runtime cannot run. */
export function assertRunnable(graph: LayerGraph, vectorWidth: number, model: string): void {
  const found = unsupportedLayers(graph, vectorWidth);
  if (found.length === 0) return;
  const shown = found
    .slice(0, 6)
    .map((f) => f.message)
    .join('; ');
  const layers = `${found.length} layer${found.length === 1 ? '' : 's'}`;
  throw userError(
    'UNSUPPORTED_OPS',
    `${model}: the runtime cannot run ${layers}: ${shown}${found.length > 6 ? '; …' : ''}`,
    'nothing was tuned; re-export the model without these ops (or with supported attributes), or run it with ONNX Runtime',
  );
}
