/**
 * The scheduling policies, as data: how a request's next block is cut, how many cores it claims,
 * which versions its layers run, and in what order waiting requests are served. The engine
 * (scheduler.ts) is the same for all of them.
 *
 *   fcfs             model-wise, first come first served: one block = the whole model, claiming
 *                    the model's peak requirement for its whole run; best-quiet versions.
 *   prema            temporal multiplexing (PREMA, HPCA'20): one request at a time owns the
 *                    machine (the core count where the model is fastest), preemption at every
 *                    layer boundary; the next layer goes to the waiting request with the most
 *                    tokens (tokens grow with waiting time over isolated latency × priority),
 *                    shortest remaining time first among those over the token threshold.
 *   layerwise        Planaria-like spatial: every layer is a block claiming its own requirement
 *                    (its claim/release included, like every block's: the same as static:1).
 *   static:K         fixed blocks of K layers, each claiming its flattened (frugal) requirement.
 *   veltair          adaptive blocks (spikes split, threshold from spare capacity, flattening,
 *                    no longer than the tightest other tenant can wait), earliest deadline first
 *                    + adaptive versions: each layer runs the version with the lowest latency at
 *                    the granted cores and the predicted interference level. Claims, like every
 *                    policy's, are sized from the best quiet versions at their slowest measured
 *                    level plus one claim/release (requirement.ts), so a wrong prediction cannot
 *                    push a block past its share.
 *                    It also chooses between time sharing every core and a spatial partition (each
 *                    model's blocks on its own contiguous cores) from the profiles and the arrival
 *                    rates it estimates, with hysteresis (mode-choice.ts, partition.ts); time
 *                    sharing until the first decision.
 *   veltair-partition the static partition that choice predicts best for the declared load shares
 *                    (equal when none are declared), chosen once: inside its own cores each model
 *                    runs veltair's blocks, versions and deadline order, never touching another's
 *                    cores. With one model, or more models than cores, it time-shares.
 *   veltair-sched    the same blocks and order, best-quiet versions only (ablation: scheduling alone).
 *   veltair-compile  FCFS's whole-model blocks, adaptive versions (ablation: compiler alone).
 */
import { quoteForMessage, userError } from '../errors.js';

export type BlockRule = 'model' | 'layer' | 'fixed' | 'adaptive';
export type ClaimRule = 'peak' | 'requirement' | 'flat' | 'fastest';
/**
 * Which waiting request goes first: the oldest (`arrival`), or the one whose QoS deadline
 * (arrival + QoS) is nearest (`deadline`), so that a light request with a tight QoS is served
 * between a heavy request's blocks instead of behind them.
 */
export type OrderRule = 'arrival' | 'deadline';
/** Where a model's blocks may run: any core (`shared`), its own partition (`partitioned`), or chosen online (`choose`). */
export type SpatialRule = 'shared' | 'partitioned' | 'choose';

export interface Policy {
  /** As the user wrote it, normalised (e.g. `static:4`). */
  readonly name: string;
  readonly blocks: BlockRule;
  /** Layers per block for `fixed`. */
  readonly k: number;
  readonly claim: ClaimRule;
  readonly order: OrderRule;
  /** Versions chosen at the predicted interference level (else at level 0). */
  readonly adaptiveVersions: boolean;
  /** One request at a time on the machine, token order (PREMA). */
  readonly temporal: boolean;
  /**
   * A block that finds fewer free cores than it needs: `wait` (and everyone behind it) — what a
   * whole-model reservation must do — or `shrink`: run on what is free (layer and block policies,
   * as Planaria reallocates and VELTAIR runs a block on the cores left).
   */
  readonly onConflict: 'wait' | 'shrink';
  readonly spatial: SpatialRule;
}

export const POLICY_NAMES = [
  'fcfs',
  'prema',
  'layerwise',
  'static:K',
  'veltair',
  'veltair-partition',
  'veltair-sched',
  'veltair-compile',
] as const;

const base = { k: 1, adaptiveVersions: false, temporal: false, onConflict: 'shrink', order: 'arrival', spatial: 'shared' } as const;

export function parsePolicy(text: string): Policy {
  const t = text.trim();
  switch (t) {
    case 'fcfs':
      return { ...base, name: t, blocks: 'model', claim: 'peak', onConflict: 'wait' };
    case 'prema':
      return { ...base, name: t, blocks: 'layer', claim: 'fastest', temporal: true, onConflict: 'wait' };
    case 'layerwise':
      return { ...base, name: t, blocks: 'layer', claim: 'requirement' };
    case 'veltair':
      return { ...base, name: t, blocks: 'adaptive', claim: 'flat', order: 'deadline', adaptiveVersions: true, spatial: 'choose' };
    case 'veltair-partition':
      return { ...base, name: t, blocks: 'adaptive', claim: 'flat', order: 'deadline', adaptiveVersions: true, spatial: 'partitioned' };
    case 'veltair-sched':
      return { ...base, name: t, blocks: 'adaptive', claim: 'flat', order: 'deadline' };
    case 'veltair-compile':
      return { ...base, name: t, blocks: 'model', claim: 'peak', adaptiveVersions: true, onConflict: 'wait' };
    default:
      break;
  }
  const m = /^static:(\d+)$/.exec(t);
  if (m && Number(m[1]) >= 1 && Number(m[1]) <= 10_000)
    return { ...base, name: `static:${Number(m[1])}`, blocks: 'fixed', k: Number(m[1]), claim: 'flat' };
  throw userError(
    'BAD_ARGUMENT',
    `policy ${quoteForMessage(text)} is not one of ${POLICY_NAMES.join(', ')}`,
    'e.g. --policy fcfs,veltair or --policy static:6; static:A-B expands to every K from A to B',
  );
}

/** A comma-separated list; `static:A-B` expands to static:A … static:B. */
export function parsePolicyList(text: string): Policy[] {
  const out: Policy[] = [];
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const range = /^static:(\d+)-(\d+)$/.exec(part);
    if (range) {
      const a = Number(range[1]),
        b = Number(range[2]);
      if (!(a >= 1 && b >= a && b - a <= 200)) {
        throw userError(
          'BAD_ARGUMENT',
          `policy range ${quoteForMessage(part)} is not static:A-B with 1 ≤ A ≤ B ≤ A + 200`,
          'e.g. --policy static:1-20',
        );
      }
      for (let k = a; k <= b; k++) out.push(parsePolicy(`static:${k}`));
    } else {
      out.push(parsePolicy(part));
    }
  }
  if (out.length === 0) throw userError('BAD_ARGUMENT', 'no policy given', 'e.g. --policy fcfs,veltair');
  const names = out.map((p) => p.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw userError('BAD_ARGUMENT', `policy ${quoteForMessage(dup)} is listed twice`, 'list each policy once');
  return out;
}
