/**
 * Layer blocks and the threshold that sizes them (VELTAIR §scheduling). Pure, linear scans.
 *
 * Threshold from spare capacity: idle = total cores − Σ of the active requests' average
 * requirements; each model gets a share of the idle cores in proportion to its appetite (its
 * average requirement), so no operator-tuned constant is involved. Heavy load → idle ≈ 0 →
 * threshold ≈ 0 → many small frugal blocks; light load → large threshold → big blocks.
 *
 * Block formation: from the request's next unit, extend the block while the next unit is not a
 * spike (requirement ≤ average + threshold); a spike starts the next block.
 *
 * Claim (flattening): a block claims cores once for its whole run — the fewest cores at which
 * the block's summed best quiet latency plus one claim/release fits its summed QoS share, so a
 * spike borrows slack from its cheaper neighbours while the block as a whole meets its share. A
 * block that fits at no core count claims the count where it is fastest.
 * Inside a big block the cheap layers run on more cores than they need and finish early — they
 * sprint — which is the slack the spike spends: light load → big blocks that sprint, heavy
 * load → small frugal ones. (A block never takes more than its claim: idle cores stay free for
 * the next arrival rather than shortening a block that already meets its share.)
 *
 * Deadline-aware shares: a block's share is scaled by the request's remaining budget (QoS −
 * time already spent) over its remaining shares (shareScale), so time lost waiting for cores is
 * made up by the blocks after it rather than turning into a missed QoS, and time gained by a
 * sprint is given back as frugality. With no waiting the scale is 1 and the claim is the plain one.
 */
import type { ModelPlan } from './requirement.js';
import { blockQuietVersionsWorstMs, blockShareMs } from './requirement.js';

export interface Block {
  readonly first: number;
  readonly last: number;
}

/** Idle cores when the active requests' average requirements sum to `activeAverageSum`. */
export function idleCores(totalCores: number, activeAverageSum: number): number {
  return Math.max(0, totalCores - activeAverageSum);
}

/** A model's threshold: its appetite's share of the idle cores. */
export function thresholdFor(idle: number, appetite: number, appetiteSum: number): number {
  if (!(appetiteSum > 0)) return idle;
  return (idle * appetite) / appetiteSum;
}

/**
 * The adaptive block starting at `start`: up to (not including) the next spike, and no longer
 * than `capMs` on one core (its first unit always belongs to it). The cap is what another tenant
 * can afford to wait for cores (waitBudgetMs): without it a frugal model with no spikes is one
 * block, and a light request that finds every core held waits behind a whole heavy inference.
 */
export function formBlock(p: ModelPlan, start: number, threshold: number, capMs = Infinity): Block {
  // The average is a float sum (Σ requirement × share / budget): a model whose every unit needs
  // 1 core can average 0.9999999999999999, and without the tolerance every unit became a spike,
  // i.e. one block per layer under load (live: resnet50 ran 40-54 blocks per request).
  const limit = p.averageRequirement + threshold + 1e-9;
  const U = p.requirement.length;
  const N = p.table.maxCores;
  const oneCore = (u: number) => p.bestQuietMs[u * (N + 1) + 1]!;
  let last = start;
  let ms = oneCore(start);
  while (last + 1 < U && p.requirement[last + 1]! <= limit && ms + oneCore(last + 1) <= capMs) ms += oneCore(++last);
  return { first: start, last };
}

/**
 * How long a request of this model can wait for cores to free up and still meet its QoS with room
 * to spare: half of what its QoS leaves after its own run and one more of its own model ahead of
 * it (QoS − 2 × planned latency). The other half absorbs what the live front end adds. 0 when
 * the plan leaves nothing.
 */
export function waitBudgetMs(p: ModelPlan): number {
  return Math.max(0, p.qosMs - 2 * p.plannedMs) / 2;
}

/**
 * Per model: the longest block it may form, the smallest wait budget among the *other* models
 * (Infinity when it is alone, or when the others have none). A model only shortens its blocks
 * for tenants tighter than itself.
 */
export function blockCaps(plans: readonly ModelPlan[]): number[] {
  // A model whose QoS leaves no wait budget at all cannot be protected by short blocks; it sets no cap.
  const budgets = plans.map((p) => waitBudgetMs(p) || Infinity);
  return plans.map((_, i) => Math.min(Infinity, ...budgets.filter((_, j) => j !== i)));
}

/** A fixed block of `k` units starting at `start`. */
export function fixedBlock(p: ModelPlan, start: number, k: number): Block {
  return { first: start, last: Math.min(p.requirement.length - 1, start + k - 1) };
}

/**
 * The frugal claim of a block: fewest cores at which it fits its share (see the header), the
 * share scaled by `shareScale` (the request's remaining budget over its remaining shares). Its
 * layers' latency: the best quiet versions at their slowest measured level, so interference
 * cannot push a block past its share (the versions an interference-aware policy picks at the
 * predicted level are at most as slow there).
 */
export function flatClaim(p: ModelPlan, b: Block, shareScale = 1): number {
  const N = p.table.maxCores;
  const share = blockShareMs(p, b.first, b.last) * shareScale;
  let fastest = 1,
    fastestMs = Infinity;
  for (let c = 1; c <= N; c++) {
    const t = blockQuietVersionsWorstMs(p, b.first, b.last, c) + p.table.claimMs[c]!;
    if (t <= share) return c;
    if (t < fastestMs) {
      fastestMs = t;
      fastest = c;
    }
  }
  return fastest;
}

/**
 * How much of its remaining QoS shares a request still has: (QoS − elapsed) over the shares of
 * units first..end. 1 when on schedule, below 1 after waiting (its blocks must go faster), above
 * 1 after running ahead (they may be more frugal), 0 once the QoS has passed (fastest claim).
 */
export function shareScale(p: ModelPlan, first: number, elapsedMs: number): number {
  const remainingShares = p.qosMs - p.prefixShareMs[first]!;
  if (!(remainingShares > 0)) return 1;
  return Math.max(0, p.qosMs - elapsedMs) / remainingShares;
}

/** The highest requirement inside a block. */
export function peakOf(p: ModelPlan, b: Block): number {
  let m = 0;
  for (let u = b.first; u <= b.last; u++) m = Math.max(m, p.requirement[u]!);
  return m;
}
