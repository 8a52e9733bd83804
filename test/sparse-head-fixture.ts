/**
 * A planted model for the sparse-head tests: the right answers are known. Classes are
 * src/sparse/planted.ts prototypes (each class a sparse weight vector over the features); the model
 * is features [1, F] → Gemm(identity) → Gemm(prototypes, transB=1) + bias 0 → Softmax, so a class's
 * score is its prototype's dot product with the sample and the label a sample was drawn from
 * scores highest. The calibration file is planted samples (XC format, with their labels).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeModel } from '../src/onnx/encode.js';
import { PLANTED_DEFAULTS, plantedModel, writePlantedFile, type PlantedModel } from '../src/sparse/planted.js';
import type { CompileOptions } from '../src/compile/options.js';
import { compileFixture } from './compile-fixture.js';

export const LABELS = 3000;
export const FEATURES = 256;
export const CALIBRATION_ROWS = 200;

export interface PlantedHead {
  readonly dir: string;
  readonly model: string;
  readonly calibration: string;
  readonly planted: PlantedModel;
  /** Neuron-major [labels][FEATURES] output weights. */
  readonly weight: Float32Array;
}

/** `labels` classes (default LABELS); the serve test takes more, so that a request's output layer is slow enough to queue behind. */
export async function writePlantedHead(dir: string, labels = LABELS): Promise<PlantedHead> {
  await mkdir(dir, { recursive: true });
  const planted = plantedModel({ ...PLANTED_DEFAULTS, labels, features: FEATURES, train: 0, test: CALIBRATION_ROWS, seed: 3 });
  const p = planted.protoFeatures.length / labels;
  const weight = new Float32Array(labels * FEATURES);
  for (let c = 0; c < labels; c++)
    for (let k = 0; k < p; k++) weight[c * FEATURES + planted.protoFeatures[c * p + k]!] = planted.protoWeights[c * p + k]!;
  const identity = new Float32Array(FEATURES * FEATURES);
  for (let i = 0; i < FEATURES; i++) identity[i * FEATURES + i] = 1;
  const model = join(dir, 'planted.onnx');
  await writeFile(
    model,
    encodeModel({
      inputs: [{ name: 'features', dtype: 'float32', shape: [1, FEATURES] }],
      outputs: [{ name: 'scores', dtype: 'float32', shape: [1, labels] }],
      initializers: [
        ['eye', { dtype: 'float32', dims: [FEATURES, FEATURES], data: identity }],
        ['classes', { dtype: 'float32', dims: [labels, FEATURES], data: weight }],
        ['classes_bias', { dtype: 'float32', dims: [labels], data: new Float32Array(labels) }],
      ],
      nodes: [
        { op: 'Gemm', name: 'hidden', inputs: ['features', 'eye'], outputs: ['h'] },
        { op: 'Gemm', name: 'classes', inputs: ['h', 'classes', 'classes_bias'], outputs: ['logits'], attrs: { transB: 1 } },
        { op: 'Softmax', name: 'softmax', inputs: ['logits'], outputs: ['scores'], attrs: { axis: 1 } },
      ],
    }),
  );
  const calibration = join(dir, 'calibration.txt');
  await writePlantedFile(planted, calibration, CALIBRATION_ROWS, 2);
  return { dir, model, calibration, planted, weight };
}

/** The cheapest compile that still tunes the prefix: one trial, quiet level, one thread. */
export function compileArgs(h: PlantedHead, out: string, extra: readonly string[] = []): string[] {
  return [
    'compile',
    h.model,
    '-o',
    out,
    '--trials',
    '1',
    '--levels',
    '0',
    '--threads',
    '1',
    '--profile-threads',
    'none',
    '--db',
    join(h.dir, 'db'),
    '--sparse-min-outputs',
    '1000',
    '--calibration',
    h.calibration,
    '--json',
    ...extra,
  ];
}

/** compileArgs' compile, in this process (compileModel): for tests that need the bundle, not the CLI. */
export async function compilePlanted(h: PlantedHead, out: string, extra: CompileOptions = {}) {
  return compileFixture(h.model, {
    output: out,
    trials: 1,
    levels: [0],
    threads: [1],
    profileThreads: [],
    db: join(h.dir, 'db'),
    sparseMinOutputs: 1000,
    calibration: h.calibration,
    ...extra,
  });
}
