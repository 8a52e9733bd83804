/**
 * What one parallel region per run of steps buys (executor.c run_team): each bundle runs with teams
 * on and off in the same process, alternating run by run (pairs), R pairs after a warm-up, at
 * --threads N (the versions tuned for N). Reports the median run time of each, the median of the
 * paired ratios (on / off) with its 10th–90th percentile spread, and with --profile the median
 * time outside the tuned kernels (a second pass with the step timer on). The outputs of both must
 * agree bit for bit, or the bench stops.
 *   node dist/src/bench/teams.js BUNDLE… [--threads 2] [--runs 300] [--profile] [--json]
 * A timing: run it under the benchmark lock (`flock -x "$BENCH_LOCK" …`).
 */
import { fileURLToPath } from 'node:url';
import { internalError } from '../errors.js';
import { loadBundle, type Session } from '../runtime/session.js';
import { median, quantile } from '../stats.js';
import { modelFeeds } from '../compile/feeds.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';

export interface TeamsResult {
  readonly bundle: string;
  readonly threads: number;
  readonly pairs: number;
  readonly offMs: number;
  readonly onMs: number;
  readonly ratio: number;
  readonly ratioP10: number;
  readonly ratioP90: number;
  /** Median ms per run outside the tuned kernels, teams off / on (--profile). */
  readonly otherOffMs?: number;
  readonly otherOnMs?: number;
}

function outputsEqual(a: Record<string, { data: ArrayLike<unknown> }>, b: Record<string, { data: ArrayLike<unknown> }>): boolean {
  return Object.keys(a).every((k) => {
    const x = a[k]!.data,
      y = b[k]!.data;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return false;
    return true;
  });
}

export async function compareTeams(bundle: string, threads: number, pairs: number, profile: boolean): Promise<TeamsResult> {
  const open = async (teams: boolean) => {
    const s = await loadBundle(bundle, { threads });
    s.setLevel(0);
    s.executor.setTeams(teams);
    const arrays = modelFeeds(s.manifest.model.inputs);
    return { s, feeds: Object.fromEntries(s.manifest.model.inputs.map((t, i) => [t.name, arrays[i]!])) };
  };
  const off = await open(false),
    on = await open(true);
  try {
    if (!outputsEqual(off.s.runSync(off.feeds), on.s.runSync(on.feeds)))
      throw internalError(`${bundle}: outputs differ with teams on and off`);
    const time = (x: { s: Session; feeds: Record<string, unknown> }) => {
      const t0 = process.hrtime.bigint();
      x.s.runSync(x.feeds as never);
      return Number(process.hrtime.bigint() - t0) / 1e6;
    };
    for (let i = 0; i < 20; i++) {
      time(off);
      time(on);
    }
    const offMs: number[] = [],
      onMs: number[] = [];
    for (let r = 0; r < pairs; r++) {
      offMs.push(time(off));
      onMs.push(time(on));
    }
    const ratios = onMs.map((t, i) => t / offMs[i]!);
    let other: { otherOffMs: number; otherOnMs: number } | undefined;
    if (profile) {
      const outside = (x: typeof off) => {
        x.s.runSync(x.feeds as never);
        const ns = x.s.executor.stepTimesNs();
        return x.s.steps.filter((st) => st.kind !== 'kernel').reduce((a, st) => a + ns[st.index]! / 1e6, 0);
      };
      off.s.executor.setProfiling(true);
      on.s.executor.setProfiling(true);
      const o: number[] = [],
        n: number[] = [];
      for (let r = 0; r < pairs; r++) {
        o.push(outside(off));
        n.push(outside(on));
      }
      other = { otherOffMs: median(o), otherOnMs: median(n) };
    }
    return {
      bundle,
      threads,
      pairs,
      offMs: median(offMs),
      onMs: median(onMs),
      ratio: median(ratios),
      ratioP10: quantile(ratios, 0.1),
      ratioP90: quantile(ratios, 0.9),
      ...other,
    };
  } finally {
    off.s.close();
    on.s.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const value = (name: string, fallback: number) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : fallback;
  };
  const bundles = args.filter((a, i) => !a.startsWith('--') && !['--threads', '--runs'].includes(args[i - 1] ?? ''));
  if (bundles.length === 0) {
    process.stderr.write('usage: node dist/src/bench/teams.js BUNDLE… [--threads 2] [--runs 300] [--profile] [--json]\n');
    process.exit(1);
  }
  const threads = value('--threads', 2),
    pairs = value('--runs', 300),
    profile = args.includes('--profile');
  const machine = await machineInfo();
  const results: TeamsResult[] = [];
  for (const b of bundles) results.push(await compareTeams(b, threads, pairs, profile));
  if (args.includes('--json')) {
    process.stdout.write(JSON.stringify({ machine, results }) + '\n');
  } else {
    const f = (x: number) => x.toFixed(3);
    process.stdout.write(
      [
        `machine: ${machineLine(machine)}; ${threads} thread(s), ${pairs} alternating pairs`,
        '',
        `| bundle | teams off ms | teams on ms | on/off (paired median) | p10–p90 |${profile ? ' outside kernels off → on ms |' : ''}`,
        `|---|---|---|---|---|${profile ? '---|' : ''}`,
        ...results.map(
          (r) =>
            `| ${r.bundle.split('/').pop()} | ${f(r.offMs)} | ${f(r.onMs)} | ${f(r.ratio)} | ${f(r.ratioP10)}–${f(r.ratioP90)} |` +
            (r.otherOffMs !== undefined ? ` ${f(r.otherOffMs)} → ${f(r.otherOnMs!)} |` : ''),
        ),
      ].join('\n') + '\n',
    );
  }
}
