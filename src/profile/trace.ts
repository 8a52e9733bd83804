/**
 * `veltair run --profile FILE.json`: per-step times of a loaded bundle as a Chrome trace (the
 * Trace Event Format ONNX Runtime's profiler writes; Perfetto and chrome://tracing open it) and a
 * summary by op kind for the terminal.
 *
 * Protocol: one unprofiled warm-up run, then `runs` runs with the executor's per-step timing on
 * (two CLOCK_MONOTONIC reads per step, native-kernels/runtime/executor.c). Every profiled run is
 * one "run" event on the trace with its steps inside it; a step's start is its run's start plus the
 * measured durations of the steps before it (the executor records durations, not start times; the
 * loop between two steps is a few nanoseconds). The summary uses each step's median over the runs.
 * Works on any bundle: every native step is a kernel, a runtime op or a layout reorder.
 */
import type { Manifest } from '../bundle/manifest.js';
import type { GraphPlan } from '../bundle/plan.js';
import type { Session } from '../runtime/session.js';
import { median } from '../stats.js';

export interface ProfiledStep {
  readonly index: number;
  /** 'kernel' (a tunable layer), the runtime op's layer kind, or 'reorder'. */
  readonly kind: string;
  readonly layer: number | null;
  /** The model's node name (display only), or the reorder's layouts. */
  readonly name: string;
  readonly layout: string;
  /** The step's wall time in every profiled run (ns). */
  readonly samplesNs: readonly number[];
}

export interface RunProfile {
  readonly steps: readonly ProfiledStep[];
  /** Sum of the step times of each profiled run (ms). */
  readonly runsMs: readonly number[];
}

export interface KindRow {
  readonly kind: string;
  readonly steps: number;
  /** Sum over the kind's steps of their median time (ms). */
  readonly ms: number;
  readonly share: number;
}

/** Time every step of `runs` runs (after one warm-up) on the session's current versions and threads. */
export function profileSession(session: Session, feeds: Parameters<Session['runSync']>[0], runs: number): RunProfile {
  const { executor, manifest } = session;
  const plan = manifest.graphPlan as GraphPlan;
  const layers = new Map(manifest.layers.map((l) => [l.index, l]));
  session.runSync(feeds);
  const samples: number[][] = session.steps.map(() => []);
  const runsMs: number[] = [];
  executor.setProfiling(true);
  try {
    for (let r = 0; r < runs; r++) {
      session.runSync(feeds);
      const ns = executor.stepTimesNs();
      let total = 0;
      for (let s = 0; s < samples.length; s++) {
        samples[s]!.push(ns[s]!);
        total += ns[s]!;
      }
      runsMs.push(total / 1e6);
    }
  } finally {
    executor.setProfiling(false);
  }
  const steps = session.steps.map((st, i): ProfiledStep => {
    const p = plan.steps[st.planStep]!;
    const layer = st.layer === null ? undefined : layers.get(st.layer);
    const name = p.op === 'reorder' ? `${p.from}→${p.to}` : (layer?.name ?? `step ${i}`);
    const layout = p.op === 'reorder' ? p.to : p.layout;
    return { index: i, kind: st.kind, layer: st.layer, name, layout, samplesNs: samples[i]! };
  });
  return { steps, runsMs };
}

/** Time by op kind (medians per step), largest first; `share` of the whole run. */
export function summaryByKind(p: RunProfile): KindRow[] {
  const by = new Map<string, { steps: number; ns: number }>();
  let total = 0;
  for (const s of p.steps) {
    const ns = s.samplesNs.length > 0 ? median(s.samplesNs) : 0;
    const row = by.get(s.kind) ?? { steps: 0, ns: 0 };
    row.steps++;
    row.ns += ns;
    by.set(s.kind, row);
    total += ns;
  }
  return [...by]
    .map(([kind, r]) => ({ kind, steps: r.steps, ms: r.ns / 1e6, share: total > 0 ? r.ns / total : 0 }))
    .sort((a, b) => b.ms - a.ms || (a.kind < b.kind ? -1 : 1));
}

/** Share of the run's step time spent outside tuned kernels (every op and reorder), by medians. */
export function nonKernelShare(p: RunProfile): number {
  const rows = summaryByKind(p);
  const total = rows.reduce((s, r) => s + r.ms, 0);
  const kernel = rows.find((r) => r.kind === 'kernel')?.ms ?? 0;
  return total > 0 ? 1 - kernel / total : 0;
}

export interface TraceMeta {
  readonly bundle: string;
  readonly model: string;
  readonly threads: number | null;
  readonly level: number;
}

/** The Trace Event Format object: one process, one thread, a complete ("X") event per run and per step (µs). */
export function chromeTrace(p: RunProfile, m: Manifest, meta: TraceMeta): Record<string, unknown> {
  const events: Record<string, unknown>[] = [
    { name: 'process_name', ph: 'M', pid: 1, tid: 1, args: { name: `veltair ${m.model.path}` } },
    { name: 'thread_name', ph: 'M', pid: 1, tid: 1, args: { name: 'executor' } },
  ];
  let t = 0;
  p.runsMs.forEach((runMs, r) => {
    events.push({ name: `run ${r}`, cat: 'Session', ph: 'X', pid: 1, tid: 1, ts: round(t), dur: round(runMs * 1000), args: { run: r } });
    let at = t;
    for (const s of p.steps) {
      const dur = s.samplesNs[r]! / 1000;
      events.push({
        name: s.kind === 'kernel' || s.kind === 'reorder' ? `${s.kind} ${s.name}` : s.name,
        cat: s.kind,
        ph: 'X',
        pid: 1,
        tid: 1,
        ts: round(at),
        dur: round(dur),
        args: { step: s.index, op: s.kind, layer: s.layer, layout: s.layout },
      });
      at += dur;
    }
    t = at + 1;
  });
  return {
    traceEvents: events,
    displayTimeUnit: 'ms',
    otherData: {
      producer: 'veltair run --profile',
      bundle: meta.bundle,
      model: meta.model,
      threads: meta.threads,
      level: meta.level,
      runs: p.runsMs.length,
      note: 'step start = run start + the measured durations of the steps before it (the executor records durations)',
    },
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;
