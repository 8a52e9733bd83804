/**
 * Turning declared graph-input shapes (which may name symbolic dims such as "batch_size") into
 * static shapes: caller pins (`--input-shape NAME=1x3x224x224`), dims shared by name with a pinned
 * input, and the documented default: when only the batch (dim 0) is left symbolic, it is 1.
 */
import type { Dim, OnnxModel, ValueInfo, ValueType } from './model.js';
import { checkedElementCount } from './shapes.js';
import { quoteForMessage, userError } from '../errors.js';

export type InputShapes = ReadonlyMap<string, readonly number[]>;
export type NamedType = ValueType & { readonly name: string };

const PIN_HINT = 'pin it with --input-shape NAME=1x3x224x224 (one flag per input, dims separated by "x")';

function describe(shape: readonly Dim[] | undefined): string {
  return shape === undefined ? 'no recorded shape' : `[${shape.join(', ')}]`;
}

function checkPin(model: OnnxModel, info: ValueInfo, pin: readonly number[]): void {
  const declared = info.shape;
  if (pin.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    throw userError(
      'BAD_ARGUMENT',
      `--input-shape for ${quoteForMessage(info.name)}: [${pin.join(', ')}] must be non-negative integers`,
      PIN_HINT,
    );
  }
  if (declared === undefined) return;
  const clash = declared.length !== pin.length || declared.some((d, i) => typeof d === 'number' && d !== pin[i]);
  if (clash) {
    throw userError(
      'SHAPE_MISMATCH',
      `${quoteForMessage(model.path, 200)}: input ${quoteForMessage(info.name)} is declared as ${describe(declared)} ` +
        `but --input-shape gives [${pin.join(', ')}]`,
      "a pinned shape must keep the model's rank and fixed dimensions; only symbolic dimensions can be chosen",
    );
  }
}

export function resolveInputTypes(model: OnnxModel, pins: InputShapes = new Map()): NamedType[] {
  const inputs = model.graph.inputs;
  const names = new Set(inputs.map((i) => i.name));
  for (const name of pins.keys()) {
    if (!names.has(name)) {
      throw userError(
        'BAD_ARGUMENT',
        `--input-shape names ${quoteForMessage(name)}, which is not an input of ${quoteForMessage(model.path, 200)}`,
        `valid input names: ${inputs.map((i) => quoteForMessage(i.name)).join(', ') || '(none: the model takes no inputs)'}`,
      );
    }
  }
  // A symbolic name bound by a pinned input binds the same name elsewhere (input_ids and attention_mask share "sequence").
  const bound = new Map<string, number>();
  for (const info of inputs) {
    const pin = pins.get(info.name);
    if (pin === undefined) continue;
    checkPin(model, info, pin);
    info.shape?.forEach((d, i) => {
      if (typeof d === 'string') bound.set(d, pin[i]!);
    });
  }
  const open: { input: string; index: number; dim: string }[] = [];
  for (const info of inputs) {
    if (pins.has(info.name)) continue;
    if (info.shape === undefined) {
      throw userError(
        'SYMBOLIC_DIM',
        `${quoteForMessage(model.path, 200)}: input ${quoteForMessage(info.name)} has no recorded shape`,
        PIN_HINT,
      );
    }
    info.shape.forEach((d, index) => {
      if (typeof d === 'string' && !bound.has(d)) open.push({ input: info.name, index, dim: d });
    });
  }
  const nonBatch = open.filter((o) => o.index !== 0);
  if (nonBatch.length > 0) {
    const list = nonBatch.map((o) => `${quoteForMessage(o.dim)} (dim ${o.index} of input ${quoteForMessage(o.input)})`).join(', ');
    const first = inputs.find((i) => i.name === nonBatch[0]!.input)!;
    throw userError(
      'SYMBOLIC_DIM',
      `${quoteForMessage(model.path, 200)}: symbolic dimension${nonBatch.length > 1 ? 's' : ''} ${list} not pinned; ` +
        `input ${quoteForMessage(first.name)} is declared as ${describe(first.shape)}`,
      `pin it with --input-shape ${first.name.replace(/[^\w.:/-]/g, '_')}=${(first.shape ?? []).map((d) => (typeof d === 'number' ? d : 'N')).join('x')} ` +
        '(replace each N; e.g. --input-shape NAME=1x3x224x224)',
    );
  }
  for (const o of open) bound.set(o.dim, 1);
  return inputs.map((info) => {
    const shape = pins.get(info.name) ?? (info.shape ?? []).map((d) => (typeof d === 'number' ? d : bound.get(d)!));
    checkedElementCount(shape, info.name);
    return { name: info.name, dtype: info.dtype, shape: [...shape] };
  });
}

/** Parse one `--input-shape NAME=1x3x224x224` value. */
export function parseInputShape(text: string): { name: string; shape: number[] } {
  const eq = text.lastIndexOf('=');
  const bad = (why: string): Error =>
    userError(
      'BAD_ARGUMENT',
      `--input-shape ${quoteForMessage(text)}: ${why}`,
      'write NAME=DIMS with dims separated by "x", e.g. --input-shape input=1x3x224x224',
    );
  if (eq <= 0) throw bad('expected NAME=DIMS');
  const name = text.slice(0, eq);
  const dimsText = text.slice(eq + 1).trim();
  if (dimsText === '') throw bad('no dimensions given');
  const shape = dimsText.split(/[x,]/).map((s) => {
    const t = s.trim();
    if (!/^\d+$/.test(t)) throw bad(`dimension ${quoteForMessage(t)} is not a non-negative integer`);
    const n = Number(t);
    if (!Number.isSafeInteger(n)) throw bad(`dimension ${t} is too large`);
    return n;
  });
  return { name, shape };
}

/** Parse repeated `--input-shape` flags into a map, refusing a name given twice. */
export function parseInputShapes(texts: readonly string[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const t of texts) {
    const { name, shape } = parseInputShape(t);
    if (out.has(name)) {
      throw userError('BAD_ARGUMENT', `--input-shape gives ${quoteForMessage(name)} twice`, 'pass one --input-shape per input');
    }
    out.set(name, shape);
  }
  return out;
}
