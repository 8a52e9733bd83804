/**
 * Structural checks before shape inference: every operator supported (all offenders reported in
 * one message), every input produced by something, and a topological order (ONNX files may list
 * nodes in any order; a cycle is reported with the nodes on it).
 */
import type { OnnxModel, OnnxNode } from './model.js';
import { nodeLabel } from './attributes.js';
import { isDefaultDomain, opDefinition } from './ops/registry.js';
import { quoteForMessage, userError } from '../errors.js';

/** Node names listed per unsupported operator; beyond this the message gives a count. */
const MAX_LISTED_NODES = 5;

export function checkOperatorsSupported(model: OnnxModel): void {
  const byOp = new Map<string, string[]>();
  for (const n of model.graph.nodes) {
    if (opDefinition(n.domain, n.opType) !== undefined) continue;
    const op = isDefaultDomain(n.domain) ? n.opType : `${n.domain}.${n.opType}`;
    const names = byOp.get(op) ?? [];
    names.push(n.name === '' ? `producing ${quoteForMessage(n.outputs[0] ?? '')}` : quoteForMessage(n.name));
    byOp.set(op, names);
  }
  if (byOp.size === 0) return;
  const parts = [...byOp].map(([op, names]) => {
    const shown = names.slice(0, MAX_LISTED_NODES).join(', ');
    const more = names.length > MAX_LISTED_NODES ? ` and ${names.length - MAX_LISTED_NODES} more` : '';
    return `${quoteForMessage(op, 60).slice(1, -1)} (${names.length === 1 ? 'node' : 'nodes'} ${shown}${more})`;
  });
  throw userError(
    'UNSUPPORTED_OPS',
    `${quoteForMessage(model.path, 200)}: unsupported operators: ${parts.join(', ')}`,
    'veltair compiles standard ai.onnx CNN and transformer operators; re-export without these operators ' +
      '(e.g. keep post-processing such as NMS/TopK outside the model) or run it with ONNX Runtime',
  );
}

/** Every non-empty node input and graph output must come from an initializer, a graph input or a node. */
export function checkInputsProduced(model: OnnxModel): void {
  const g = model.graph;
  const available = new Set<string>([...g.initializers.keys(), ...g.inputs.map((i) => i.name)]);
  const producedBy = new Map<string, OnnxNode>();
  for (const n of g.nodes) {
    for (const o of n.outputs) {
      if (o === '') continue;
      const prior = producedBy.get(o);
      if (prior !== undefined || available.has(o)) {
        throw userError(
          'BAD_INPUT',
          `${quoteForMessage(model.path, 200)}: value ${quoteForMessage(o)} is produced twice ` +
            `(by ${nodeLabel(n)}${prior ? ` and ${nodeLabel(prior)}` : ' and a graph input/initializer'})`,
          'an ONNX graph assigns each value once; the model file is malformed, re-export it',
        );
      }
      producedBy.set(o, n);
    }
  }
  for (const n of g.nodes) {
    for (const i of n.inputs) {
      if (i !== '' && !available.has(i) && !producedBy.has(i)) {
        throw userError(
          'MISSING_INPUT',
          `${quoteForMessage(model.path, 200)}: ${nodeLabel(n)} reads ${quoteForMessage(i)}, which no initializer, graph input or node provides`,
          'the model is incomplete (a missing initializer or a dangling edge); re-export it, ' +
            'or if its weights live in external data files keep those beside the model',
        );
      }
    }
  }
  for (const o of g.outputs) {
    if (!available.has(o.name) && !producedBy.has(o.name)) {
      throw userError(
        'MISSING_INPUT',
        `${quoteForMessage(model.path, 200)}: graph output ${quoteForMessage(o.name)} is not produced by any node`,
        'the model is incomplete; re-export it',
      );
    }
  }
}

/** Kahn's algorithm, stable with respect to file order; throws CYCLIC_GRAPH naming a cycle. */
export function topologicalOrder(model: OnnxModel): OnnxNode[] {
  const nodes = model.graph.nodes;
  const producer = new Map<string, number>();
  nodes.forEach((n, i) =>
    n.outputs.forEach((o) => {
      if (o !== '') producer.set(o, i);
    }),
  );
  const pending = nodes.map((n) => new Set(n.inputs.filter((i) => producer.has(i)).map((i) => producer.get(i)!)).size);
  const consumers = nodes.map(() => [] as number[]);
  nodes.forEach((n, i) => {
    for (const p of new Set(n.inputs.filter((x) => producer.has(x)).map((x) => producer.get(x)!))) consumers[p]!.push(i);
  });
  const ready = pending.flatMap((c, i) => (c === 0 ? [i] : []));
  const order: OnnxNode[] = [];
  for (let head = 0; head < ready.length; head++) {
    const i = ready[head]!;
    order.push(nodes[i]!);
    for (const c of consumers[i]!) {
      if (--pending[c]! === 0) ready.push(c);
    }
  }
  if (order.length === nodes.length) return order;
  const cycle = findCycle(nodes, producer, pending);
  throw userError(
    'CYCLIC_GRAPH',
    `${quoteForMessage(model.path, 200)}: the graph has a cycle: ${cycle.map((i) => nodeLabel(nodes[i]!)).join(' → ')}`,
    'ONNX graphs must be acyclic (loops belong in Loop/Scan sub-graphs); the model file is malformed, re-export it',
  );
}

/** Walk back through unfinished producers until a node repeats; that stretch is a cycle. */
function findCycle(nodes: readonly OnnxNode[], producer: ReadonlyMap<string, number>, pending: readonly number[]): number[] {
  let at = pending.findIndex((c) => c > 0);
  const seenAt = new Map<number, number>();
  const path: number[] = [];
  while (!seenAt.has(at)) {
    seenAt.set(at, path.length);
    path.push(at);
    const next = nodes[at]!.inputs.map((i) => producer.get(i)).find((p) => p !== undefined && pending[p]! > 0);
    if (next === undefined) break;
    at = next;
  }
  return path.slice(seenAt.get(at) ?? 0).reverse();
}
