/**
 * When the hash tables follow the weights. The weights move every batch; the tables only when
 * told. Three events, counted in training samples so they mean the same at any batch size:
 *  - every epoch starts with a rebuild (all neurons rehashed into cleared tables; this also makes
 *    a resumed run's tables identical to an uninterrupted run's);
 *  - every `rebuildEvery` samples, a rebuild;
 *  - every `rehashEvery` samples (and not at a rebuild), a rehash of the neurons updated since the
 *    last one.
 * Defaults, and why: one rehash of most neurons costs about as much as a rebuild (d·L table
 * inserts, L up to 256), seconds at 10^5 neurons, so the tables cannot follow every batch. On the
 * planted 100k-label set (bench/RESULTS.md, K/L/R grid of 1 Dec 2026) 0, 3 and 15 rehashes per
 * epoch gave the same dense P@1 after two epochs (0.6943, 0.6947, 0.6943) and sparse-evaluation
 * P@1 of 0.678, 0.686 and 0.681, while indexing took 2.5, 17.8 and 27.0 s per epoch. So the
 * default is one rehash in the middle of each epoch, after the epoch-start rebuild.
 */
export interface TableRefresh {
  /** Samples between rehashes of the updated neurons (0: never). */
  readonly rehashEvery: number;
  /** Samples between full rebuilds inside an epoch (0: only at epoch starts). */
  readonly rebuildEvery: number;
}

export const REHASHES_PER_EPOCH = 1;

export function defaultTableRefresh(trainRows: number, batch: number): TableRefresh {
  return { rehashEvery: rehashEveryFor(trainRows, batch, REHASHES_PER_EPOCH), rebuildEvery: 0 };
}

/** The interval that puts `perEpoch` rehashes inside an epoch, evenly (0: none). */
export function rehashEveryFor(trainRows: number, batch: number, perEpoch: number): number {
  if (perEpoch <= 0) return 0;
  return Math.max(batch, Math.ceil(trainRows / (perEpoch + 1)));
}

export type IndexAction = 'rebuild' | 'rehash' | null;

/** What to do after a batch took the epoch's sample count from `before` to `after`. */
export function indexAction(s: TableRefresh, before: number, after: number, epochRows: number): IndexAction {
  if (after >= epochRows) return null; // the next epoch starts with a rebuild
  const crossed = (every: number) => every > 0 && Math.floor(after / every) > Math.floor(before / every);
  if (crossed(s.rebuildEvery)) return 'rebuild';
  if (crossed(s.rehashEvery)) return 'rehash';
  return null;
}
