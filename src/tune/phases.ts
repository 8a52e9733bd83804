/**
 * Where a tuning pass's time goes (the compile summary's tuningPhases): each phase timed where it
 * happens (tune-model.ts around the warm-up, evaluate.ts around each build and measurement).
 */

/**
 * Seconds of a tuning pass by phase; `seconds` less their sum is the rest (database reads, the
 * searches' proposals, family selection, stopping the co-runners).
 */
export interface TunePhases {
  /** Compiling the warm-up batches (every candidate, when transferring), the co-runners starting meanwhile, and waiting for them. */
  readonly warmup: number;
  /** The search's batches: building (linking, or compiling what the warm-up did not) and measuring (checks, timing at every level). */
  readonly searchBuild: number;
  /** Of a racing search (race.ts), round 1: every candidate checked and timed at level 0 with a short window. */
  readonly searchRace: number;
  readonly searchMeasure: number;
  /** The kept versions at the other thread counts, quiet: building and measuring. */
  readonly profileBuild: number;
  readonly profileMeasure: number;
}

/** Every phase rounded to the millisecond, as the summary reports seconds. */
export const roundPhases = (p: TunePhases): TunePhases => ({
  warmup: round3(p.warmup),
  searchBuild: round3(p.searchBuild),
  searchRace: round3(p.searchRace),
  searchMeasure: round3(p.searchMeasure),
  profileBuild: round3(p.profileBuild),
  profileMeasure: round3(p.profileMeasure),
});
const round3 = (x: number) => Math.round(x * 1000) / 1000;
