/**
 * `veltair load URL [URL…] --models NAME[=WEIGHT],… (--qps Q | --find-max | --qps-sweep FROM:TO:STEPS) [--duration S] [--seed N]
 *  [--qos NAME=MS]… [--rounds R] [--labels A,B…] [--plot PREFIX] [--json]`: open-loop Poisson load on a v2 server on this machine (src/load/generator.ts).
 * `--qps-sweep` runs the load at STEPS rates from FROM to TO on each server in turn (load-sweep.ts) and
 * reports QoS attainment and p99 per model per step; `--plot PREFIX` draws them (one curve per
 * server, labelled by --labels) as PREFIX-attainment.{svg,png} and PREFIX-p99.{svg,png}.
 * With several URLs (`--find-max` only), the servers are searched in turn, order reversed every
 * other round, all at the first server's QoS, and one side-by-side table compares them.
 * Inputs are seeded random tensors of each model's declared shapes; each model's QoS is what the
 * server's metadata states unless --qos overrides it. `--find-max` searches the highest total QPS
 * at which every model keeps ≥ --attainment (99%) of its requests within QoS, each rate judged by
 * the early-stopping rule at 99% confidence (load-judgement.ts), each probe between --duration and --probe-limit.
 */
import type { Command } from 'commander';
import { userError } from '../errors.js';
import { loopbackUrl, runLoad, type LoadResult } from '../load/generator.js';
import { findMaxQps } from '../load/find-max.js';
import { median } from '../stats.js';
import { badArgument, parsePositiveInt } from '../terminal/args.js';
import { formatTable, note, printJson, printLine } from '../terminal/output.js';
import { plotFromAction, sweepAction } from './load-sweep.js';
import { loadModels, type LoadFlags } from './load-models.js';
import { judgementLine } from '../load/early-stopping.js';
import { boundsText, DEFAULT_PROBE_LIMIT_S, parseJudgement } from './load-judgement.js';
import { runTraced } from '../load/late-attribution.js';
import { attributionTable } from '../load/late-table.js';

const collect = (v: string, all: string[]) => [...all, v];

const cell = (x: number | null) => (x === null ? '-' : x.toFixed(2));

export function loadTable(r: LoadResult): string {
  return formatTable(
    [
      ['model', 'target QPS', 'achieved QPS', 'sent', '503', 'errors', 'p50 ms', 'p90 ms', 'p99 ms', 'QoS ms', 'within QoS'],
      ...r.models.map((m) => [
        m.name,
        m.targetQps.toFixed(2),
        m.achievedQps.toFixed(2),
        String(m.sent),
        String(m.rejected),
        String(m.errors),
        cell(m.p50Ms),
        cell(m.p90Ms),
        cell(m.p99Ms),
        m.qosMs.toFixed(2),
        `${(m.satisfaction * 100).toFixed(1)}%`,
      ]),
    ],
    new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
  );
}

export function registerLoadCommand(program: Command): void {
  program
    .command('load')
    .description('open-loop Poisson load on a v2 server on this machine: achieved QPS, latency percentiles, QoS satisfaction')
    .argument(
      '[url...]',
      'the server, e.g. http://127.0.0.1:8000 (loopback only); with --find-max or --qps-sweep, several servers side by side',
    )
    .option('--models <list>', 'models to load, NAME[=WEIGHT],… (weights share the total rate; default 1 each)')
    .option('--qps <q>', 'total requests per second over all models')
    .option('--find-max', 'search the highest total QPS with every model at ≥ --attainment within QoS, judged by the early-stopping rule')
    .option('--duration <s>', 'seconds per run; with --find-max, the least a probe runs before it may pass', '10')
    .option('--seed <n>', 'seed of the arrival times and inputs', '1')
    .option('--qos <name=ms>', "override a model's QoS (repeatable)", collect, [])
    .option('--json-tensors', 'send tensors as JSON data (default: the binary tensor data extension)')
    .option(
      '--attainment <pct>',
      "with --find-max: the share of each model's requests (percent) that must be within QoS, at 99% confidence",
      '99',
    )
    .option(
      '--probe-limit <s>',
      'with --find-max: the time bound of one probe; a probe the rule has not decided by then is undecided',
      String(DEFAULT_PROBE_LIMIT_S),
    )
    .option(
      '--attribute',
      "with --qps: read every answer's server account (server_ms, veltair_timeline) and attribute each late request to where it lost its time",
    )
    .option('--verify', "decode every answer's JSON header and check its outputs (default: checked by status, headers and size only)")
    .option('--rounds <n>', 'with several servers: find-max rounds over all of them, order reversed every other round', '1')
    .option(
      '--qps-sweep <from:to:steps>',
      'run at STEPS total rates from FROM to TO (per server): QoS attainment and p99 per model per step',
    )
    .option('--labels <list>', 'with --qps-sweep: a label per server (the arm), comma-separated')
    .option('--plot <prefix>', 'with --qps-sweep: write PREFIX-attainment and PREFIX-p99 figures, .svg and .png')
    .option('--force', 'with --plot: replace existing figure files')
    .option('--plot-from <file>', 'draw --plot from a saved sweep (--qps-sweep --json, or serve-bench --sweep) instead of sending load')
    .option('--json', 'machine-readable results on stdout')
    .action(async (urlTexts: string[], flags: LoadFlags) => {
      if (flags.plotFrom !== undefined) {
        await plotFromAction(urlTexts, flags);
        return;
      }
      if (urlTexts.length === 0) {
        throw userError('BAD_ARGUMENT', "give the server's URL", 'e.g. veltair load http://127.0.0.1:8000 --models resnet50 --qps 20');
      }
      if (flags.models === undefined)
        throw userError('BAD_ARGUMENT', 'give --models NAME[=WEIGHT],…', 'e.g. --models resnet50,mobilenet_v2');
      if (flags.qpsSweep !== undefined) {
        await sweepAction(urlTexts, flags, loadModels);
        return;
      }
      if (urlTexts.length > 1) {
        await compareServers(urlTexts, flags);
        return;
      }
      const base = loopbackUrl(urlTexts[0]!);
      const durationS = parsePositiveInt('--duration', flags.duration, 3600);
      const seed = parsePositiveInt('--seed', flags.seed);
      const qps = flags.qps === undefined ? undefined : Number(flags.qps);
      if (qps !== undefined && !(qps > 0 && qps <= 1e6)) throw badArgument('--qps', flags.qps!, 'is not a rate above 0', 'e.g. --qps 20');
      if (qps === undefined && !flags.findMax) throw userError('BAD_ARGUMENT', 'give --qps Q or --find-max', 'e.g. --qps 20 --duration 10');
      if (flags.attribute && (qps === undefined || flags.findMax)) {
        throw userError('BAD_ARGUMENT', '--attribute traces one run at a fixed rate', 'give --qps Q (without --find-max)');
      }
      const models = await loadModels(base, flags, seed);
      if (flags.findMax) {
        const judged = parseJudgement(flags);
        const start = qps ?? models.reduce((s, m) => s + 1000 / m.qosMs, 0) / models.length;
        const found = await findMaxQps(base, models, {
          ...judged,
          seed,
          startQps: start,
          onRun: (r) => {
            if (flags.json) return;
            note(`  ${r.totalQps.toFixed(2)} QPS: ${r.verdict} (worst within-QoS ${(r.satisfaction * 100).toFixed(1)}%, ${r.durationS} s)`);
          },
        });
        if (flags.json) {
          printJson({
            maxQps: found.maxQps,
            failedQps: found.failedQps,
            undecidedQps: found.undecidedQps,
            boundTooShortBelowQps: found.boundTooShortBelowQps,
            judgement: judged.judgement,
            runs: found.runs,
          });
          return;
        }
        printLine(
          `max QPS that passed: ${found.maxQps.toFixed(2)} (${boundsText(found)}; ${found.runs.length} runs): ` +
            judgementLine(judged.judgement),
        );
        const best = found.runs.filter((r) => r.totalQps === found.maxQps)[0];
        if (best) printLine(loadTable(best));
        return;
      }
      if (flags.attribute) {
        const a = await runTraced(base, models, qps!, durationS, seed);
        if (flags.json) printJson(a);
        else printLine(attributionTable(a));
        return;
      }
      const r = await runLoad(base, models, qps!, durationS, seed);
      if (flags.json) printJson(r);
      else printLine(loadTable(r));
    });
}

/** `--find-max` against several servers, interleaved over rounds, at the first server's QoS. */
async function compareServers(urlTexts: readonly string[], flags: LoadFlags): Promise<void> {
  if (!flags.findMax) {
    throw userError(
      'BAD_ARGUMENT',
      `${urlTexts.length} servers given without --find-max`,
      'compare servers with --find-max, or give one URL with --qps',
    );
  }
  const bases = urlTexts.map((u) => loopbackUrl(u));
  const seed = parsePositiveInt('--seed', flags.seed);
  const rounds = parsePositiveInt('--rounds', flags.rounds, 100);
  const judged = parseJudgement(flags);
  const first = await loadModels(bases[0]!, flags, seed);
  // One QoS for every server (the first one's, or --qos): a server stating a laxer QoS would win by that alone.
  const sameQos = { ...flags, qos: first.map((m) => `${m.name}=${m.qosMs.toFixed(3)}`) };
  const models = [first, ...(await Promise.all(bases.slice(1).map((b) => loadModels(b, sameQos, seed))))];
  const start = flags.qps !== undefined ? Number(flags.qps) : first.reduce((s, m) => s + 1000 / m.qosMs, 0) / first.length;
  if (!(start > 0)) throw badArgument('--qps', flags.qps!, 'is not a rate above 0', 'e.g. --qps 20');
  const maxQps: number[][] = bases.map(() => []);
  const undecided: number[][][] = bases.map(() => []);
  for (let round = 0; round < rounds; round++) {
    const order = bases.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order) {
      const found = await findMaxQps(bases[i]!, models[i]!, { ...judged, seed: seed + round * 1000, startQps: start });
      maxQps[i]!.push(found.maxQps);
      undecided[i]!.push(found.undecidedQps);
      if (!flags.json) {
        note(
          `round ${round + 1}: ${bases[i]!.origin} max ${found.maxQps.toFixed(2)} QPS (${boundsText(found)}; ${found.runs.length} runs)`,
        );
      }
    }
  }
  const medians = maxQps.map(median);
  if (flags.json) {
    printJson({
      qosMs: Object.fromEntries(first.map((m) => [m.name, m.qosMs])),
      rounds,
      judgement: judged.judgement,
      servers: bases.map((b, i) => ({ url: b.origin, maxQps: maxQps[i], undecidedQps: undecided[i], medianMaxQps: medians[i] })),
    });
    return;
  }
  printLine(
    `QoS (the first server's): ${first.map((m) => `${m.name} ${m.qosMs.toFixed(1)} ms`).join(', ')}; ${rounds} round(s), ` +
      `servers interleaved; max QPS that passed: ${judgementLine(judged.judgement)}`,
  );
  printLine(
    formatTable(
      [
        ['server', 'max QPS per round', 'median', `× ${bases[0]!.origin}`],
        ...bases.map((b, i) => [
          b.origin,
          maxQps[i]!.map((q) => q.toFixed(2)).join(' / '),
          medians[i]!.toFixed(2),
          medians[0]! > 0 ? (medians[i]! / medians[0]!).toFixed(2) : '-',
        ]),
      ],
      new Set([2, 3]),
    ),
  );
}
