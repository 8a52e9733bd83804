/**
 * ONNX's backend node tests as Debian's libonnx-testdata installs them: where they are, the ones
 * left out on purpose, and the helpers both node-test files share (which cases veltair's front end
 * knows every operator of, a data set's tensor files in order, a model with its inputs baked in).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import onnxProto from 'onnx-proto';
import type { OnnxModel, Tensor } from '../src/onnx/model.js';
import { opDefinition } from '../src/onnx/ops/registry.js';

export const NODE_TESTS = '/usr/share/libonnx-testdata/data/node';

/** Node tests with supported operators that are not checked, each with its reason. */
export const EXCLUDED: ReadonlyMap<string, string> = new Map([
  ['test_castlike_BFLOAT16_to_FLOAT', 'its test data feeds `like` as [1] while the model declares [3, 4]'],
  ['test_castlike_BFLOAT16_to_FLOAT_expanded', 'its test data feeds `like` as [1] while the model declares [3, 4]'],
  ['test_castlike_FLOAT_to_BFLOAT16', 'its test data feeds `like` as [1] while the model declares [3, 4]'],
  ['test_castlike_FLOAT_to_BFLOAT16_expanded', 'its test data feeds `like` as [1] while the model declares [3, 4]'],
  ['test_cast_BFLOAT16_to_FLOAT', 'its reference tensors store bfloat16 as UINT16 bit patterns (ONNX 1.12 generator quirk)'],
  ['test_cast_FLOAT_to_BFLOAT16', 'its reference tensors store bfloat16 as UINT16 bit patterns (ONNX 1.12 generator quirk)'],
  ['test_identity_opt', 'optional-typed graph input: veltair compiles tensor graphs only'],
  ['test_identity_sequence', 'sequence-typed graph input: veltair compiles tensor graphs only'],
]);

export interface NodeTestCase {
  readonly name: string;
  readonly dir: string;
  /** model.onnx's bytes and decoded proto. */
  readonly bytes: Uint8Array;
  readonly proto: onnxProto.onnx.ModelProto;
}

/** Every node test with data whose operators the front end knows, and how many were skipped for an unknown operator. */
export function nodeTestCases(): { cases: NodeTestCase[]; unknownOp: number } {
  const cases: NodeTestCase[] = [];
  let unknownOp = 0;
  for (const name of fs.readdirSync(NODE_TESTS).sort()) {
    const dir = path.join(NODE_TESTS, name);
    const file = path.join(dir, 'model.onnx');
    if (!fs.existsSync(file) || !fs.existsSync(path.join(dir, 'test_data_set_0')) || EXCLUDED.has(name)) continue;
    const bytes = fs.readFileSync(file);
    const proto = onnxProto.onnx.ModelProto.decode(bytes);
    const known = (proto.graph?.node ?? []).every(
      (n) => opDefinition(n.domain === 'ai.onnx' ? '' : (n.domain ?? ''), n.opType ?? '') !== undefined,
    );
    if (known) cases.push({ name, dir, bytes, proto });
    else unknownOp++;
  }
  return { cases, unknownOp };
}

/** `input_0.pb, input_1.pb, …` (or output_*) of a data set directory, in index order, as full paths. */
export function dataFiles(dir: string, prefix: 'input_' | 'output_'): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && f.endsWith('.pb'))
    .sort((a, b) => Number(a.slice(prefix.length, -3)) - Number(b.slice(prefix.length, -3)))
    .map((f) => path.join(dir, f));
}

/** The same model with `feeds` baked in as initializers (for tests whose shapes depend on input values). */
export function withInputsBaked(model: OnnxModel, feeds: ReadonlyMap<string, Tensor>): OnnxModel {
  const initializers = new Map(model.graph.initializers);
  for (const [name, t] of feeds) initializers.set(name, t);
  return { ...model, graph: { ...model.graph, initializers, inputs: model.graph.inputs.filter((i) => !feeds.has(i.name)) } };
}
