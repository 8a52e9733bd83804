/**
 * The task scheduler: which workload gets the next batch of trials. Ansor's gradient rule is the
 * anchor (Zheng et al., OSDI'20, §6), simplified:
 *
 *   The objective is Σ_i w_i · g_i, with w_i how often workload i occurs in the model and g_i its
 *   current cost: the geometric mean over levels of the best latency measured at each level (ms),
 *   so a task's cost falls when ANY part of its frontier improves. Each step we pick the task with
 *   the largest estimated gain per trial,
 *
 *     priority_i = w_i · ( α · (g_i(t_i − Δ) − g_i(t_i)) / Δ   +   (1 − α) · g_i(t_i) / t_i )
 *
 *   the first term the recent improvement rate over the last Δ trials (Ansor's backward window),
 *   the second an optimistic term: the cost still left, spread over the trials spent so far — a
 *   task with few trials or a high remaining latency could still drop fast. (Ansor's forward term
 *   also uses similar tasks' throughput; workloads here have no such grouping, so it is dropped.)
 *
 *   Before any of that, every task gets one warm-up batch (a task never given a batch is picked
 *   first, in order); a task whose batches all failed goes last. Exhausted tasks (no unmeasured candidate left) are never picked.
 *   Ties go to the earlier task, so the choice is deterministic given the histories.
 */

export interface TaskProgress {
  /** Occurrences of the workload in the model(s). */
  readonly weight: number;
  /** Cost g after each trial so far (Infinity until the first ok measurement). */
  readonly history: readonly number[];
  readonly exhausted: boolean;
}

export interface TrialAllocationOptions {
  /** Weight of the backward (recent improvement) term; Ansor's default 0.2. */
  readonly alpha?: number;
  /** Backward window Δ in trials; Ansor's default 3. */
  readonly window?: number;
}

/** Geometric mean of the best latency at each level (ms); Infinity with nothing measured. */
export function taskCost(bestMs: Readonly<Record<string, number>>): number {
  const xs = Object.values(bestMs).filter((x) => x > 0 && Number.isFinite(x));
  if (xs.length === 0) return Infinity;
  return Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
}

/** Estimated total-latency gain per trial for one task (Infinity: still warming up). */
export function taskPriority(t: TaskProgress, o: TrialAllocationOptions = {}): number {
  const alpha = o.alpha ?? 0.2;
  const spent = t.history.length;
  const now = spent > 0 ? t.history[spent - 1]! : Infinity;
  if (spent === 0) return Infinity;
  // batches given but nothing ok yet (every candidate failed): last in line, not first
  if (!Number.isFinite(now)) return 0;
  const window = Math.min(o.window ?? 3, spent - 1);
  const before = window > 0 ? t.history[spent - 1 - window]! : now;
  const backward = window > 0 && Number.isFinite(before) ? (before - now) / window : 0;
  const optimistic = now / spent;
  return t.weight * (alpha * backward + (1 - alpha) * optimistic);
}

/** Index of the task to give the next batch, or undefined when every task is exhausted. */
export function pickTask(tasks: readonly TaskProgress[], o: TrialAllocationOptions = {}): number | undefined {
  let chosen: number | undefined;
  let top = -Infinity;
  tasks.forEach((t, i) => {
    if (t.exhausted) return;
    // a task never given a batch has priority Infinity: warm-ups go first, in task order
    const p = taskPriority(t, o);
    if (chosen === undefined || p > top) {
      chosen = i;
      top = p;
    }
  });
  return chosen;
}
