/**
 * Synthetic extreme-classification data with planted structure, for tests and benchmarks at
 * 10k–1M labels, written in the XC format:
 *  - every label has a sparse prototype: `prototype` distinct features with weights in [0.5, 1.5];
 *  - label frequencies are Zipfian (P(rank r) ∝ r^-zipf; label 0 is the most frequent);
 *  - a sample has 1 label (60%), 2 (30%) or 3 (10%), capped by `maxLabels`; each prototype feature
 *    of each of its labels is present with probability `keep` (value: weight × U[0.8, 1.2]), plus
 *    `noise` uniformly random features (value U[0.5, 1.5]);
 *  - train and test are independent draws from the same distribution (separate random streams).
 * The same options and seed give byte-identical files on every machine.
 */
import { seededRng, type Rng } from '../random.js';
import { lineChunks, writeFileAtomic } from '../atomic-file.js';

export interface PlantedOptions {
  readonly labels: number;
  readonly features: number;
  readonly train: number;
  readonly test: number;
  readonly seed: number;
  readonly prototype: number;
  readonly keep: number;
  readonly noise: number;
  readonly zipf: number;
  readonly maxLabels: number;
}

export const PLANTED_DEFAULTS: Omit<PlantedOptions, 'labels' | 'features' | 'train' | 'test'> = {
  seed: 1,
  prototype: 12,
  keep: 0.7,
  noise: 4,
  zipf: 1,
  maxLabels: 3,
};

export interface PlantedModel {
  readonly options: PlantedOptions;
  readonly protoFeatures: Int32Array;
  readonly protoWeights: Float32Array;
  readonly cdf: Float64Array;
}

function mixSeed(seed: number, stream: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(stream + 1, 0xc2b2ae35)) >>> 0;
}

export function plantedModel(o: PlantedOptions): PlantedModel {
  const rng = seededRng(mixSeed(o.seed, 0));
  const p = Math.min(o.prototype, o.features);
  const protoFeatures = new Int32Array(o.labels * p);
  const protoWeights = new Float32Array(o.labels * p);
  for (let c = 0; c < o.labels; c++) {
    for (let k = 0; k < p; k++) {
      let f: number;
      let clash: boolean;
      do {
        f = Math.floor(rng.next() * o.features);
        clash = false;
        for (let q = 0; q < k; q++) clash ||= protoFeatures[c * p + q] === f;
      } while (clash);
      protoFeatures[c * p + k] = f;
      protoWeights[c * p + k] = 0.5 + rng.next();
    }
  }
  const cdf = new Float64Array(o.labels);
  let sum = 0;
  for (let r = 0; r < o.labels; r++) {
    sum += (r + 1) ** -o.zipf;
    cdf[r] = sum;
  }
  for (let r = 0; r < o.labels; r++) cdf[r]! /= sum;
  return { options: { ...o, prototype: p }, protoFeatures, protoWeights, cdf };
}

function zipfLabel(cdf: Float64Array, u: number): number {
  let lo = 0,
    hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid]! < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One sample line (without newline). */
export function plantedLine(m: PlantedModel, rng: Rng): string {
  const o = m.options;
  const u = rng.next();
  const want = Math.min(o.maxLabels, o.labels, u < 0.6 ? 1 : u < 0.9 ? 2 : 3);
  const labels: number[] = [];
  while (labels.length < want) {
    const c = zipfLabel(m.cdf, rng.next());
    if (!labels.includes(c)) labels.push(c);
  }
  const values = new Map<number, number>();
  for (const c of labels) {
    for (let k = 0; k < o.prototype; k++) {
      if (rng.next() >= o.keep) continue;
      const f = m.protoFeatures[c * o.prototype + k]!;
      values.set(f, (values.get(f) ?? 0) + m.protoWeights[c * o.prototype + k]! * (0.8 + 0.4 * rng.next()));
    }
  }
  if (values.size === 0) values.set(m.protoFeatures[labels[0]! * o.prototype]!, m.protoWeights[labels[0]! * o.prototype]!);
  for (let k = 0; k < o.noise; k++) {
    const f = Math.floor(rng.next() * o.features);
    values.set(f, (values.get(f) ?? 0) + 0.5 + rng.next());
  }
  const feats = [...values].sort((a, b) => a[0] - b[0]).map(([f, v]) => `${f}:${v.toFixed(3)}`);
  return `${labels.sort((a, b) => a - b).join(',')} ${feats.join(' ')}`;
}

/** Write `count` samples of stream `stream` as an XC file at `path` (atomically). */
export async function writePlantedFile(m: PlantedModel, path: string, count: number, stream: number): Promise<void> {
  const rng = seededRng(mixSeed(m.options.seed, stream));
  function* samples(): Generator<string> {
    for (let i = 0; i < count; i++) yield plantedLine(m, rng);
  }
  await writeFileAtomic(path, lineChunks(`${count} ${m.options.features} ${m.options.labels}`, samples()));
}
