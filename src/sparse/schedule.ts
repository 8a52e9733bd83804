/**
 * When the hash tables follow the weights. The weights move every batch; the tables only when
 * told. Three events, counted in training samples so they mean the same at any batch size:
 *  - every epoch starts with a rebuild (all neurons rehashed into cleared tables; this also makes
 *    a resumed run's tables identical to an uninterrupted run's);
 *  - every `rebuildEvery` samples, a rebuild;
 *  - every `rehashEvery` samples (and not at a rebuild), a rehash of the neurons updated since the
 *    last one.
 * Defaults, and why: one rehash of all d neurons costs d·L table inserts (L up to 256), about as
 * much as training tens of thousands of samples at 10^5 neurons, so the tables cannot follow every
 * batch. MEASURE-ME: defaults to be fixed from the rehash-schedule measurement.
 */
export interface IndexSchedule {
  /** Samples between rehashes of the updated neurons (0: never). */
  readonly rehashEvery: number;
  /** Samples between full rebuilds inside an epoch (0: only at epoch starts). */
  readonly rebuildEvery: number;
}

export const REHASHES_PER_EPOCH = 4;

export function defaultSchedule(trainRows: number, batch: number): IndexSchedule {
  const rehashEvery = Math.max(batch, Math.ceil(trainRows / REHASHES_PER_EPOCH / batch) * batch);
  return { rehashEvery, rebuildEvery: 0 };
}

export type IndexAction = 'rebuild' | 'rehash' | null;

/** What to do after a batch took the epoch's sample count from `before` to `after`. */
export function indexAction(s: IndexSchedule, before: number, after: number, epochRows: number): IndexAction {
  if (after >= epochRows) return null; // the next epoch starts with a rebuild
  const crossed = (every: number) => every > 0 && Math.floor(after / every) > Math.floor(before / every);
  if (crossed(s.rebuildEvery)) return 'rebuild';
  if (crossed(s.rehashEvery)) return 'rehash';
  return null;
}
