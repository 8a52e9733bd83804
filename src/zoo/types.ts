/** What the zoo registry knows about each model, and how build options are declared and checked. */
import type { ModelSpec, ValueSpec } from '../onnx/encode.js';
import { userError } from '../errors.js';

export interface ZooOption {
  readonly name: string;
  readonly description: string;
  readonly kind: 'integer' | 'boolean';
  readonly default: number | boolean;
  /** Inclusive bounds for integers. */
  readonly min?: number;
  readonly max?: number;
}

export type ZooOptionValues = Readonly<Record<string, number | boolean>>;

export interface ZooModel {
  readonly name: string;
  readonly description: string;
  /** Where the architecture and its published MAC figure come from. */
  readonly reference: string;
  readonly options: readonly ZooOption[];
  /** Graph inputs for these options, without building any weights. */
  inputs(opts?: ZooOptionValues): readonly ValueSpec[];
  /** The full model, weights included, deterministic in the options (seed included). */
  build(opts?: ZooOptionValues): ModelSpec;
}

/** Every model takes a seed: different seeds give different weights with the same architecture. */
export const SEED_OPTION: ZooOption = {
  name: 'seed',
  description: 'seed of the weight generator',
  kind: 'integer',
  default: 1,
  min: 0,
  max: 2 ** 32 - 1,
};

/**
 * Fill in defaults and check every given option against the model's declarations, so a typo or
 * an out-of-range value is a clear user error, not a silently different model.
 */
export function resolveOptions(
  model: Pick<ZooModel, 'name' | 'options'>,
  given: ZooOptionValues = {},
): Readonly<Record<string, number | boolean>> {
  const byName = new Map(model.options.map((o) => [o.name, o]));
  const valid = model.options.map((o) => o.name).join(', ') || '(none)';
  for (const key of Object.keys(given)) {
    if (!byName.has(key)) {
      throw userError('BAD_ARGUMENT', `zoo model ${model.name} has no option ${JSON.stringify(key)}`, `valid options: ${valid}`);
    }
  }
  const out: Record<string, number | boolean> = {};
  for (const o of model.options) {
    const v = given[o.name] ?? o.default;
    if (o.kind === 'boolean') {
      if (typeof v !== 'boolean') {
        throw userError(
          'BAD_ARGUMENT',
          `zoo model ${model.name}: option ${o.name} must be true or false, got ${JSON.stringify(v)}`,
          o.description,
        );
      }
    } else if (typeof v !== 'number' || !Number.isInteger(v) || (o.min !== undefined && v < o.min) || (o.max !== undefined && v > o.max)) {
      throw userError(
        'BAD_ARGUMENT',
        `zoo model ${model.name}: option ${o.name} must be an integer in [${o.min ?? '-∞'}, ${o.max ?? '∞'}], got ${JSON.stringify(v)}`,
        o.description,
      );
    }
    out[o.name] = v;
  }
  return out;
}

export function intOption(opts: ZooOptionValues, name: string): number {
  const v = opts[name];
  if (typeof v !== 'number') throw new Error(`zoo option ${name} is not resolved to an integer`);
  return v;
}

export function boolOption(opts: ZooOptionValues, name: string): boolean {
  const v = opts[name];
  if (typeof v !== 'boolean') throw new Error(`zoo option ${name} is not resolved to a boolean`);
  return v;
}
