/**
 * The common back half of the real data-set builders (wordnet, debian-packages): records of named
 * features and named labels in, an XC-format data set out, with the numbers that say what it is.
 *
 * The split: a record is a test record when sha256(`${seed}:${id}`) read as a fraction is below
 * testFraction, so the cut is seeded, deterministic and independent of record order.
 * Vocabularies come from the training records only: a label is any name with ≥ minLabelCount
 * training occurrences, a feature any name with ≥ minFeatureCount; both numbered most frequent first
 * (ties by name). Test labels outside the training labels cannot be predicted and are dropped
 * (counted); a record left with no label or no feature is dropped (counted). Feature values are 1
 * (a bag of distinct names).
 * The floor: the precision@1 and @5 on the test file of always predicting the most frequent
 * training labels, the score any model must beat to show it learned anything.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { userError } from '../errors.js';
import { lineChunks, writeFileAtomic, writeTextAtomic } from '../atomic-file.js';

export interface XcRecord {
  readonly id: string;
  readonly features: readonly string[];
  readonly labels: readonly string[];
}

/** What every real data set's build takes: where it goes, the seeded cut, the filters and the spec's width. */
export interface XcSplitOptions {
  readonly outDir: string;
  readonly seed: number;
  readonly testFraction: number;
  readonly minFeatureCount: number;
  readonly minLabelCount: number;
  readonly hidden: number;
}

/** The defaults of XcSplitOptions (all but outDir), shared by `veltair data wordnet` and `debian-packages`. */
export const XC_DEFAULTS = { seed: 1, testFraction: 0.1, minFeatureCount: 2, minLabelCount: 1, hidden: 128 };

export interface XcBuildOptions extends XcSplitOptions {
  readonly kind: string;
  /** Where the records came from (paths, sha256), written into dataset.json. */
  readonly source: Record<string, unknown>;
  /** How records were made from the source, in words, written into dataset.json. */
  readonly method: Record<string, unknown>;
  /** Display names of labels (classes.txt): `name → text`; the name alone when absent. */
  readonly labelText?: (name: string) => string | undefined;
}

export interface LabelProfile {
  /** Training labels by how many training records carry them. */
  readonly count1: number;
  readonly count2to4: number;
  readonly count5to19: number;
  readonly count20up: number;
  readonly maxCount: number;
  readonly medianCount: number;
  /** Share of all training label occurrences held by the most frequent 1% of labels. */
  readonly top1PercentShare: number;
  readonly meanLabelsPerSample: number;
  readonly meanFeaturesPerSample: number;
}

export interface XcBuildSummary {
  readonly records: number;
  readonly trainSamples: number;
  readonly testSamples: number;
  readonly features: number;
  readonly labels: number;
  readonly droppedNoLabel: number;
  readonly droppedNoFeature: number;
  /** Test label occurrences dropped because no training record carries the label. */
  readonly unseenTestLabels: number;
  readonly profile: LabelProfile;
  readonly floor: { readonly 'precision@1': number; readonly 'precision@5': number; readonly topLabels: readonly string[] };
}

export function isTestRecord(seed: number, id: string, fraction: number): boolean {
  return createHash('sha256').update(`${seed}:${id}`).digest().readUInt32BE(0) / 2 ** 32 < fraction;
}

/** Names with ≥ min occurrences, most frequent first, ties by name (code-unit order: locale-free). */
export function vocabulary(counts: ReadonlyMap<string, number>, min: number): Map<string, number> {
  const names = [...counts].filter(([, c]) => c >= min).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return new Map(names.map(([n], i) => [n, i]));
}

function countAll(records: readonly XcRecord[], pick: (r: XcRecord) => readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of records) for (const n of new Set(pick(r))) m.set(n, (m.get(n) ?? 0) + 1);
  return m;
}

interface Encoded {
  readonly labels: number[];
  readonly features: number[];
}

function encode(r: XcRecord, labels: Map<string, number>, features: Map<string, number>): Encoded & { unseen: number } {
  const ls = new Set<number>(),
    fs = new Set<number>();
  let unseen = 0;
  for (const n of r.labels) {
    const i = labels.get(n);
    if (i === undefined) unseen++;
    else ls.add(i);
  }
  for (const n of r.features) {
    const i = features.get(n);
    if (i !== undefined) fs.add(i);
  }
  return { labels: [...ls].sort((a, b) => a - b), features: [...fs].sort((a, b) => a - b), unseen };
}

export function labelProfile(labelCounts: readonly number[], samples: readonly Encoded[]): LabelProfile {
  const c = [...labelCounts].sort((a, b) => b - a);
  const total = c.reduce((s, x) => s + x, 0);
  const top = Math.max(1, Math.ceil(c.length / 100));
  const n = Math.max(1, samples.length);
  return {
    count1: c.filter((x) => x === 1).length,
    count2to4: c.filter((x) => x >= 2 && x <= 4).length,
    count5to19: c.filter((x) => x >= 5 && x <= 19).length,
    count20up: c.filter((x) => x >= 20).length,
    maxCount: c[0] ?? 0,
    medianCount: c.length ? c[Math.floor((c.length - 1) / 2)]! : 0,
    top1PercentShare: total ? c.slice(0, top).reduce((s, x) => s + x, 0) / total : 0,
    meanLabelsPerSample: samples.reduce((s, x) => s + x.labels.length, 0) / n,
    meanFeaturesPerSample: samples.reduce((s, x) => s + x.features.length, 0) / n,
  };
}

/** Precision@k of predicting labels 0…k-1 (the most frequent) for every test sample. */
export function frequencyFloor(test: readonly Encoded[], k: number): number {
  if (test.length === 0) return 0;
  let hits = 0;
  for (const s of test) hits += s.labels.filter((l) => l < k).length;
  return hits / (k * test.length);
}

export async function writeXcDataset(records: readonly XcRecord[], o: XcBuildOptions): Promise<XcBuildSummary> {
  const split = records.map((r) => isTestRecord(o.seed, r.id, o.testFraction));
  const trainRecords = records.filter((_, i) => !split[i]);
  const labelCounts = countAll(trainRecords, (r) => r.labels);
  const labels = vocabulary(labelCounts, o.minLabelCount);
  const features = vocabulary(
    countAll(trainRecords, (r) => r.features),
    o.minFeatureCount,
  );
  if (labels.size === 0 || features.size === 0) {
    throw userError(
      'BAD_DATA',
      `${o.kind}: the training records hold ${labels.size} labels and ${features.size} features`,
      'the source has too few records with labels and features; check the input, or lower --min-feature-count',
    );
  }
  const out: [Encoded[], Encoded[]] = [[], []];
  let noLabel = 0,
    noFeature = 0,
    unseen = 0;
  records.forEach((r, i) => {
    const e = encode(r, labels, features);
    if (split[i]) unseen += e.unseen;
    if (e.labels.length === 0) noLabel++;
    else if (e.features.length === 0) noFeature++;
    else out[split[i] ? 1 : 0].push(e);
  });
  const line = (e: Encoded) => `${e.labels.join(',')} ${e.features.map((f) => `${f}:1`).join(' ')}`;
  for (const [k, name] of [
    [0, 'train.txt'],
    [1, 'test.txt'],
  ] as const) {
    await writeFileAtomic(join(o.outDir, name), lineChunks(`${out[k].length} ${features.size} ${labels.size}`, out[k].map(line)));
  }
  const labelNames = [...labels.keys()];
  await writeTextAtomic(join(o.outDir, 'classes.txt'), labelNames.map((n) => o.labelText?.(n) ?? n).join('\n') + '\n');
  await writeTextAtomic(join(o.outDir, 'features.txt'), [...features.keys()].join('\n') + '\n');
  await writeTextAtomic(
    join(o.outDir, 'spec.json'),
    JSON.stringify(
      {
        input: features.size,
        layers: [
          { dim: o.hidden, activation: 'relu' },
          { dim: labels.size, activation: 'softmax' },
        ],
      },
      null,
      2,
    ) + '\n',
  );
  const summary: XcBuildSummary = {
    records: records.length,
    trainSamples: out[0].length,
    testSamples: out[1].length,
    features: features.size,
    labels: labels.size,
    droppedNoLabel: noLabel,
    droppedNoFeature: noFeature,
    unseenTestLabels: unseen,
    profile: labelProfile(
      labelNames.map((n) => labelCounts.get(n)!),
      out[0],
    ),
    floor: { 'precision@1': frequencyFloor(out[1], 1), 'precision@5': frequencyFloor(out[1], 5), topLabels: labelNames.slice(0, 5) },
  };
  await writeTextAtomic(
    join(o.outDir, 'dataset.json'),
    JSON.stringify(
      {
        kind: o.kind,
        source: o.source,
        ...summary,
        method: {
          ...o.method,
          split: `a record is test when sha256("${o.seed}:" + id) as a fraction < ${o.testFraction}`,
          labels: `training-record labels with count >= ${o.minLabelCount}, most frequent first; unseen test labels dropped`,
          features: `training-record features with count >= ${o.minFeatureCount}, most frequent first; value 1`,
          dropped: 'records left with no label or no feature',
          floor: 'precision@k on test.txt of always predicting the k most frequent training labels',
        },
      },
      null,
      2,
    ) + '\n',
  );
  return summary;
}
