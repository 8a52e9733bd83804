/**
 * `veltair inspect MODEL.onnx [--input-shape NAME=1x3x224x224]… [--json]`: the layer table a user
 * reads before compiling — op, shapes, MACs, workload key, whether veltair tunes it.
 */
import type { Command } from 'commander';
import { loadModel, parseInputShape } from '../onnx/load.js';
import { lowerToLayers, summarise } from '../ir/lower.js';
import type { Layer, LayerGraph, EpilogueStep } from '../ir/layer.js';
import type { InferredModel } from '../onnx/model.js';
import { formatTable, printJson, printLine } from '../terminal/output.js';

export interface InspectReport {
  readonly model: {
    readonly path: string;
    readonly sha256: string;
    readonly opset: number;
    readonly inputs: readonly { name: string; dtype: string; shape: readonly number[] }[];
    readonly outputs: readonly { name: string; dtype: string; shape: readonly number[] }[];
  };
  readonly layers: readonly InspectLayer[];
  readonly totals: { layers: number; tunableLayers: number; uniqueWorkloads: number; macs: number };
}

export interface InspectLayer {
  readonly index: number;
  readonly name: string;
  readonly op: string;
  readonly inputShapes: readonly (readonly number[])[];
  readonly outputShape: readonly number[];
  readonly groups?: number;
  readonly macs: number;
  readonly workload: string | null;
  readonly tunable: boolean;
  readonly epilogue: readonly string[];
}

export function describeEpilogueStep(step: EpilogueStep): string {
  switch (step.kind) {
    case 'activation':
      return step.activation.fn;
    default:
      return step.kind;
  }
}

function inspectLayer(layer: Layer): InspectLayer {
  const groups = layer.workload?.op === 'conv2d' ? layer.workload.groups : undefined;
  return {
    index: layer.index,
    name: layer.name,
    op: layer.op,
    inputShapes: layer.inputShapes,
    outputShape: layer.outputShape,
    ...(groups === undefined ? {} : { groups }),
    macs: layer.macs,
    workload: layer.workload?.key ?? null,
    tunable: layer.tunable,
    epilogue: layer.epilogue.map(describeEpilogueStep),
  };
}

export function buildInspectReport(inferred: InferredModel, graph: LayerGraph): InspectReport {
  const model = inferred.model;
  return {
    model: {
      path: model.path,
      sha256: model.sha256,
      opset: model.opsetImports.get('') ?? model.opsetImports.get('ai.onnx') ?? 0,
      inputs: inferred.inputs.map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape })),
      outputs: inferred.outputs.map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape })),
    },
    layers: graph.layers.map(inspectLayer),
    totals: summarise(graph),
  };
}

const shapeText = (s: readonly number[]) => s.join('x') || 'scalar';
/** Node names come from the model: keep them printable and short in the human table. */
const printable = (s: string, max = 32) => {
  const clean = s.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > max ? clean.slice(0, max - 1) + '…' : clean;
};

export function formatInspectReport(r: InspectReport): string {
  const header = ['#', 'op', 'name', 'inputs', 'output', 'MMACs', 'workload', 'epilogue'];
  const rows = r.layers.map((l) => [
    String(l.index),
    l.op + (l.groups !== undefined && l.groups > 1 ? ` g${l.groups}` : ''),
    printable(l.name),
    l.inputShapes.map(shapeText).join(', '),
    shapeText(l.outputShape),
    (l.macs / 1e6).toFixed(2),
    l.workload ?? '-',
    l.epilogue.join('+') || '-',
  ]);
  const io = (vs: InspectReport['model']['inputs']) => vs.map((v) => `${printable(v.name)}:${v.dtype}[${shapeText(v.shape)}]`).join(', ');
  return [
    `model   ${r.model.path}`,
    `sha256  ${r.model.sha256}`,
    `opset   ${r.model.opset}`,
    `inputs  ${io(r.model.inputs)}`,
    `outputs ${io(r.model.outputs)}`,
    '',
    formatTable([header, ...rows], new Set([0, 5])),
    '',
    `${r.totals.layers} layers, ${r.totals.tunableLayers} tunable, ${r.totals.uniqueWorkloads} unique workloads, ` +
      `${(r.totals.macs / 1e9).toFixed(3)} GMACs`,
  ].join('\n');
}

export function collectInputShape(value: string, previous: Map<string, readonly number[]>): Map<string, readonly number[]> {
  const { name, shape } = parseInputShape(value);
  return new Map(previous).set(name, shape);
}

export function registerInspectCommand(program: Command): void {
  program
    .command('inspect')
    .description('print the layer table of an ONNX model: ops, shapes, MACs, workload keys')
    .argument('<model>', 'path to an .onnx file')
    .option(
      '--input-shape <name=dims>',
      'pin an input shape, e.g. input=1x3x224x224 (repeatable; batch defaults to 1)',
      collectInputShape,
      new Map<string, readonly number[]>(),
    )
    .option('--json', 'machine-readable output on stdout')
    .action(async (modelPath: string, opts: { inputShape: Map<string, readonly number[]>; json?: boolean }) => {
      const inferred = await loadModel(modelPath, { inputShapes: opts.inputShape });
      const report = buildInspectReport(inferred, lowerToLayers(inferred));
      if (opts.json) printJson(report);
      else printLine(formatInspectReport(report));
    });
}
