/**
 * The veltair backend: the scheduler (src/schedule/scheduler.ts, the same code the simulator
 * drives) with a real clock, over sessions that run its decisions.
 *
 *  request → admitted (a bounded queue per model; beyond it 503) → waits for one of the model's
 *  session instances (each has its own arena; instances share the weights) → scheduler.arrive →
 *  for each Decision: the session runs the decided units as one block, pinned to the granted cores
 *  (mapped from the scheduler's core indices to this server's CPU ids), with the decided version
 *  per tunable step → blockFinished → the next decisions … → the last block's outputs answer it.
 *  A model with a sparse output layer frees its instance after the last block; its heads then run
 *  one at a time off the event loop, each with the version the degrade rule picks as it starts.
 *
 * Chained dispatch (on by default; `chain: false` is the block-by-block path): a Decision may carry
 * a chain (chainLast > last), the request's next blocks planned to run on the same cores. The
 * session runs it as one native run on the instance's worker thread, back to back, so a request
 * that nothing interrupts returns to this event loop once. After every scheduler call the
 * dispatcher raises the preemption flag of each chain the scheduler names (takePreemptions: a
 * tighter request, or another model's, is left waiting for cores); the worker reads it at each
 * layer boundary past the committed block, stops there and reports the step, and the scheduler
 * decides that request's next block again from the unit it stopped before.
 *
 * All scheduler calls happen on the event loop, one at a time; each is timed in real time
 * (decisionSeconds). A block that fails ends its request with the error, and its cores go back.
 */
import { availableParallelism } from 'node:os';
import { internalError } from '../errors.js';
import type { ModelTable } from '../schedule/model-table.js';
import type { Policy } from '../schedule/policies.js';
import type { ModelPlan } from '../schedule/requirement.js';
import { describeSpatial, type SpatialState } from '../schedule/mode-choice.js';
import { Scheduler, type Decision } from '../schedule/scheduler.js';
import type { HostTensor } from '../runtime/host-tensor.js';
import type { Inference, Session } from '../runtime/session.js';
import type { Backend, InferOutcome, ServedModel } from './backend.js';
import { unavailable } from './errors.js';
import type { ServerMetrics } from './metrics.js';
import { blockTrace, newTrace, timelineParameter, type RequestTrace } from './timeline.js';
import { holdAfterMove, NO_HOLD, nextSparseVersion, type Hold } from './sparse-degrade.js';
import { ChoiceTally } from './choice-tally.js';

export interface DispatchModel {
  readonly served: ServedModel;
  readonly session: Session;
  readonly plan: ModelPlan;
  readonly priority: number;
  readonly maxQueue: number;
  /** Instances (arenas) that may hold requests at once. */
  readonly maxInstances: number;
}

export interface DispatcherOptions {
  readonly models: readonly DispatchModel[];
  readonly policy: Policy;
  /** The CPU ids this server may use; the scheduler's core i is cpus[i]. */
  readonly cpus: readonly number[];
  readonly metrics: ServerMetrics;
  /** Predicted interference level for a block about to run (default 0: no calibrated proxy). */
  readonly predictLevel?: (cpus: readonly number[], model: number) => number;
  /** Told every block's measured time beside the scheduler's expectation (the proxy's latency ratio). */
  readonly observeBlock?: (model: number, observedMs: number, expectedMs: number) => void;
  /** Chain a request's blocks on its native worker (default true); false: every block returns to the event loop. */
  readonly chain?: boolean;
}

interface Live {
  readonly id: number;
  readonly model: number;
  readonly arrivalMs: number;
  readonly feeds: Readonly<Record<string, HostTensor>>;
  readonly resolve: (o: InferOutcome) => void;
  readonly reject: (e: unknown) => void;
  instance?: Session;
  inference?: Inference;
  failed?: unknown;
  startedMs?: number;
  blocks: number;
  maxCores: number;
  levels: number[];
  versions: number[];
  conflicts: number;
  /** The version vector its blocks run with (tunableLayers order); each block writes the entries of its own units. */
  readonly vector: Int32Array;
  decideUs: number;
  dispatchUs: number;
  /** The scheduler asked its running chain to stop. */
  preemptAsked: boolean;
  /** The request's timeline (timeline.ts), ns on the monotonic clock. */
  readonly trace: RequestTrace;
}

/** Per model: the session instances and who holds them. */
interface Instances {
  readonly all: Session[];
  readonly free: Session[];
  /** Admitted requests waiting for an instance. */
  readonly waiting: Live[];
  admitted: number;
}

/** Per model: each unit's native steps, and its tunable layer (index into session.tunableLayers; -1: none), in arrays. */
interface UnitSteps {
  readonly first: Int32Array;
  readonly end: Int32Array;
  readonly tunable: Int32Array;
  /** The most versions any tunable layer keeps. */
  readonly versionsPerLayer: number;
}

function unitSteps(table: ModelTable, session: Session): UnitSteps {
  const layerOfStep = new Map(session.tunableLayers.map((t, i) => [t.step, i]));
  const n = table.units.length;
  const out = { first: new Int32Array(n), end: new Int32Array(n), tunable: new Int32Array(n).fill(-1) };
  table.units.forEach((u, i) => {
    out.first[i] = u.firstStep;
    out.end[i] = u.lastStep + 1;
    for (let s = u.firstStep; s <= u.lastStep && out.tunable[i] === -1; s++) out.tunable[i] = layerOfStep.get(s) ?? -1;
  });
  return { ...out, versionsPerLayer: Math.max(1, ...session.tunableLayers.map((t) => t.versions.length)) };
}

const nowMs = () => performance.now();

export class Dispatcher implements Backend {
  readonly name = 'veltair';
  readonly models: readonly ServedModel[];
  private readonly scheduler: Scheduler;
  private readonly byName: Map<string, number>;
  private readonly instances: Instances[];
  private readonly units: UnitSteps[];
  /** Per model: a unit's first native step → the unit (where a preempted chain reports it stopped). */
  private readonly unitAtStep: Map<number, number>[];
  private readonly tally: ChoiceTally;
  private readonly live = new Map<number, Live>();
  /** Per model: the degrade rule's hold (sparse-degrade.ts). */
  private readonly holds: Hold[];
  private nextId = 1;
  private closed = false;

  constructor(private readonly o: DispatcherOptions) {
    if (o.models.length === 0) throw internalError('a dispatcher needs models');
    this.models = o.models.map((m) => m.served);
    this.byName = new Map(o.models.map((m, i) => [m.served.name, i]));
    this.instances = o.models.map((m) => ({ all: [m.session], free: [m.session], waiting: [], admitted: 0 }));
    this.units = o.models.map((m) => unitSteps(m.plan.table, m.session));
    this.unitAtStep = this.units.map((us) => new Map(Array.from(us.first, (step, i) => [step, i])));
    this.tally = new ChoiceTally(
      this.models.map((m) => m.name),
      this.units.map((u) => u.versionsPerLayer),
    );
    o.metrics.onCollect(() => this.tally.flushInto(o.metrics));
    this.holds = o.models.map(() => NO_HOLD);
    this.scheduler = new Scheduler({
      policy: o.policy,
      models: o.models.map((m) => m.plan),
      cores: o.cpus.length,
      priorities: o.models.map((m) => m.priority),
      chain: o.chain ?? true,
      ...(o.predictLevel
        ? {
            predictLevel: (cores, model) =>
              o.predictLevel!(
                cores.map((c) => o.cpus[c]!),
                model,
              ),
          }
        : {}),
    });
  }

  inFlight(): number {
    return this.live.size;
  }

  /** The scheduler's spatial configuration: time-shared or a partition of this server's CPUs (in the order of `cpus`). */
  get spatial(): SpatialState {
    return this.scheduler.spatial;
  }

  infer(model: string, feeds: Readonly<Record<string, HostTensor>>): Promise<InferOutcome> {
    const index = this.byName.get(model);
    if (index === undefined) throw internalError(`model ${model} is not dispatched here`);
    const m = this.o.models[index]!;
    const inst = this.instances[index]!;
    if (this.closed) return Promise.reject(unavailable('the server is shutting down', 5));
    if (inst.admitted >= m.maxQueue) {
      const backlogMs = (inst.admitted * m.plan.fastestMs) / Math.max(1, Math.min(inst.all.length, this.o.cpus.length));
      return Promise.reject(
        unavailable(`model ${JSON.stringify(model)} has ${inst.admitted} requests in flight, its limit`, backlogMs / 1000),
      );
    }
    return new Promise<InferOutcome>((resolve, reject) => {
      const r: Live = {
        id: this.nextId++,
        model: index,
        arrivalMs: nowMs(),
        feeds,
        resolve,
        reject,
        blocks: 0,
        maxCores: 0,
        levels: [],
        versions: [],
        conflicts: 0,
        vector: new Int32Array(m.session.tunableLayers.length),
        decideUs: 0,
        dispatchUs: 0,
        preemptAsked: false,
        trace: newTrace(),
      };
      inst.admitted++;
      this.o.metrics.queueDepth.set({ model }, inst.admitted);
      this.live.set(r.id, r);
      inst.waiting.push(r);
      this.admitWaiting(index);
    });
  }

  /** Hand waiting requests of `model` an instance each (cloning one while under the cap), then to the scheduler. */
  private admitWaiting(model: number): void {
    const inst = this.instances[model]!;
    const m = this.o.models[model]!;
    while (inst.waiting.length > 0) {
      let session = inst.free.pop();
      if (!session && inst.all.length < m.maxInstances) {
        try {
          session = m.session.replicate();
        } catch (e) {
          // No arena for another instance (e.g. out of memory): this request fails, the server goes on.
          this.finish(inst.waiting.shift()!, e);
          continue;
        }
        inst.all.push(session);
      }
      if (!session) return;
      const r = inst.waiting.shift()!;
      r.instance = session;
      void this.start(r, session);
    }
  }

  private async start(r: Live, session: Session): Promise<void> {
    r.trace.instanceNs = process.hrtime.bigint();
    try {
      r.inference = await session.begin(r.feeds);
    } catch (e) {
      this.finish(r, e);
      return;
    }
    r.startedMs = nowMs();
    r.trace.begunNs = process.hrtime.bigint();
    this.apply(() => this.scheduler.arrive({ id: r.id, model: r.model, arrivalMs: r.arrivalMs }, nowMs()), r);
  }

  /** Run a scheduler call, timed, and start every block it decides. */
  private apply(call: () => Decision[], charged: Live): void {
    const t0 = process.hrtime.bigint();
    const decisions = call();
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    this.o.metrics.decisionSeconds.observe(seconds);
    charged.decideUs += seconds * 1e6;
    this.o.metrics.coresBusy.set(this.o.cpus.length - this.scheduler.pool.free);
    const decided = process.hrtime.bigint();
    for (const d of decisions) void this.runBlock(d, decided);
    for (const id of this.scheduler.takePreemptions()) {
      const r = this.live.get(id);
      if (!r) continue;
      r.preemptAsked = true;
      this.o.metrics.preemptions.inc({ model: this.models[r.model]!.name, outcome: 'asked' });
      r.inference?.preempt();
    }
  }

  private async runBlock(d: Decision, decidedNs: bigint): Promise<void> {
    const r = this.live.get(d.request);
    if (!r) throw internalError(`the scheduler decided a block for request ${d.request}, which is not live`);
    const name = this.models[r.model]!.name;
    let stoppedAt: number | undefined;
    if (r.failed === undefined) {
      const units = this.units[r.model]!;
      for (let u = d.first; u <= d.chainLast; u++) {
        const t = units.tunable[u]!;
        if (t < 0) continue;
        const v = d.versions[u - d.first]!;
        r.vector[t] = v;
        if (u <= d.last) this.tally.countVersion(r.model, d.level, v);
      }
      r.blocks++;
      r.maxCores = Math.max(r.maxCores, d.cores.length);
      r.levels.push(d.level);
      r.versions.push(...d.versions.slice(0, d.last - d.first + 1));
      if (d.conflict) {
        r.conflicts++;
        this.o.metrics.conflicts.inc({ model: name });
      }
      this.tally.countBlock(r.model, d.level);
      // The chained part may stop at the first step of any unit after the committed block.
      const stops = units.first.subarray(d.last + 1, d.chainLast + 1);
      const end = units.end[d.chainLast]!;
      r.preemptAsked = false;
      try {
        const cores = d.cores.map((c) => this.o.cpus[c]!);
        const b = await r.inference!.block(end, stops.length > 0 ? { cores, versions: r.vector, stops } : { cores, versions: r.vector });
        r.trace.blocks.push(blockTrace(decidedNs, b, process.hrtime.bigint(), d.cores.length));
        const dispatchS = Math.max(0, b.startNs - Number(decidedNs)) / 1e9;
        this.o.metrics.dispatchSeconds.observe(dispatchS);
        r.dispatchUs += dispatchS * 1e6;
        const ranMs = (b.endNs - b.startNs) / 1e6;
        if (b.to !== end) {
          stoppedAt = this.unitAtStep[r.model]!.get(b.to);
          if (stoppedAt === undefined) throw internalError(`a chain of ${name} stopped at step ${b.to}, which starts no unit`);
        }
        this.countChain(r, d, stoppedAt, ranMs);
      } catch (e) {
        r.failed = e;
        stoppedAt = undefined;
      }
    }
    let completed = false;
    this.apply(() => {
      const out = this.scheduler.blockFinished(r.id, nowMs(), stoppedAt);
      completed = out.completed;
      return out.decisions;
    }, r);
    // A failed request is not run further: once it is waiting again, the scheduler forgets it.
    if (!completed && r.failed !== undefined && this.scheduler.cancel(r.id)) completed = true;
    if (completed) this.complete(r);
  }

  /** A chain's blocks beyond the first in the request's counts, the preemption's outcome, and the proxy's observation of what ran. */
  private countChain(r: Live, d: Decision, stoppedAt: number | undefined, ranMs: number): void {
    const ranLast = stoppedAt === undefined ? d.chainLast : stoppedAt - 1;
    if (ranLast > d.last) r.versions.push(...d.versions.slice(d.last - d.first + 1, ranLast - d.first + 1));
    const units = this.units[r.model]!;
    for (let u = d.last + 1; u <= ranLast; u++)
      if (units.tunable[u]! >= 0) this.tally.countVersion(r.model, d.level, d.versions[u - d.first]!);
    const name = this.models[r.model]!.name;
    if (r.preemptAsked) this.o.metrics.preemptions.inc({ model: name, outcome: stoppedAt === undefined ? 'ran_through' : 'stopped' });
    if (ranLast === d.chainLast) this.o.observeBlock?.(r.model, ranMs, d.chainExpectedMs);
    else if (ranLast === d.last) this.o.observeBlock?.(r.model, ranMs, d.expectedMs);
  }

  private complete(r: Live): void {
    if (r.failed !== undefined) {
      this.finish(r, r.failed);
      return;
    }
    if (!this.o.models[r.model]!.session.sparse) {
      let outputs: Record<string, HostTensor>;
      try {
        outputs = r.inference!.finish();
      } catch (e) {
        this.finish(r, e);
        return;
      }
      this.answer(r, outputs, {});
      return;
    }
    let head: Promise<Record<string, HostTensor>>;
    let sparse: Record<string, string | number> = {};
    try {
      // The head queues behind the model's earlier heads (sparse-head.ts); the version is picked as its turn comes.
      head = r.inference!.finishPlan()(() => {
        sparse = this.chooseSparse(r.model);
      });
    } catch (e) {
      this.finish(r, e);
      return;
    }
    // The instance can start the next request while this one's head waits and scores; the request stays admitted (queued) until answered.
    this.freeInstance(r);
    head.then(
      (outputs) => this.answer(r, outputs, sparse),
      (e: unknown) => this.finish(r, e),
    );
  }

  private answer(r: Live, outputs: Record<string, HostTensor>, sparse: Record<string, string | number>): void {
    const done = nowMs();
    this.o.metrics.schedulingSeconds.observe((r.decideUs + r.dispatchUs) / 1e6);
    r.resolve({
      outputs,
      parameters: {
        veltair_policy: this.o.policy.name,
        veltair_blocks: r.blocks,
        veltair_max_cores: r.maxCores,
        veltair_levels: r.levels.map((l) => Number(l.toFixed(2))).join(','),
        veltair_versions: r.versions.join(','),
        veltair_conflicts: r.conflicts,
        veltair_spatial: describeSpatial(this.scheduler.spatial),
        veltair_queue_ms: Number(((r.startedMs ?? done) - r.arrivalMs).toFixed(3)),
        veltair_scheduler_us: Number(r.decideUs.toFixed(2)),
        veltair_dispatch_us: Number(r.dispatchUs.toFixed(2)),
        veltair_timeline: timelineParameter(r.trace, process.hrtime.bigint()),
        ...sparse,
      },
    });
    this.release(r);
  }

  /** A sparse output layer's version for the answer about to be finished (sparse-degrade.ts), and what to report about it. */
  private chooseSparse(model: number): Record<string, string | number> {
    const m = this.o.models[model]!;
    const head = m.session.sparse;
    if (!head) return {};
    const inst = this.instances[model]!;
    const now = nowMs();
    const next = nextSparseVersion({
      headMs: head.versions.map((v) => v.latencyMs['0']!),
      prefixMs: m.plan.fastestMs,
      qosMs: m.served.qosMs,
      queued: inst.admitted,
      parallel: Math.min(m.maxInstances, this.o.cpus.length),
      current: head.current,
      nowMs: now,
      hold: this.holds[model]!,
    });
    const name = m.served.name;
    if (next !== head.current) {
      const direction = next > head.current ? 'down' : 'up';
      this.o.metrics.sparseMoves.inc({ model: name, direction });
      this.holds[model] = holdAfterMove(this.holds[model]!, direction, now, m.served.qosMs);
      head.use(next);
    }
    const v = head.versions[head.current]!;
    this.o.metrics.sparseSparsity.set({ model: name }, v.sparsity);
    this.o.metrics.sparseRecallAt1.set({ model: name }, v.recallAt1);
    this.o.metrics.sparseAnswers.inc({ model: name, version: v.id });
    return { veltair_sparse_version: v.id, veltair_sparse_sparsity: v.sparsity, veltair_sparse_recall_at1: v.recallAt1 };
  }

  private finish(r: Live, e: unknown): void {
    r.inference?.abort();
    r.reject(e);
    this.release(r);
  }

  private release(r: Live): void {
    this.live.delete(r.id);
    const inst = this.instances[r.model]!;
    inst.admitted--;
    this.o.metrics.queueDepth.set({ model: this.models[r.model]!.name }, inst.admitted);
    this.freeInstance(r);
  }

  private freeInstance(r: Live): void {
    if (!r.instance) return;
    this.instances[r.model]!.free.push(r.instance);
    r.instance = undefined;
    this.admitWaiting(r.model);
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.live.size > 0) await new Promise((res) => setTimeout(res, 5));
    for (const inst of this.instances) for (const s of inst.all) s.close();
  }
}

/** Instances per model by default: enough for every core to hold a request, and a few waiting between blocks. */
export function defaultInstances(cpus: number): number {
  return Math.max(2, Math.min(2 * cpus, availableParallelism() * 2));
}
