/**
 * The server's Prometheus metrics (prom-client, on the server's own registry, served at /metrics):
 * requests and their latency per model, QoS violations, queue depth, cores held by running blocks,
 * scheduler conflicts, decision and dispatch time, the interference level and versions each block ran with, and
 * the connections (connections.ts): open now, timed out by kind, refused or dropped by reason.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

const LATENCY_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10];
const SCHEDULING_BUCKETS = [1e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3];

export interface ServerMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'model' | 'code'>;
  readonly latency: Histogram<'model'>;
  readonly qosViolations: Counter<'model'>;
  readonly queueDepth: Gauge<'model'>;
  readonly coresBusy: Gauge;
  readonly blocks: Counter<'model' | 'level'>;
  readonly versionChoices: Counter<'model' | 'level' | 'version'>;
  /** Run `update` each time the registry is read, before blocks and versionChoices are (counts kept elsewhere, added late). */
  onCollect(update: () => void): void;
  readonly conflicts: Counter<'model'>;
  /** Chains (blocks run back to back on a request's worker) the scheduler asked to stop early, and those that did stop before their end. */
  readonly preemptions: Counter<'model' | 'outcome'>;
  readonly decisionSeconds: Histogram;
  /** Per native run (a block, or a chain of blocks): the scheduler's decision to its kernels starting on its cores (hand-off, thread wake-up, pinning). */
  readonly dispatchSeconds: Histogram;
  /** Per answered request: its scheduler decisions plus its blocks' dispatch, what the scheduling costs it in all. */
  readonly schedulingSeconds: Histogram;
  /** Models with a sparse output layer (sparse-degrade.ts): the version answering now, its recall, and each move. */
  readonly sparseSparsity: Gauge<'model'>;
  readonly sparseRecallAt1: Gauge<'model'>;
  readonly sparseAnswers: Counter<'model' | 'version'>;
  readonly sparseMoves: Counter<'model' | 'direction'>;
  /** Client connections open now (the --max-connections bound applies to this). */
  readonly connectionsOpen: Gauge;
  /** Connections cut off by a timeout: header, body (progress), send (an answer not taken) or drain (the drain deadline). */
  readonly timeouts: Counter<'kind'>;
  /**
   * Connections not served on: max_connections (past the cap, answered 503 with Retry-After at accept, then closed) or discard_limit
   * (the rest of a rejected body was too large to read).
   */
  readonly connectionsDropped: Counter<'reason'>;
}

export function createMetrics(): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'veltair_process_' });
  const r = { registers: [registry] };
  const updates: (() => void)[] = [];
  const collect = () => {
    for (const update of updates) update();
  };
  return {
    onCollect: (update) => {
      updates.push(update);
    },
    registry,
    requests: new Counter({
      name: 'veltair_requests_total',
      help: 'Inference requests answered, by model and HTTP status',
      labelNames: ['model', 'code'],
      ...r,
    }),
    latency: new Histogram({
      name: 'veltair_request_duration_seconds',
      help: 'Arrival to response of successful inferences',
      labelNames: ['model'],
      buckets: LATENCY_BUCKETS,
      ...r,
    }),
    qosViolations: new Counter({
      name: 'veltair_qos_violations_total',
      help: "Successful inferences slower than their model's QoS target",
      labelNames: ['model'],
      ...r,
    }),
    queueDepth: new Gauge({
      name: 'veltair_queue_depth',
      help: 'Requests admitted and not yet answered, by model',
      labelNames: ['model'],
      ...r,
    }),
    coresBusy: new Gauge({ name: 'veltair_cores_busy', help: 'Cores granted to running blocks now', ...r }),
    blocks: new Counter({
      name: 'veltair_blocks_total',
      help: 'Layer blocks run, by model and predicted interference level',
      labelNames: ['model', 'level'],
      collect,
      ...r,
    }),
    versionChoices: new Counter({
      name: 'veltair_version_choices_total',
      help: "Kernel steps run, by model, predicted level and version index (0: each layer's first kept version)",
      labelNames: ['model', 'level', 'version'],
      collect,
      ...r,
    }),
    conflicts: new Counter({
      name: 'veltair_conflicts_total',
      help: 'Block claims that found too few free cores',
      labelNames: ['model'],
      ...r,
    }),
    preemptions: new Counter({
      name: 'veltair_chain_preemptions_total',
      help:
        'Chains asked to stop at their next layer boundary (outcome asked), ' +
        'then whether they stopped early or ran_through (the flag came after the last boundary)',
      labelNames: ['model', 'outcome'],
      ...r,
    }),
    decisionSeconds: new Histogram({
      name: 'veltair_scheduler_decision_seconds',
      help: 'Real time the scheduler took per event',
      buckets: SCHEDULING_BUCKETS,
      ...r,
    }),
    dispatchSeconds: new Histogram({
      name: 'veltair_block_dispatch_seconds',
      help: "Per block: from the scheduler's decision to its kernels starting on the granted cores",
      buckets: SCHEDULING_BUCKETS,
      ...r,
    }),
    schedulingSeconds: new Histogram({
      name: 'veltair_request_scheduling_seconds',
      help: "Per answered request: its scheduler decisions plus its blocks' dispatch",
      buckets: SCHEDULING_BUCKETS,
      ...r,
    }),
    sparseSparsity: new Gauge({
      name: 'veltair_sparse_sparsity',
      help: 'Sparsity of the output-layer version answering now (1: dense)',
      labelNames: ['model'],
      ...r,
    }),
    sparseRecallAt1: new Gauge({
      name: 'veltair_sparse_recall_at1',
      help: 'Recall@1 against dense (compile-time calibration) of the version answering now',
      labelNames: ['model'],
      ...r,
    }),
    sparseAnswers: new Counter({
      name: 'veltair_sparse_answers_total',
      help: 'Answers by model and output-layer version',
      labelNames: ['model', 'version'],
      ...r,
    }),
    sparseMoves: new Counter({
      name: 'veltair_sparse_moves_total',
      help: 'Moves along the sparsity family: down (sparser, under load) or up',
      labelNames: ['model', 'direction'],
      ...r,
    }),
    connectionsOpen: new Gauge({ name: 'veltair_open_connections', help: 'Client connections open now', ...r }),
    timeouts: new Counter({
      name: 'veltair_timeouts_total',
      help: 'Connections cut off by a timeout, by kind (header, body, send, drain)',
      labelNames: ['kind'],
      ...r,
    }),
    connectionsDropped: new Counter({
      name: 'veltair_connections_dropped_total',
      help: 'Connections not served on, by reason (max_connections: answered 503 at accept; discard_limit)',
      labelNames: ['reason'],
      ...r,
    }),
  };
}
