/**
 * The executor's native steps in execution order, each with what the profile says about it: the
 * plan step it runs, its manifest layer, kind (tunable kernel, other op, reorder), analytic
 * features (flops, bytes moved, working set), and — for tunable steps — its versions in executor
 * order. Built from the manifest and the session's plan-step → native-step map; pure.
 */
import type { Manifest, ManifestVersion } from '../bundle/manifest.js';
import type { GraphPlan, PlanStep } from '../bundle/plan.js';
import type { StepKind } from '../schedule/scheduling-profile.js';

export interface MappedStep {
  readonly native: number;
  readonly name: string;
  readonly op: string;
  readonly kind: StepKind;
  readonly layer: number | null;
  readonly flops: number;
  readonly bytes: number;
  readonly footprintBytes: number;
  /** Tunable steps: versions in executor order; index of the step in session.tunableLayers. */
  readonly versions: readonly ManifestVersion[];
  readonly tunableIndex: number;
}

export function mapSteps(m: Manifest, stepOfPlan: readonly number[], stepCount: number, tunableSteps: readonly number[]): MappedStep[] {
  const plan = m.graphPlan as GraphPlan;
  const layers = new Map(m.layers.map((l) => [l.index, l]));
  const planOf = new Map<number, PlanStep>();
  plan.steps.forEach((p) => {
    const s = stepOfPlan[p.index] ?? -1;
    if (s >= 0) planOf.set(s, p);
  });
  const valueBytes = (ids: readonly number[]) => ids.reduce((s, id) => s + (plan.values[id]?.bytes ?? 0), 0);
  const out: MappedStep[] = [];
  for (let s = 0; s < stepCount; s++) {
    const p = planOf.get(s);
    const moved = p ? valueBytes(p.inputs) + valueBytes(p.outputs) : 0;
    if (!p || p.op === 'reorder') {
      out.push({
        native: s,
        name: p ? `reorder ${p.from}→${p.to}` : `step ${s}`,
        op: 'reorder',
        kind: 'reorder',
        layer: null,
        flops: 0,
        bytes: moved,
        footprintBytes: moved,
        versions: [],
        tunableIndex: -1,
      });
      continue;
    }
    const layer = layers.get(p.layer)!;
    const tunableIndex = tunableSteps.indexOf(s);
    if (p.versions && p.versions.length > 0 && tunableIndex >= 0) {
      const byId = new Map(layer.versions.map((v) => [v.id, v]));
      const versions = p.versions.map((id) => byId.get(id)!);
      const f = versions[0]!.features;
      out.push({
        native: s,
        name: layer.name,
        op: layer.op,
        kind: 'tunable',
        layer: layer.index,
        flops: f.flops,
        bytes: f.footprintBytes.total,
        footprintBytes: f.footprintBytes.total,
        versions,
        tunableIndex,
      });
      continue;
    }
    const params = Object.values(layer.params).reduce((t, r) => t + r.length, 0);
    const elements = layer.outputShape.reduce((a, b) => a * b, 1);
    out.push({
      native: s,
      name: layer.name,
      op: layer.op,
      kind: 'op',
      layer: layer.index,
      flops: elements,
      bytes: moved + params,
      footprintBytes: moved + params,
      versions: [],
      tunableIndex: -1,
    });
  }
  return out;
}
