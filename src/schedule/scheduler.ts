/**
 * The scheduler engine: one object per served machine, driven by events, returning decisions.
 * It knows nothing of clocks, timers or threads — time is a number (ms) the caller passes in —
 * so the simulator (simulated time) and the live server (real time) drive exactly this code.
 *
 *   const s = new Scheduler({ policy, models: [planModel(table, qosMs), …], cores: 64,
 *                             predictLevel: (cores, model) => proxyLevel });
 *   s.arrive({ id, model, arrivalMs }, now)   → Decision[]   a request came in
 *   s.blockFinished(id, now)                  → { decisions, completed }   its block ended
 *   s.cancel(id)                              → true if it was waiting (not running) and is gone
 *   s.takePreemptions()                       → ids of chains to stop at their next layer boundary
 *
 * Each Decision says: run units first..last of request `request` (model `model`) on exactly
 * these core ids, with versions[i] for unit first+i (an index into the unit's versions), at the
 * predicted level `level`; `claim` is true when the core set changed since the request's previous
 * block (the driver pays a claim/release then), `conflict` when the block found too few free
 * cores (counted once per block). The driver runs it and calls blockFinished(request) when it is
 * done; cores are back in the pool from that call on. No core is ever granted twice (CorePool
 * enforces it).
 *
 * Dispatch order: waiting requests by arrival (oldest first: in-flight requests before new ones),
 * or, for the adaptive policies, by deadline (arrival + QoS; ties by arrival); PREMA by tokens.
 * Adaptive blocks are also no longer than the tightest other model's wait budget (blocks.ts
 * blockCaps), so a request that finds every core held waits for a block, not a whole inference.
 * On a conflict (fewer free cores than the block's minimum) the block waits and so does everyone
 * behind it (no backfilling: a big block cannot be starved by small ones), or,
 * with the rule 'shrink', runs on what is free; each policy has its rule (policies.ts). Cost per event: O(models + waiting requests
 * looked at + block length + cores) — linear scans only.
 *
 * Spatial partitions (policy.spatial, partition.ts): a partitioned scheduler gives each model its
 * own contiguous cores; a model's blocks are granted only there (CorePool's range), its threshold
 * and blocks are sized as if it were alone on them, and a model whose cores are all held waits
 * without holding up the others. `partitioned` uses the split predicted best for the declared load
 * shares, chosen once; `choose` (veltair) starts time-shared and lets a ModeChooser re-decide from
 * the arrival rates it estimates (mode-choice.ts). When the configuration changes, running blocks
 * finish on the cores they hold; the next blocks follow the new one. `spatial` exposes it.
 *
 * Chains (option `chain`, what the live server uses): a block decided while no request waits that
 * would stop it (see below; in its model's partition, or anywhere when time-shared) is extended by the request's
 * following blocks, each planned as it would be at its predicted start, while each fits on the cores already
 * granted: Decision.chainLast. The driver runs the whole chain with one hand-off. The units
 * first..last are the committed block; the units after it are the chained part, which the driver
 * stops at a layer (unit) boundary when asked. The scheduler asks (takePreemptions, after any
 * event) when a request is left waiting that is tighter (before it in dispatch order) or of another
 * model (it claims cores the chain holds); blockFinished(id, now, stoppedAt) then tells it where the
 * chain stopped, and the request's next block is decided again from there like any other.
 */
import { internalError, userError } from '../errors.js';
import { blockCaps, fixedBlock, flatClaim, formBlock, idleCores, shareScale, thresholdFor, type Block } from './blocks.js';
import { CorePool, type CoreRange } from './core-pool.js';
import { Heap } from './heap.js';
import { DEFAULT_CHOICE, describeSpatial, ModeChooser, type ChoiceSettings, type SpatialState } from './mode-choice.js';
import { compareModes } from './partition.js';
import type { Policy } from './policies.js';
import { blockQuietMs, unitBestMs, unitBestVersion, type ModelPlan } from './requirement.js';

export type ConflictRule = 'wait' | 'shrink';

export interface SchedulerOptions {
  readonly policy: Policy;
  readonly models: readonly ModelPlan[];
  readonly cores: number;
  /** Replace the policy's own conflict rule (Policy.onConflict). */
  readonly onConflict?: ConflictRule;
  /**
   * Predicted interference level (0..4, may be fractional) for the next block of a request of
   * `model`; `cores` are the request's previous cores (empty for its first block). Default 0.
   * Interference-aware policies (veltair, veltair-compile) choose their versions by it.
   */
  readonly predictLevel?: (cores: readonly number[], model: number) => number;
  /** PREMA priorities per model (default 1). */
  readonly priorities?: readonly number[];
  /**
   * Scale block shares by each request's remaining budget (blocks.ts shareScale) for the
   * layer-wise, static and adaptive policies (default true); model-wise claims are fixed.
   */
  readonly deadlineAware?: boolean;
  /**
   * Each model's declared share of the load (any positive scale; default equal): what the
   * `partitioned` policy sizes its split for.
   */
  readonly loadShares?: readonly number[];
  /** The `choose` policy's decision interval, arrivals per decision and hysteresis margin. */
  readonly modeChoice?: Partial<ChoiceSettings>;
  /** Chain a request's next blocks onto its decided one while nobody waits (see the header); default false. */
  readonly chain?: boolean;
}

export interface RequestArrival {
  readonly id: number;
  readonly model: number;
  readonly arrivalMs: number;
}

export interface Decision {
  readonly request: number;
  readonly model: number;
  readonly first: number;
  readonly last: number;
  readonly cores: readonly number[];
  readonly versions: readonly number[];
  readonly level: number;
  readonly claim: boolean;
  readonly conflict: boolean;
  /** Cores the block asked for, and the fewest it would run on without a conflict. */
  readonly wantCores: number;
  readonly needCores: number;
  /** Predicted run time at the granted cores and level, claim included (ms). */
  readonly expectedMs: number;
  /**
   * The chain's last unit (= last when the block is not chained): units last+1..chainLast run on
   * the same cores right after it unless preempted; versions then cover first..chainLast.
   */
  readonly chainLast: number;
  /** Predicted time of the whole chain, expectedMs included (= expectedMs when not chained). */
  readonly chainExpectedMs: number;
}

export interface SchedulerStats {
  readonly blocks: number;
  readonly claims: number;
  readonly conflicts: number;
  readonly completed: number;
  /** The spatial configuration at the end: `time-shared` or `partitioned 1+1` (cores per model). */
  readonly spatial: string;
  readonly modeSwitches: number;
  /** Chains stopped early by a preemption. */
  readonly chainsStopped: number;
}

interface Req {
  readonly id: number;
  readonly model: number;
  readonly arrivalMs: number;
  readonly deadlineMs: number;
  next: number;
  running: boolean;
  held: number[];
  prev: number[];
  conflictAt: number;
  tokens: number;
  tokenAt: number;
  /** Cores its running block holds and counts in longCores (0: a block within its cap). */
  longHeld: number;
  /** Predicted level for its next block (interference-aware policies; else 0). */
  level: number;
  /** Its running block's committed end (the unit after `last`); the chain may stop from there on. */
  committedNext: number;
  /** Its running block has a chained part / has been asked to stop it. */
  chained: boolean;
  preemptAsked: boolean;
}

/**
 * A late request's scaled claim never exceeds the model's peak requirement (what model-wise FCFS
 * reserves) unless its plain claim already does: past that, one late request grabbing the
 * machine makes every request behind it late too.
 */
const capped = (scaled: number, plain: number, p: ModelPlan) => Math.min(scaled, Math.max(plain, p.peakRequirement));

/** Requests a dispatch looks past when their long blocks must wait (longBlockGrant). */
const MAX_HELD_PER_DISPATCH = 8;

const byArrival = (a: Req, b: Req) => a.arrivalMs < b.arrivalMs || (a.arrivalMs === b.arrivalMs && a.id < b.id);
const byDeadline = (a: Req, b: Req) => a.deadlineMs < b.deadlineMs || (a.deadlineMs === b.deadlineMs && byArrival(a, b));

export class Scheduler {
  readonly policy: Policy;
  readonly models: readonly ModelPlan[];
  readonly pool: CorePool;
  private readonly onConflict: ConflictRule;
  private readonly predictLevel: ((cores: readonly number[], model: number) => number) | undefined;
  private readonly priorities: readonly number[];
  private readonly deadlineAware: boolean;
  private readonly requests = new Map<number, Req>();
  /** Waiting requests per model: the next one is the first of their heads, or the first of an open partition's. */
  private readonly ready: Heap<Req>[];
  /** The spatial configuration: fixed (shared or partitioned) or chosen online. */
  private readonly chooser: ModeChooser;
  private readonly choosesOnline: boolean;
  /** Per model: the longest adaptive block, ms on one core (blocks.ts blockCaps). */
  private readonly blockCapMs: readonly number[];
  /** Per model: the cores another model's request may need at once (0 when it is alone); see longBlockGrant. */
  private readonly reserveCores: readonly number[];
  private readonly premaReady: Req[] = [];
  private readonly activePerModel: Int32Array;
  private runningCount = 0;
  /** Cores held now by blocks longer than their cap (isLong). */
  private longCores = 0;
  private blocks = 0;
  private claims = 0;
  private conflicts = 0;
  private completedCount = 0;
  private readonly chain: boolean;
  /** Running requests whose block has a chained part not yet asked to stop. */
  private readonly chains = new Set<Req>();
  private preemptions: number[] = [];
  private chainsStopped = 0;

  constructor(o: SchedulerOptions) {
    if (o.models.length === 0) throw userError('BAD_ARGUMENT', 'the scheduler was given no models', 'register at least one model');
    for (const m of o.models) {
      if (m.table.maxCores < o.cores)
        throw internalError(`model ${m.table.name} has figures for ${m.table.maxCores} cores, the machine has ${o.cores}`);
    }
    this.policy = o.policy;
    this.models = o.models;
    this.pool = new CorePool(o.cores);
    this.onConflict = o.onConflict ?? o.policy.onConflict;
    this.predictLevel = o.predictLevel;
    this.priorities = o.priorities ?? o.models.map(() => 1);
    this.deadlineAware = o.deadlineAware ?? true;
    this.chain = (o.chain ?? false) && !o.policy.temporal;
    this.activePerModel = new Int32Array(o.models.length);
    const order = o.policy.order === 'deadline' ? byDeadline : byArrival;
    this.ready = o.models.map(() => new Heap<Req>(order));
    const settings = { ...DEFAULT_CHOICE, ...o.modeChoice };
    const initial =
      o.policy.spatial === 'partitioned' ? compareModes(o.models, o.loadShares ?? o.models.map(() => 1), o.cores).partition : null;
    this.chooser = new ModeChooser(o.models, o.cores, settings, initial);
    this.choosesOnline = o.policy.spatial === 'choose' && !o.policy.temporal;
    this.blockCapMs = blockCaps(o.models);
    this.reserveCores = o.models.map((_, i) =>
      Math.max(0, ...o.models.filter((_, j) => j !== i).map((m) => Math.max(1, m.peakRequirement))),
    );
  }

  get stats(): SchedulerStats {
    return {
      blocks: this.blocks,
      claims: this.claims,
      conflicts: this.conflicts,
      completed: this.completedCount,
      spatial: describeSpatial(this.chooser.state),
      modeSwitches: this.chooser.state.switches,
      chainsStopped: this.chainsStopped,
    };
  }

  /** The spatial configuration in force, the estimated rates and the predictions behind it. */
  get spatial(): SpatialState {
    return this.chooser.state;
  }

  /** Model m's own cores under a partition (undefined: it may use every core). */
  private rangeOf(model: number): CoreRange | undefined {
    const p = this.chooser.partition;
    return p ? { first: p.first[model]!, count: p.cores[model]! } : undefined;
  }

  /** Requests in the system (waiting or running). */
  get inSystem(): number {
    return this.requests.size;
  }
  get running(): number {
    return this.runningCount;
  }

  arrive(a: RequestArrival, now: number): Decision[] {
    if (this.requests.has(a.id)) throw internalError(`request ${a.id} arrived twice`);
    if (!(a.model >= 0 && a.model < this.models.length)) throw internalError(`request ${a.id} names model ${a.model}`);
    const deadlineMs = a.arrivalMs + this.models[a.model]!.qosMs;
    const r: Req = {
      id: a.id,
      model: a.model,
      arrivalMs: a.arrivalMs,
      deadlineMs,
      next: 0,
      running: false,
      held: [],
      prev: [],
      conflictAt: -1,
      tokens: 0,
      tokenAt: now,
      longHeld: 0,
      level: 0,
      committedNext: 0,
      chained: false,
      preemptAsked: false,
    };
    this.requests.set(a.id, r);
    this.activePerModel[a.model]!++;
    if (this.choosesOnline) this.chooser.observe(a.model, now);
    this.enqueue(r);
    return this.dispatch(now);
  }

  /**
   * Request `id`'s block (or chain) ended. `stoppedAt`: for a preempted chain, the unit it stopped
   * before (from the committed end to one past chainLast); omitted, the whole chain ran.
   */
  blockFinished(id: number, now: number, stoppedAt?: number): { decisions: Decision[]; completed: boolean } {
    const r = this.requests.get(id);
    if (!r || !r.running) throw internalError(`blockFinished for request ${id}, which is not running`);
    if (stoppedAt !== undefined && stoppedAt !== r.next) {
      if (!r.chained || !Number.isInteger(stoppedAt) || stoppedAt < r.committedNext || stoppedAt > r.next)
        throw internalError(`request ${id}'s block stopped at unit ${stoppedAt}, outside its chain ${r.committedNext}..${r.next}`);
      r.next = stoppedAt;
      this.chainsStopped++;
    }
    this.chains.delete(r);
    r.chained = false;
    r.preemptAsked = false;
    this.pool.release(r.id, r.held);
    this.longCores -= r.longHeld;
    r.longHeld = 0;
    r.prev = r.held;
    r.held = [];
    r.running = false;
    this.runningCount--;
    const U = this.models[r.model]!.table.units.length;
    let completed = false;
    if (r.next >= U) {
      completed = true;
      this.requests.delete(id);
      this.activePerModel[r.model]!--;
      this.completedCount++;
    } else {
      r.tokenAt = now;
      this.enqueue(r);
    }
    return { decisions: this.dispatch(now), completed };
  }

  cancel(id: number): boolean {
    const r = this.requests.get(id);
    if (!r || r.running) return false;
    this.chains.delete(r);
    if (this.policy.temporal) this.premaReady.splice(this.premaReady.indexOf(r), 1);
    else this.ready[r.model]!.remove((x) => x === r);
    this.requests.delete(id);
    this.activePerModel[r.model]!--;
    return true;
  }

  /** Requests whose chains should stop at their next layer boundary (each named once per chain); clears the list. */
  takePreemptions(): number[] {
    const out = this.preemptions;
    this.preemptions = [];
    return out;
  }

  private enqueue(r: Req): void {
    if (this.policy.temporal) this.premaReady.push(r);
    else this.ready[r.model]!.push(r);
  }

  /** The first waiting request in dispatch order among models not closed for this dispatch: O(models). */
  private nextReady(closed: Uint8Array): Req | undefined {
    let best: Req | undefined;
    const less = this.policy.order === 'deadline' ? byDeadline : byArrival;
    for (let m = 0; m < this.ready.length; m++) {
      if (closed[m]) continue;
      const head = this.ready[m]!.peek();
      if (head && (!best || less(head, best))) best = head;
    }
    return best;
  }

  private activeAverageSum(): number {
    let s = 0;
    this.models.forEach((m, i) => {
      s += this.activePerModel[i]! * m.averageRequirement;
    });
    return s;
  }

  /** The request's next block and its claim (want) and minimum (need). */
  private planBlock(r: Req, now: number, idle: number, appetiteSum: number, span: number): { block: Block; want: number; need: number } {
    const p = this.models[r.model]!;
    const U = p.table.units.length;
    const N = span;
    const scale = this.deadlineAware ? shareScale(p, r.next, now - r.arrivalMs) : 1;
    switch (this.policy.blocks) {
      case 'model': {
        const c = Math.min(N, p.peakRequirement);
        return { block: { first: r.next, last: U - 1 }, want: c, need: c };
      }
      case 'layer': {
        const unit = { first: r.next, last: r.next };
        const c =
          this.policy.claim === 'fastest'
            ? p.fastestCores
            : scale === 1
              ? p.requirement[r.next]!
              : capped(flatClaim(p, unit, scale), p.requirement[r.next]!, p);
        return { block: { first: r.next, last: r.next }, want: Math.min(N, c), need: Math.min(N, c) };
      }
      case 'fixed': {
        const block = fixedBlock(p, r.next, this.policy.k);
        const c = Math.min(N, scale === 1 ? flatClaim(p, block) : capped(flatClaim(p, block, scale), flatClaim(p, block), p));
        return { block, want: c, need: c };
      }
      case 'adaptive': {
        const threshold = thresholdFor(idle, p.averageRequirement, appetiteSum);
        // Alone on its own cores a model keeps no other tenant waiting: no cap.
        const cap = this.chooser.partition ? Infinity : this.blockCapMs[r.model];
        const block = formBlock(p, r.next, threshold, cap);
        const need = Math.min(N, scale === 1 ? flatClaim(p, block) : capped(flatClaim(p, block, scale), flatClaim(p, block), p));
        return { block, want: need, need };
      }
      default:
        throw internalError(`unknown block rule ${String(this.policy.blocks)}`);
    }
  }

  /** PREMA: refresh tokens, then the candidate with the shortest remaining time (index in premaReady). */
  private premaPick(now: number): number {
    let maxPriority = 0;
    for (const r of this.premaReady) {
      const p = this.models[r.model]!;
      const pr = this.priorities[r.model]!;
      r.tokens += (pr * (now - r.tokenAt)) / Math.max(1e-9, p.fastestMs);
      r.tokenAt = now;
      maxPriority = Math.max(maxPriority, pr);
    }
    const over = this.premaReady.some((r) => r.tokens >= maxPriority);
    let best = -1,
      bestRemaining = Infinity;
    this.premaReady.forEach((r, i) => {
      if (over && r.tokens < maxPriority) return;
      const p = this.models[r.model]!;
      const remaining = blockQuietMs(p, r.next, p.table.units.length - 1, p.fastestCores);
      if (remaining < bestRemaining || (remaining === bestRemaining && best >= 0 && byArrival(r, this.premaReady[best]!))) {
        best = i;
        bestRemaining = remaining;
      }
    });
    return best;
  }

  private dispatch(now: number): Decision[] {
    const out: Decision[] = [];
    const avgSum = this.activeAverageSum();
    const idle = idleCores(this.pool.size, avgSum);
    // Requests whose next block may not take the last cores now (longBlockGrant); they keep their place.
    const held: Req[] = [];
    const partitioned = this.chooser.partition !== null;
    // Under a partition, models whose cores are all taken for this dispatch (the others go on).
    const closed = new Uint8Array(this.models.length);
    for (;;) {
      let r: Req | undefined;
      let premaIndex = -1;
      if (this.policy.temporal) {
        if (this.runningCount > 0 || this.premaReady.length === 0) break;
        premaIndex = this.premaPick(now);
        r = this.premaReady[premaIndex];
      } else {
        r = this.nextReady(closed);
      }
      if (!r) break;
      r.level = this.policy.adaptiveVersions && this.predictLevel ? Math.max(0, Math.min(4, this.predictLevel(r.prev, r.model))) : 0;
      const range = this.rangeOf(r.model);
      // A partitioned model's spare capacity is that of its own cores, shared by its own requests.
      const own = range ? this.activePerModel[r.model]! * this.models[r.model]!.averageRequirement : avgSum;
      const plan = range
        ? this.planBlock(r, now, idleCores(range.count, own), own, range.count)
        : this.planBlock(r, now, idle, avgSum, this.pool.size);
      const free = this.pool.freeIn(range);
      let grant: number;
      let conflict = r.conflictAt === r.next;
      if (free >= plan.want) grant = plan.want;
      else if (free >= plan.need) grant = free;
      else {
        if (!conflict) {
          this.conflicts++;
          r.conflictAt = r.next;
          conflict = true;
        }
        if (this.onConflict === 'shrink' && free >= 1) grant = free;
        else if (partitioned) {
          closed[r.model] = 1;
          continue;
        } else break;
      }
      // Fewer cores only lengthen a block, so a block long at the planned grant stays long at a smaller one.
      // Under a partition no other tenant needs these cores: nothing is long.
      const long = !this.policy.temporal && !partitioned && this.isLong(r, plan.block, grant);
      if (long) {
        const allowed = this.longBlockGrant(r, grant);
        if (allowed === 0) {
          // Bounded look-past, so an event stays O(small) when a long queue is held back.
          if (held.length >= MAX_HELD_PER_DISPATCH) break;
          held.push(this.ready[r.model]!.pop()!);
          continue;
        }
        grant = allowed;
      }
      if (this.policy.temporal) this.premaReady.splice(premaIndex, 1);
      else this.ready[r.model]!.pop();
      out.push(this.start(r, plan.block, grant, plan, conflict, long, range));
    }
    for (const r of held) this.ready[r.model]!.push(r);
    if (!this.chain) return out;
    // No new chain that a waiting request would stop at once; and the chains such a request would wait behind stop.
    const chained = out.map((d) => (this.wouldStop(this.requests.get(d.request)!, partitioned) ? d : this.extend(d, now, idle, avgSum)));
    if (this.chains.size > 0) this.askPreemptions(partitioned);
    return chained;
  }

  /** Extend decision d by the request's next blocks, planned now, while each fits on its granted cores. */
  private extend(d: Decision, now: number, idle: number, avgSum: number): Decision {
    const r = this.requests.get(d.request)!;
    const p = this.models[r.model]!;
    const U = p.table.units.length;
    const g = d.cores.length;
    const range = this.rangeOf(r.model);
    const own = range ? this.activePerModel[r.model]! * p.averageRequirement : avgSum;
    const versions = [...d.versions];
    let chainMs = d.expectedMs;
    while (r.next < U) {
      // Each chained block is planned for when it is predicted to start (its deadline share depends on it).
      const at = now + chainMs;
      const plan = range
        ? this.planBlock(r, at, idleCores(range.count, own), own, range.count)
        : this.planBlock(r, at, idle, avgSum, this.pool.size);
      if (plan.want > g) break;
      for (let u = plan.block.first; u <= plan.block.last; u++) {
        versions.push(unitBestVersion(p, u, g, r.level));
        chainMs += unitBestMs(p, u, g, r.level);
      }
      r.next = plan.block.last + 1;
    }
    if (r.next === d.last + 1) return d;
    r.chained = true;
    this.chains.add(r);
    return { ...d, versions, chainLast: r.next - 1, chainExpectedMs: chainMs };
  }

  /** A request waits that is tighter than r (before it in dispatch order) or of another model, where r's cores are. */
  private wouldStop(r: Req, partitioned: boolean): boolean {
    const less = this.policy.order === 'deadline' ? byDeadline : byArrival;
    if (partitioned) {
      if (this.ready[r.model]!.size > 0 && less(this.ready[r.model]!.peek()!, r)) return true;
      // A chain started before the partition may hold another model's cores.
      return this.ready.some((h, m) => {
        if (m === r.model || h.size === 0) return false;
        const own = this.rangeOf(m)!;
        return r.held.some((c) => c >= own.first && c < own.first + own.count);
      });
    }
    return this.ready.some((h, m) => h.size > 0 && (m !== r.model || less(h.peek()!, r)));
  }

  /** Ask the chains a waiting request would wait behind to stop. */
  private askPreemptions(partitioned: boolean): void {
    for (const c of this.chains) {
      const stop = this.wouldStop(c, partitioned);
      if (!stop) continue;
      c.preemptAsked = true;
      this.chains.delete(c);
      this.preemptions.push(c.id);
    }
  }

  /**
   * An adaptive block that cannot be cut to its cap (one layer already longer than another
   * tenant's wait budget, e.g. a 13 ms convolution beside a model with a 4 ms budget) may not take
   * the cores that tenant's next request needs: such long blocks together hold at most the cores
   * beyond that reserve (at least one), so the reserve always turns over within the cap. A long
   * block runs on fewer cores than it asked for if that is what is left to long blocks; with none
   * left (0) it waits, and the requests behind it may go first. The dynamic form of pinning the
   * long-layer model away from the tight one.
   */
  private longBlockGrant(r: Req, grant: number): number {
    return Math.max(0, Math.min(grant, Math.max(1, this.pool.size - this.reserveCores[r.model]!) - this.longCores));
  }

  private isLong(r: Req, block: Block, grant: number): boolean {
    return (
      this.policy.blocks === 'adaptive' && blockQuietMs(this.models[r.model]!, block.first, block.last, grant) > this.blockCapMs[r.model]!
    );
  }

  private start(
    r: Req,
    block: Block,
    grant: number,
    plan: { want: number; need: number },
    conflict: boolean,
    long: boolean,
    range: CoreRange | undefined,
  ): Decision {
    const p = this.models[r.model]!;
    const cores = this.pool.grant(r.id, grant, r.prev, range);
    const claim = cores.length !== r.prev.length || cores.some((c, i) => c !== r.prev[i]);
    const level = r.level;
    const versions: number[] = [];
    let expectedMs = claim ? p.table.claimMs[grant]! : 0;
    for (let u = block.first; u <= block.last; u++) {
      versions.push(unitBestVersion(p, u, grant, level));
      expectedMs += unitBestMs(p, u, grant, level);
    }
    r.running = true;
    r.held = cores;
    r.longHeld = long ? grant : 0;
    this.longCores += r.longHeld;
    r.next = block.last + 1;
    r.committedNext = r.next;
    this.runningCount++;
    this.blocks++;
    if (claim) this.claims++;
    return {
      request: r.id,
      model: r.model,
      first: block.first,
      last: block.last,
      cores,
      versions,
      level,
      claim,
      conflict,
      wantCores: plan.want,
      needCores: plan.need,
      expectedMs,
      chainLast: block.last,
      chainExpectedMs: expectedMs,
    };
  }
}
