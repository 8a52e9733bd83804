/**
 * What `veltair simulate` prints: the setup (what was measured, what modelled), one row per
 * policy and load, and the derived figures the paper reports — best static block size per load,
 * layer-wise vs model-wise conflicts, max QPS at QoS against FCFS, mean latency at FCFS's max
 * QPS, and the scheduler's decision time (measured in real time, printed apart from the
 * simulated figures). Pure: builds strings and plain objects.
 */
import type { ExperimentResult, PointResult } from './experiment.js';

export interface ModelSummary {
  readonly name: string;
  readonly qosMs: number;
  readonly qosWhy: string;
  readonly weight: number;
  readonly units: number;
  readonly averageRequirement: number;
  readonly peakRequirement: number;
  readonly infeasibleUnits: number;
  readonly qosReachable: boolean;
  readonly fastestCores: number;
  readonly fastestMs: number;
  readonly profile: string;
  readonly machine: string;
  readonly figures: { readonly measured: number; readonly modelled: number; readonly artifact: number };
  readonly claim: string;
  readonly notes: readonly string[];
}

export interface BestStatic {
  readonly qps: number;
  readonly load: number;
  readonly k: number;
  readonly satisfaction: number;
  readonly meanMs: number;
}

/** Per load: the static:K with the highest satisfaction, then the lowest mean latency, then the smallest K. */
export function bestStaticPerLoad(points: readonly PointResult[]): BestStatic[] {
  const byQps = new Map<number, PointResult[]>();
  for (const p of points) {
    if (!p.policy.startsWith('static:')) continue;
    byQps.set(p.qps, [...(byQps.get(p.qps) ?? []), p]);
  }
  return [...byQps].map(([qps, ps]) => {
    const best = [...ps].sort(
      (a, b) =>
        b.metrics.satisfaction - a.metrics.satisfaction ||
        a.metrics.meanMs - b.metrics.meanMs ||
        Number(a.policy.slice(7)) - Number(b.policy.slice(7)),
    )[0]!;
    return { qps, load: best.load, k: Number(best.policy.slice(7)), satisfaction: best.metrics.satisfaction, meanMs: best.metrics.meanMs };
  });
}

const pct = (x: number) => `${(x * 100).toFixed(x >= 0.9995 || x < 0.001 ? 1 : 2)}%`;
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');

export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: readonly string[]) =>
    r
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function pointsTable(points: readonly PointResult[]): string {
  return table([
    [
      'policy',
      'QPS',
      'load',
      'within QoS',
      'mean ms',
      'p99 ms',
      'conflicts/req',
      'conflicts/block',
      'blocks/req',
      'waste',
      'busy',
      'cores',
      'stop',
    ],
    ...points.map((p) => [
      p.policy,
      f(p.qps, 1),
      f(p.load, 3),
      pct(p.metrics.satisfaction),
      f(p.metrics.meanMs, 3),
      f(p.metrics.p99Ms, 3),
      f(p.metrics.conflictsPerRequest, 3),
      f(p.metrics.conflictsPerBlock, 3),
      f(p.metrics.blocksPerRequest, 2),
      pct(p.metrics.waste),
      pct(p.metrics.utilisation),
      // The spatial configuration at the end of the run (veltair chooses it; veltair-partition fixes it).
      p.metrics.scheduler.spatial,
      p.stop,
    ]),
  ]);
}

export function derivedLines(r: ExperimentResult): string[] {
  const out: string[] = [];
  const best = bestStaticPerLoad(r.points);
  if (best.length > 0)
    out.push(
      `best static block size: ${best
        .map((b) => `K=${b.k} at ${f(b.qps, 1)} QPS (load ${f(b.load, 3)}, ${pct(b.satisfaction)} ` + `within QoS)`)
        .join('; ')}`,
    );
  const qpsList = [...new Set(r.points.map((p) => p.qps))];
  for (const q of qpsList) {
    const at = (name: string) => r.points.find((p) => p.qps === q && p.policy === name);
    const fc = at('fcfs'),
      lw = at('layerwise');
    if (fc && lw) {
      const ratio = fc.metrics.conflictsPerRequest > 0 ? lw.metrics.conflictsPerRequest / fc.metrics.conflictsPerRequest : Infinity;
      out.push(
        `at ${f(q, 1)} QPS: conflicts per request layerwise ${f(lw.metrics.conflictsPerRequest, 3)} vs fcfs ` +
          `${f(fc.metrics.conflictsPerRequest, 3)} (${Number.isFinite(ratio) ? `${f(ratio, 1)}×` : 'fcfs had none'})`,
      );
    }
    if (fc) out.push(`at ${f(q, 1)} QPS: fcfs (model-wise) core waste against the per-layer minimum ${pct(fc.metrics.waste)}`);
    const v = at('veltair');
    if (fc && v && Number.isFinite(fc.metrics.meanMs) && fc.metrics.meanMs > 0) {
      out.push(
        `at ${f(q, 1)} QPS: mean latency veltair ${f(v.metrics.meanMs, 3)} ms vs fcfs ${f(fc.metrics.meanMs, 3)} ms ` +
          `(${signed(v.metrics.meanMs / fc.metrics.meanMs - 1)})`,
      );
    }
  }
  if (r.maxQps) {
    const fcfs = r.maxQps.find((m) => m.policy === 'fcfs');
    out.push(
      `max QPS with ≥ 99% of every model's requests within QoS: ${r.maxQps
        .map(
          (m) =>
            `${m.policy} ` +
            `${f(m.maxQps, 1)}${fcfs && fcfs.maxQps > 0 && m.policy !== 'fcfs' ? ` (${signed(m.maxQps / fcfs.maxQps - 1)} vs fcfs)` : ''}`,
        )
        .join(', ')}`,
    );
  }
  if (r.reference) {
    const fc = r.reference.points.find((p) => p.policy === 'fcfs');
    out.push(
      `at fcfs's max QPS (${f(r.reference.qps, 1)}): ` +
        r.reference.points
          .map(
            (p) =>
              `${p.policy} mean ${f(p.metrics.meanMs, 3)} ms, p99 ${f(p.metrics.p99Ms, 3)} ms${
                fc && p !== fc && fc.metrics.meanMs > 0 ? ` (mean ` + `${signed(p.metrics.meanMs / fc.metrics.meanMs - 1)})` : ''
              }`,
          )
          .join('; '),
    );
  }
  return out;
}

const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)}%`;

export function timingLines(r: ExperimentResult): string[] {
  if (!r.timing) return [];
  return [
    'scheduler decision time (measured in real time with process.hrtime on this machine, not simulated):',
    ...r.timing.map(
      (t) =>
        `  ${t.policy}: ${f(t.perRequestMeanUs, 2)} µs per model request (mean over ${t.requests} requests); per call median ${f(t.perCallMedianUs, 2)} µs, ` +
        `p99 ${f(t.perCallP99Us, 2)} µs (${t.calls} calls)`,
    ),
  ];
}

export function modelLines(models: readonly ModelSummary[]): string[] {
  return models.map(
    (m) =>
      `  ${m.name}: QoS ${m.qosMs} ms (${m.qosWhy}); ${(m.weight * 100).toFixed(0)}% of the QPS; ${m.units} layers; requirement avg ` +
      `${f(m.averageRequirement, 1)}, peak ${m.peakRequirement} cores` +
      `${
        m.infeasibleUnits > 0
          ? ` (${m.infeasibleUnits} layers meet their first share at no core count: they get their fastest latency, the rest the ` +
            `budget left)`
          : ''
      }; alone fastest ${f(m.fastestMs, 3)} ms at ${m.fastestCores} cores` +
      `${m.qosReachable ? '' : ' — the QoS is out of reach even alone (no policy can meet it)'}\n` +
      `    profile ${m.profile} (${m.machine}); figures used: ${m.figures.measured} measured, ${m.figures.modelled} modelled, ${m.figures.artifact} from ` +
      `the artifact; claim/release: ${m.claim}` +
      (m.notes.length > 0 ? `\n    ${m.notes.join('; ')}` : ''),
  );
}
