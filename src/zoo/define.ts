/** The boilerplate every zoo model shares: options checked, a seeded builder, the spec named. */
import type { ValueSpec } from '../onnx/encode.js';
import { GraphBuilder, type Value } from './builder.js';
import { type ZooModel, type ZooOption, type ZooOptionValues, SEED_OPTION, intOption, resolveOptions } from './types.js';

export interface ZooModelDefinition {
  readonly name: string;
  readonly description: string;
  readonly reference: string;
  /** Model-specific options; `seed` is added for every model. */
  readonly options?: readonly ZooOption[];
  readonly inputs: (opts: ZooOptionValues) => readonly ValueSpec[];
  /** Adds the graph to `b` from the declared inputs and declares its outputs. Options arrive resolved. */
  readonly graph: (b: GraphBuilder, inputs: readonly Value[], opts: ZooOptionValues) => void;
}

export function defineZooModel(def: ZooModelDefinition): ZooModel {
  const options = [...(def.options ?? []), SEED_OPTION];
  const declared = { name: def.name, options };
  return {
    name: def.name,
    description: def.description,
    reference: def.reference,
    options,
    inputs: (opts) => def.inputs(resolveOptions(declared, opts)),
    build: (opts) => {
      const resolved = resolveOptions(declared, opts);
      const b = new GraphBuilder(intOption(resolved, 'seed'));
      const inputs = def.inputs(resolved).map((v) => b.input(v.name, (v.shape ?? []).map(Number), v.dtype));
      def.graph(b, inputs, resolved);
      return b.build(def.name);
    },
  };
}

/** The single NCHW float image input the vision models take. */
export function imageInput(size: number, name = 'input'): ValueSpec[] {
  return [{ name, dtype: 'float32', shape: [1, 3, size, size] }];
}
