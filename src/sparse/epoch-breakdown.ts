/**
 * Where a training epoch's time goes (measured before anything is sped up). The
 * native passes count, per thread, the seconds of each phase of a sample (hidden layer, hashing,
 * sampling, output layer, softmax, backward), and the batch loop the wall seconds of the steps
 * around the passes (catch-up of the batch's rows, the Adam steps, table rebuilds and rehashes):
 * native-kernels/sparse/train/profile.c. Here the passes' wall time is shared out to their phases
 * in proportion to the threads' seconds, so the parts of one epoch add up to its wall time.
 */

/** The per-thread phases, in the add-on's order (vs.h VS_PH_*). */
export const PASS_PHASES = [
  'hiddenForward',
  'hash',
  'sample',
  'outputForward',
  'catchUpForward',
  'softmax',
  'outputBackward',
  'hiddenBackward',
  'invert',
] as const;
/** The wall-clock steps, in the add-on's order (vs.h VS_WL_*). */
export const WALL_STEPS = ['catchUpBatch', 'pass', 'adamHidden', 'adamOutput', 'index'] as const;

export type PassPhase = (typeof PASS_PHASES)[number];
export type WallStep = (typeof WALL_STEPS)[number];
/** Every part of an epoch: the passes' phases, their idle share, the steps around them, and the rest. */
export type EpochPart = PassPhase | 'passIdle' | Exclude<WallStep, 'pass'> | 'other';

export const PART_LABELS: Readonly<Record<EpochPart, string>> = {
  hiddenForward: 'hidden layer forward (feature rows summed)',
  hash: 'hashing (DWTA/SimHash codes of the hidden vector)',
  sample: 'sampling (bucket union, labels, trim/fill)',
  outputForward: "output layer forward (active neurons' dot products)",
  catchUpForward: 'Adam catch-up of active output rows (in the forward pass)',
  softmax: 'softmax over the active neurons',
  outputBackward: 'output layer backward (gradient rows, input gradient)',
  hiddenBackward: 'hidden layer backward (feature gradient rows)',
  invert: 'neuron-major pass: per-neuron lists of the batch (counting sort)',
  passIdle: 'passes: threads idle (imbalance, batch ends)',
  catchUpBatch: "Adam catch-up of the batch's feature rows",
  adamHidden: 'Adam step, hidden layer',
  adamOutput: 'Adam step, output layer',
  index: 'table rebuilds and rehashes',
  other: 'other (JS batch loop, shuffle)',
};

export interface EpochProfile {
  /** The epoch's wall seconds, and each part's share of them (the parts add up to it). */
  readonly seconds: number;
  readonly threads: number;
  readonly parts: Readonly<Record<EpochPart, number>>;
  /** The raw counters: thread-seconds per phase summed over threads, wall seconds per step. */
  readonly threadSeconds: Readonly<Record<PassPhase, number>>;
  readonly wall: Readonly<Record<WallStep, number>>;
}

/** The profile of an epoch of `seconds` on `threads` threads from the add-on's counters (`profile(model)`). */
export function epochProfile(raw: Float64Array, seconds: number, threads: number): EpochProfile {
  const threadSeconds = Object.fromEntries(PASS_PHASES.map((p, i) => [p, raw[i] ?? 0])) as Record<PassPhase, number>;
  const wall = Object.fromEntries(WALL_STEPS.map((s, i) => [s, raw[PASS_PHASES.length + i] ?? 0])) as Record<WallStep, number>;
  const busy = PASS_PHASES.reduce((a, p) => a + threadSeconds[p], 0);
  const capacity = Math.max(wall.pass * threads, busy); // thread-seconds the passes had
  const perThreadSecond = capacity > 0 ? wall.pass / capacity : 0;
  const parts = {} as Record<EpochPart, number>;
  for (const p of PASS_PHASES) parts[p] = threadSeconds[p] * perThreadSecond;
  parts.passIdle = (capacity - busy) * perThreadSecond;
  for (const s of WALL_STEPS) if (s !== 'pass') parts[s] = wall[s];
  const accounted = Object.values(parts).reduce((a, v) => a + v, 0);
  parts.other = Math.max(0, seconds - accounted);
  return { seconds, threads, parts, threadSeconds, wall };
}
