/**
 * Graph clean-up before lowering: values that are only another name for a value (Identity,
 * inference-time Dropout, shape-preserving views, identity Transposes, pads of nothing) are merged into it, and
 * chains of views (Reshape/Flatten/Squeeze/Unsqueeze over row-major data never move a byte) collapse
 * into one Reshape.
 */
import type { OnnxNode } from '../onnx/model.js';
import { attrInts } from '../onnx/attributes.js';
import { indexGraph, isConstant, replaceNodes, renameValue, shapeOf, soleConsumer, synthNode, type WorkGraph } from './work-graph.js';

export const VIEW_OPS: ReadonlySet<string> = new Set(['Reshape', 'Flatten', 'Squeeze', 'Unsqueeze']);

export function isViewOp(n: OnnxNode): boolean {
  return n.domain === '' && VIEW_OPS.has(n.opType);
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** The value this node merely renames, if it is a pure alias of its first input. */
function aliasSource(g: WorkGraph, n: OnnxNode, unusedOutputs: (vs: readonly string[]) => boolean): string | undefined {
  if (n.domain !== '') return undefined;
  const x = n.inputs[0];
  if (x === undefined || x === '' || isConstant(g, x)) return undefined;
  switch (n.opType) {
    case 'Identity':
      return x;
    case 'Dropout':
      // At inference Dropout passes data through; its mask output must be unused to drop it.
      return unusedOutputs(n.outputs.slice(1)) ? x : undefined;
    case 'Transpose': {
      const perm = attrInts(n, 'perm');
      return perm !== undefined && perm.every((p, i) => p === i) ? x : undefined;
    }
    case 'Pad': {
      // A constant pad of nothing (PyTorch writes one before some average pools).
      const pads = n.inputs[1] ? g.constants.get(n.inputs[1]) : undefined;
      const mode = n.attributes.get('mode');
      const constantMode = mode === undefined || (mode.kind === 'string' && mode.value === 'constant');
      return constantMode &&
        pads !== undefined &&
        !Array.isArray(pads.data) &&
        Array.from(pads.data as ArrayLike<number | bigint>).every((p) => Number(p) === 0) &&
        sameShape(shapeOf(g, x), shapeOf(g, n.outputs[0] ?? ''))
        ? x
        : undefined;
    }
    default:
      return isViewOp(n) && sameShape(shapeOf(g, x), shapeOf(g, n.outputs[0] ?? '')) ? x : undefined;
  }
}

/**
 * Make `alias` and `source` one value, keeping whichever name the outside world sees. Returns false
 * when both are externally visible (graph input → graph output, or two graph outputs): the node
 * then stays, as a copy.
 */
function mergeAlias(g: WorkGraph, source: string, alias: string): boolean {
  if (!g.graphOutputs.has(alias)) {
    renameValue(g, alias, source);
    return true;
  }
  if (!g.graphInputs.has(source) && !g.graphOutputs.has(source)) {
    renameValue(g, source, alias);
    return true;
  }
  return false;
}

export function dropAliases(g: WorkGraph): void {
  let changed = true;
  while (changed) {
    changed = false;
    const ix = indexGraph(g);
    const unused = (vs: readonly string[]): boolean =>
      vs.every((v) => v === '' || (!g.graphOutputs.has(v) && (ix.consumers.get(v) ?? []).length === 0));
    for (const n of g.nodes) {
      const source = aliasSource(g, n, unused);
      const alias = n.outputs[0];
      if (source === undefined || alias === undefined || alias === '') continue;
      const remaining = g.nodes.filter((m) => m !== n);
      const before = g.nodes;
      g.nodes = remaining;
      if (mergeAlias(g, source, alias)) {
        changed = true;
        break;
      }
      g.nodes = before;
    }
  }
}

/** Collapse view → view chains whose middle value nobody else reads into one Reshape. */
export function mergeViewChains(g: WorkGraph): void {
  let changed = true;
  while (changed) {
    changed = false;
    const ix = indexGraph(g);
    for (const second of g.nodes) {
      if (!isViewOp(second)) continue;
      const mid = second.inputs[0] ?? '';
      const first = ix.producer.get(mid);
      if (first === undefined || !isViewOp(first) || soleConsumer(g, ix, mid) !== second) continue;
      const merged = synthNode(second.name, 'Reshape', [first.inputs[0] ?? ''], second.outputs);
      replaceNodes(g, new Set([first, second]), [merged]);
      changed = true;
      break;
    }
  }
}
