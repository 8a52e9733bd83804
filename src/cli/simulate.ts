/**
 * `veltair simulate --profiles LIST (--mix NAME | --models A,B) [--cores N] [--policy LIST]
 *  (--qps LIST | --load LIST | --find-max) [--seed S] [--duration S] [--warmup S] [--max-events N]
 *  [--max-sim-time S] [--qos NAME=MS] [--scale NAME=F] [--repeat NAME=K] [--use-cores LIST] [--memory-gbps G] [--l3-mib M]
 *  [--fork-join-us U] [--serial-fraction F] [--claim-us U] [--calibration FILE] [--on-conflict wait|shrink]
 *  [--plot DIR] [--timing] [--scaling-report] [--json]`
 *
 * Simulated, seeded, deterministic: the same flags give the same stdout bytes. The scheduler's
 * decision time is measured in real time and printed apart (human output), or added to --json
 * only with --timing (then stdout is no longer byte-identical across runs). Everything printed
 * says what was measured and what modelled.
 */
import type { Command } from 'commander';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { quoteForMessage, userError } from '../errors.js';
import { parsePolicyList } from '../schedule/policies.js';
import { checkPrediction } from '../schedule/scaling-check.js';
import { fitConstants } from '../schedule/scaling.js';
import { equalWeights, runExperiment, type ExperimentResult, type LoadSpec } from '../simulate/experiment.js';
import { loadProfiles } from '../simulate/profile-sources.js';
import { derivedLines, modelLines, pointsTable, timingLines } from '../simulate/report.js';
import { setupModels, scalingConstants, type Setup } from '../simulate/setup.js';
import { simulateCharges } from './simulate-calibration.js';
import { MIXES } from '../simulate/workloads.js';
import { dispatchLabel } from '../simulate/engine.js';
import { writeSchedulePlots } from '../simulate/plots.js';
import { note, printJson, printLine } from '../terminal/output.js';
import { collect, parseCount, parseList, parseNonNegative, parseNumberList, parsePairs, parsePositiveNumber } from './simulate-args.js';

interface SimulateFlags {
  profiles?: string;
  mix?: string;
  models?: string;
  cores?: string;
  policy?: string;
  qps?: string;
  load?: string;
  findMax?: boolean;
  seed?: string;
  duration?: string;
  warmup?: string;
  maxEvents?: string;
  maxSimTime?: string;
  qos?: string[];
  scale?: string[];
  repeat?: string[];
  useCores?: string[];
  memoryGbps?: string;
  l3Mib?: string;
  forkJoinUs?: string;
  serialFraction?: string;
  claimUs?: string;
  onConflict?: string;
  calibration?: string;
  plot?: string;
  timing?: boolean;
  /** false with --no-chain. */
  chain?: boolean;
  scalingReport?: boolean;
  json?: boolean;
}

function modelList(f: SimulateFlags): string[] {
  if ((f.mix === undefined) === (f.models === undefined)) {
    throw userError('BAD_ARGUMENT', 'give exactly one of --mix NAME and --models A,B', `mixes: ${Object.keys(MIXES).join(', ')}`);
  }
  if (f.mix !== undefined) {
    const mix = MIXES[f.mix];
    if (!mix)
      throw userError(
        'BAD_ARGUMENT',
        `--mix ${quoteForMessage(f.mix)} is not one of ${Object.keys(MIXES).join(', ')}`,
        'e.g. --mix medium',
      );
    return [...mix];
  }
  const names = parseList('--models', f.models!);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw userError('BAD_ARGUMENT', `--models names ${quoteForMessage(dup)} twice`, 'list each model once');
  return names;
}

function loadSpec(f: SimulateFlags): LoadSpec {
  const given = [f.qps !== undefined, f.load !== undefined, f.findMax === true].filter(Boolean).length;
  if (given > 1) throw userError('BAD_ARGUMENT', 'give one of --qps, --load and --find-max', 'e.g. --load 0.5,0.75 or --find-max');
  if (f.qps !== undefined) return { kind: 'qps', values: parseNumberList('--qps', f.qps) };
  if (f.findMax) return { kind: 'find-max' };
  return { kind: 'load', values: parseNumberList('--load', f.load ?? '0.5', 1) };
}

/** `--use-cores LIST` (every model) or `--use-cores NAME=LIST` (repeatable; '+'-separated list). */
function useCoresFor(values: readonly string[] | undefined, models: readonly string[]): Map<string, number[]> {
  const list = (t: string) => t.split(/[+,]/).map((x) => parseCount('--use-cores', x, 1, 4096));
  const out = new Map<string, number[]>();
  for (const v of values ?? []) {
    if (v.includes('=')) for (const [k, c] of parsePairs('--use-cores', [v], list)) out.set(k, c);
    else for (const m of models) out.set(m, list(v));
  }
  return out;
}

const fmt = (x: number, d = 1) => (Number.isFinite(x) ? `${(x * 100).toFixed(d)}%` : '—');

function scalingReport(setup: Setup, profiles: ReturnType<typeof loadProfiles>, json: boolean): void {
  const checks = [...profiles.values()].map((lp) => checkPrediction(lp.profile, setup.scaling)).filter((c) => c !== null);
  const artifact = [...profiles.values()]
    .filter((lp) => lp.profile.machine.source === 'artifact')
    .map((lp) => {
      const rows = lp.profile.steps.map((s) =>
        Object.entries(s.versions[0]!.latencyUs)
          .map(([c, l]) => ({ cores: Number(c), us: l['0']!.us }))
          .filter((p) => p.cores <= 56),
      );
      return { profile: lp.file, fit: fitConstants(rows), extrapolation: checkPrediction(lp.profile, setup.scaling, 2) };
    });
  if (json) {
    printJson({ constants: setup.scaling, checks, artifact });
    return;
  }
  printLine(`scaling model (modelled figures): ${setup.scaling.provenance}`);
  for (const a of artifact) {
    printLine(
      `fit on ${a.profile} (8–56 cores): fork/join ${a.fit.forkJoinUs} µs per doubling, serial fraction ${a.fit.serialFraction.toFixed(4)}; ` +
        `${a.fit.layers} layers, ${a.fit.points} points, |error| median ${fmt(a.fit.medianRelError)}, p90 ${fmt(a.fit.p90RelError)}`,
    );
    const e = a.extrapolation;
    if (e)
      printLine(
        `  each layer fitted on ${e.fromCores.join(',')} cores, predicting ${e.toCores.join(',')}: |error| median ${fmt(e.medianAbsError)}, ` +
          `p90 ${fmt(e.p90AbsError)}, bias ${fmt(e.medianError)}; whole model at ${e.toCores[0]} cores ` +
          `${e.wholeModelError === null ? '—' : fmt(e.wholeModelError)}`,
      );
  }
  for (const c of checks) {
    if (artifact.some((a) => a.profile.endsWith('.csv') && profiles.get(c.profile)?.profile.machine.source === 'artifact')) continue;
    printLine(
      `${c.profile}: predicting ${c.toCores.join(',')} cores from ${c.fromCores.join(',')} (${c.points} step-versions): |error| median ` +
        `${fmt(c.medianAbsError)}, p90 ${fmt(c.p90AbsError)}, bias ${fmt(c.medianError)}; ` +
        `whole model ${c.wholeModelError === null ? '—' : fmt(c.wholeModelError)} | perfect scaling would give |error| median ` +
        `${fmt(c.naiveMedianAbsError)}, whole model ${c.naiveWholeModelError === null ? '—' : fmt(c.naiveWholeModelError)}`,
    );
  }
}

async function simulateAction(f: SimulateFlags): Promise<void> {
  const json = f.json === true;
  if (f.profiles === undefined)
    throw userError(
      'BAD_ARGUMENT',
      'veltair simulate needs --profiles (profile files, bundle directories or directories of *.profile.json)',
      'e.g. --profiles models/ or --profiles resnet50.profile.json',
    );
  const cores = parseCount('--cores', f.cores ?? '64', 1, 4096);
  const policies = parsePolicyList(f.policy ?? 'fcfs,veltair');
  const loads = loadSpec(f);
  const seed = parseCount('--seed', f.seed ?? '1', 0, 2 ** 32 - 1);
  const durationMs = parsePositiveNumber('--duration', f.duration ?? '10', 86_400) * 1000;
  const warmupMs = parseNonNegative('--warmup', f.warmup ?? '1') * 1000;
  if (warmupMs >= durationMs)
    throw userError(
      'BAD_ARGUMENT',
      `--warmup ${f.warmup} is not shorter than --duration ${f.duration ?? '10'}`,
      'e.g. --duration 10 --warmup 1',
    );
  const maxEvents = parseCount('--max-events', f.maxEvents ?? '50000000', 1, 1e12);
  const maxSimMs = f.maxSimTime === undefined ? durationMs * 10 + 10_000 : parsePositiveNumber('--max-sim-time', f.maxSimTime) * 1000;
  const onConflict =
    f.onConflict === undefined
      ? undefined
      : f.onConflict === 'wait' || f.onConflict === 'shrink'
        ? f.onConflict
        : (() => {
            throw userError(
              'BAD_ARGUMENT',
              `--on-conflict ${quoteForMessage(f.onConflict!)} is not wait or shrink`,
              'e.g. --on-conflict wait',
            );
          })();
  const plotDir = f.plot === undefined ? undefined : resolve(f.plot);
  const models = modelList(f);
  const profiles = loadProfiles(parseList('--profiles', f.profiles));
  const setupOptions = {
    profiles,
    models,
    weights: equalWeights(models.length),
    cores,
    qos: parsePairs('--qos', f.qos, (t) => parsePositiveNumber('--qos', t)),
    scale: parsePairs('--scale', f.scale, (t) => parsePositiveNumber('--scale', t)),
    repeat: parsePairs('--repeat', f.repeat, (t) => parseCount('--repeat', t, 1, 1000)),
    useCores: useCoresFor(f.useCores, models),
    ...(f.memoryGbps !== undefined ? { memoryGBps: parsePositiveNumber('--memory-gbps', f.memoryGbps) } : {}),
    ...(f.l3Mib !== undefined ? { l3MiB: parsePositiveNumber('--l3-mib', f.l3Mib) } : {}),
    ...(f.forkJoinUs !== undefined ? { forkJoinUs: parseNonNegative('--fork-join-us', f.forkJoinUs) } : {}),
    ...(f.serialFraction !== undefined ? { serialFraction: parseNonNegative('--serial-fraction', f.serialFraction) } : {}),
    ...(f.claimUs !== undefined ? { claimUs: parseNonNegative('--claim-us', f.claimUs) } : {}),
  };
  if (f.scalingReport) {
    const used = models.map((m) => profiles.get(m)).filter((x) => x !== undefined);
    scalingReport(
      {
        plans: [],
        summaries: [],
        interference: { levelFor: () => 0, calibrated: false, points: [], description: '' },
        scaling: scalingConstants(setupOptions, used),
      },
      profiles,
      json,
    );
    return;
  }
  const setup = setupModels(setupOptions);
  const calibrated = f.calibration === undefined ? undefined : simulateCharges(f.calibration, models, parseList('--profiles', f.profiles));
  if (plotDir) {
    try {
      mkdirSync(plotDir, { recursive: true });
    } catch (e) {
      throw userError(
        'FILE_UNWRITABLE',
        `--plot ${plotDir} cannot be created (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
        'choose a writable directory',
      );
    }
  }
  const progress = !json && process.stderr.isTTY ? (m: string) => process.stderr.write(`\r${m.padEnd(70)}`) : undefined;
  const result = runExperiment({
    models: setup.plans.map((plan, i) => ({ plan, weight: setupOptions.weights[i]! })),
    cores,
    policies,
    seed,
    durationMs,
    warmupMs,
    maxSimMs,
    maxEvents,
    interference: setup.interference,
    loads,
    timeDecisions: !json || f.timing === true,
    ...(onConflict ? { onConflict } : {}),
    ...(progress ? { onProgress: progress } : {}),
    ...(calibrated ? { charges: calibrated.charges } : {}),
    chain: f.chain !== false,
  });
  if (progress) process.stderr.write('\r'.padEnd(72) + '\r');
  const label =
    `simulated: ${cores} cores; profiles ${[...new Set(setup.summaries.map((s) => s.machine))].join(' | ')}; figures beyond the profiled core ` +
    `counts modelled by the scaling model${calibrated ? `; ${calibrated.label}` : ''}; ${dispatchLabel(f.chain !== false)}`;
  const plots = plotDir ? await writeSchedulePlots(plotDir, result, setup, label) : [];
  if (json) {
    printJson({
      simulated: true,
      label,
      dispatch: f.chain !== false ? 'chained' : 'block-by-block',
      cores,
      seed,
      durationS: durationMs / 1000,
      warmupS: warmupMs / 1000,
      policies: policies.map((p) => p.name),
      models: setup.summaries,
      interference: setup.interference.description,
      scaling: setup.scaling.provenance,
      capacityQps: result.capacityQps,
      points: result.points,
      maxQps: result.maxQps,
      reference: result.reference,
      ...(f.timing ? { timing: result.timing } : {}),
      plots,
    });
    return;
  }
  printText(result, setup, label, cores, seed, durationMs, warmupMs, plots);
}

function printText(
  r: ExperimentResult,
  setup: Setup,
  label: string,
  cores: number,
  seed: number,
  durationMs: number,
  warmupMs: number,
  plots: readonly string[],
): void {
  printLine(label);
  printLine(
    `seed ${seed}; ${durationMs / 1000} s of arrivals (first ${warmupMs / 1000} s not counted); every policy sees the same arrivals`,
  );
  printLine('models:');
  for (const l of modelLines(setup.summaries)) printLine(l);
  printLine(`interference (modelled mapping, measured effects): ${setup.interference.description}`);
  printLine(`scaling model (modelled figures): ${setup.scaling.provenance}`);
  printLine(`capacity of the mix on ${cores} cores: ${r.capacityQps.toFixed(1)} QPS (every layer at its most efficient core count)`);
  if (r.points.length > 0) {
    printLine();
    printLine(pointsTable(r.points));
  }
  if (r.maxQps) {
    printLine();
    for (const m of r.maxQps)
      printLine(`${m.policy}: max ${m.maxQps.toFixed(1)} QPS (load ${m.load.toFixed(3)}) after ${m.probes.length} probes`);
    if (r.reference) {
      printLine();
      printLine(pointsTable(r.reference.points));
    }
  }
  printLine();
  for (const l of derivedLines(r)) printLine(l);
  for (const l of timingLines(r)) note(l);
  for (const p of plots) note(`wrote ${p}`);
}

export function registerSimulateCommand(program: Command): void {
  program
    .command('simulate')
    .description(
      'discrete-event simulation of multi-tenant serving on N cores under each scheduling policy (simulated; seeded, deterministic)',
    )
    .option(
      '--profiles <list>',
      'profile files (.json), the VELTAIR artifact CSV (.csv), bundle directories (their profile beside them) or directories of *.profile.json',
    )
    .option('--mix <name>', `a workload mix: ${Object.keys(MIXES).join(', ')}`)
    .option('--models <list>', 'models to co-locate (names as in their profiles)')
    .option('--cores <n>', 'cores of the simulated machine (default 64)')
    .option(
      '--policy <list>',
      'fcfs, prema, layerwise, static:K (static:A-B for a range), veltair, veltair-partition, veltair-sched, veltair-compile (default fcfs,veltair)',
    )
    .option('--qps <list>', 'total offered queries per second, split evenly over the models')
    .option('--load <list>', "offered load as fractions of the mix's capacity (default 0.5)")
    .option('--find-max', "binary-search each policy's highest QPS with ≥ 99% of every model's requests within QoS")
    .option('--seed <n>', 'seed of the arrival processes (default 1)')
    .option('--duration <s>', 'simulated seconds of arrivals (default 10)')
    .option('--warmup <s>', 'first simulated seconds not counted (default 1)')
    .option('--max-events <n>', 'stop a run after this many events (default 50000000)')
    .option('--max-sim-time <s>', 'stop a run at this simulated time (default 10 × duration + 10 s)')
    .option('--qos <name=ms>', "QoS bound of a model (repeatable; default: MLPerf's, see README)", collect)
    .option('--scale <name=f>', "multiply a model's latencies by f (modelled; e.g. a larger input) (repeatable)", collect)
    .option(
      '--repeat <name=k>',
      "run a model's profiled steps k times in a row (identical layers, e.g. more encoder layers) (repeatable)",
      collect,
    )
    .option(
      '--use-cores <list>',
      "use only the profiles' figures at these core counts, the others held out (LIST for every model, or NAME=A+B; repeatable)",
      collect,
    )
    .option('--memory-gbps <g>', 'socket memory bandwidth of the simulated machine, GB/s (default 102.4, an assumption)')
    .option('--l3-mib <m>', 'last-level cache of the simulated machine, MiB, for interference (default 256, an assumption)')
    .option('--fork-join-us <u>', 'scaling model: fork/join cost per doubling of threads, µs (default fitted to the artifact)')
    .option('--serial-fraction <f>', 'scaling model: serial fraction for steps profiled at one core count')
    .option('--claim-us <u>', "block claim/release cost at 1 core, µs (default: the profile's measurement)")
    .option(
      '--calibration <file>',
      'charge live serving costs per request and per block from this calibration (written by veltair calibrate-serving)',
    )
    .option(
      '--on-conflict <rule>',
      'a block finding too few free cores: wait or shrink (run on what is free), for every policy ' + "(default: each policy's own rule)",
    )
    .option('--plot <dir>', 'write the figures (SVG) and their data (JSON) into this directory')
    .option('--no-chain', 'simulate block-by-block dispatch (every block a hand-off) instead of the chained dispatch the server uses')
    .option('--timing', 'with --json: add the measured decision time (stdout then differs between runs)')
    .option('--scaling-report', 'print how the scaling model fits and predicts the given profiles, and exit')
    .option('--json', 'machine-readable result on stdout, nothing else there')
    .action(simulateAction);
}
