/**
 * Live serving: the highest total QPS at which every model of a mix keeps ≥ 99% of its requests
 * within QoS with 99% confidence, for each arm (serve-arms.ts: veltair's policies and three ONNX Runtime deployments —
 * `ort` FCFS on the whole machine, `ort-pinned` one server per model on its own cores, `ort-instances`
 * 1-thread instances per model) — each arm fresh server processes on the same cores (taskset), with
 * the same glibc malloc tunables, the same QoS, the same seeded open-loop load (veltair load's
 * generator in this process, binary tensors), arms interleaved over rounds (order reversed every
 * other round). Beside each policy: what `veltair simulate` predicts for the same profiles, cores
 * and QoS (with `--calibration`, charging what live pays per request and per block).
 *
 *   npm run build && node dist/src/bench/serve-bench.js --mix het1|NAME=BUNDLE,BUNDLE…[@k] [--mix …]
 *     [--bundle-dir DIR] [--arms ort,ort-pinned,ort-instances,fcfs,prema,layerwise,veltair,veltair-partition] [--cores 0,1]
 *     [--k K (alias --qos-multiple)] [--duration 4] [--probe-limit 120] [--verify] [--rounds 3] [--tolerance 1.05] [--max-runs 16]
 *     [--pinned-probes 3] [--probe-duration 2] [--seed 1] [--calibration FILE] [--timeline] [--sweep FROM:TO:STEPS [--sweep-duration 4]]
 *     [--transport http|in-process] [--attribute 0.1,0.3 [--attribute-duration 60]] [--json-out FILE]
 *
 * `--transport in-process` measures every arm but ort-pinned a second time, right after its HTTP
 * search in the same round, through serve-in-process.ts (its backend called in this process, no
 * HTTP), printed as a second table beside the HTTP one, never instead of it; JSON `inProcess`.
 *
 * Each rate is judged by the early-stopping rule (load/early-stopping.ts, docs/load.md): a probe runs
 * at least --duration (--probe-duration for ort-pinned's split probes) and at most --probe-limit
 * seconds, stopping once the rule decides; undecided rates are reported, never counted as pass or
 * fail; every probe's noise is on record, and a noisy one is run again (load/find-max.ts).
 * QoS per model: serve-mixes.ts's rule (k × its latency alone on all cores through the server,
 * one k per mix), stated in the output. `--arms veltair,veltair` runs one kind twice, an A/A pair:
 * each table's header then states the method's resolution (serve-resolution.ts). `--timeline` adds,
 * per mix, the server-side timeline of a light request sent just behind a heavy one (serve-timeline.ts). `--sweep`
 * runs, per arm, `veltair load --qps-sweep`'s sweep on fresh servers and writes it beside the JSON
 * as `<json-out>-<mix>-sweep.json`, in that command's --json format (`veltair load --plot-from` draws it).
 * `--attribute F,…` then runs, per veltair policy, a traced load at each fraction F of its median max QPS on a
 * fresh server and attributes every late request (load/late-attribution.ts); JSON `attribution`.
 */
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { repoRoot } from '../toolchain/paths.js';
import { availableCores } from '../toolchain/cpu.js';
import { median } from '../stats.js';
import { requestFor, type LoadModel, type Metadata } from '../load/generator.js';
import type { ProbeResult } from '../load/probe.js';
import { boundTooShortText, findMaxQps, findMaxVia, type FindMaxResult } from '../load/find-max.js';
import { answerOk, post } from '../load/post.js';
import { badArgument } from '../terminal/args.js';
import { parseSweep, runSweep, sweepPoints, sweepRates, type SweepPoint, type SweepSpec } from '../load/sweep.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { modelName, parseMix, qosRule, qosRuleLine, type Mix } from './serve-mixes.js';
import { parseArms, startArm, type Arm, type ArmContext } from './serve-arms.js';
import { candidateSplits, splitText, type Split } from './pinned-split.js';
import { mixTable, type ArmResult } from './serve-table.js';
import { probeNoise, type ProbeNoise } from './serve-noise.js';
import { aaChecks } from './serve-resolution.js';
import { hasInProcessForm, startInProcessArm, TRANSPORTS, type Transport } from './serve-in-process.js';
import { traceHeavyThenLight, timelineTable, type Timeline } from './serve-timeline.js';
import { runTraced, type AttributionResult } from '../load/late-attribution.js';
import { attributionTable } from '../load/late-table.js';

interface Args {
  mixes: Mix[];
  arms: Arm[];
  cores: number[];
  durationS: number;
  rounds: number;
  tolerance: number;
  pinnedProbes: number;
  maxRuns: number;
  probeDurationS: number;
  probeLimitS: number;
  verify: boolean;
  /** HTTP always; `in-process` adds the in-process transport's measurement beside it. */
  transports: Transport[];
  seed: number;
  calibration?: string;
  timeline: boolean;
  sweep?: SweepSpec;
  sweepDurationS: number;
  /** Fractions of each veltair arm's median max QPS to run a traced, attributed load at. */
  attribute: number[];
  attributeDurationS: number;
  jsonOut?: string;
}

function parseArgs(argv: readonly string[]): Args {
  let bundleDir = '.',
    k: number | undefined;
  const mixTexts: string[] = [];
  const a: Args = {
    mixes: [],
    arms: parseArms('ort,ort-pinned,ort-instances,fcfs,prema,layerwise,veltair,veltair-partition'),
    cores: availableCores(),
    durationS: 4,
    rounds: 3,
    tolerance: 1.05,
    pinnedProbes: 3,
    maxRuns: 16,
    sweepDurationS: 4,
    attribute: [],
    attributeDurationS: 60,
    probeDurationS: 2,
    probeLimitS: 120,
    verify: false,
    transports: ['http'],
    seed: 1,
    timeline: false,
  };
  const num = (flag: string, v: string, min: number) => {
    const x = Number(v);
    if (!(x >= min)) throw badArgument(flag, v, `is not a number ≥ ${min}`, `e.g. ${flag} ${Math.max(min, 1)}`);
    return x;
  };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1] ?? '';
    switch (argv[i]) {
      case '--mix':
        mixTexts.push(v);
        i++;
        break;
      case '--bundle-dir':
        bundleDir = v;
        i++;
        break;
      case '--k':
      case '--qos-multiple':
        k = num(argv[i]!, v, 1);
        i++;
        break;
      case '--arms':
        a.arms = parseArms(v);
        i++;
        break;
      case '--cores':
        a.cores = v.split(',').map(Number);
        i++;
        break;
      case '--duration':
        a.durationS = num('--duration', v, 0.1);
        i++;
        break;
      case '--rounds':
        a.rounds = num('--rounds', v, 1);
        i++;
        break;
      case '--tolerance':
        a.tolerance = num('--tolerance', v, 1.001);
        i++;
        break;
      case '--max-runs':
        a.maxRuns = num('--max-runs', v, 2);
        i++;
        break;
      case '--pinned-probes':
        a.pinnedProbes = num('--pinned-probes', v, 1);
        i++;
        break;
      case '--probe-duration':
        a.probeDurationS = num('--probe-duration', v, 0.1);
        i++;
        break;
      case '--probe-limit':
        a.probeLimitS = num('--probe-limit', v, 1);
        i++;
        break;
      case '--verify':
        a.verify = true;
        break;
      case '--transport':
        a.transports = parseTransports(v);
        i++;
        break;
      case '--seed':
        a.seed = num('--seed', v, 0);
        i++;
        break;
      case '--calibration':
        a.calibration = v;
        i++;
        break;
      case '--timeline':
        a.timeline = true;
        break;
      case '--sweep':
        a.sweep = parseSweep(v);
        i++;
        break;
      case '--sweep-duration':
        a.sweepDurationS = num('--sweep-duration', v, 0.1);
        i++;
        break;
      case '--attribute':
        a.attribute = (v ?? '').split(',').map((x) => num('--attribute', x, 0.01));
        i++;
        break;
      case '--attribute-duration':
        a.attributeDurationS = num('--attribute-duration', v, 1);
        i++;
        break;
      case '--json-out':
        a.jsonOut = v;
        i++;
        break;
      default:
        throw new Error(`unknown argument ${argv[i]}`);
    }
  }
  if (mixTexts.length === 0) throw new Error('give at least one --mix PRESET or --mix NAME=BUNDLE,BUNDLE');
  if (a.arms.length === 0) throw new Error('give at least one arm: --arms ort,fcfs,…');
  a.mixes = mixTexts.map((t) => parseMix(t, bundleDir, k));
  if (a.probeLimitS < Math.max(a.durationS, a.probeDurationS)) {
    throw badArgument(
      '--probe-limit',
      String(a.probeLimitS),
      `is shorter than a probe's minimum time (--duration ${a.durationS} s)`,
      'give the bound room: e.g. --probe-limit 120',
    );
  }
  return a;
}

/** `--transport`: a list of http and in-process; HTTP is always measured, in-process only beside it. */
function parseTransports(text: string): Transport[] {
  const asked = text.split(',').map((t) => t.trim());
  const bad = asked.find((t) => !(TRANSPORTS as readonly string[]).includes(t));
  if (bad !== undefined || asked.length === 0) {
    throw badArgument(
      '--transport',
      text,
      `names a transport other than ${TRANSPORTS.join(' or ')}`,
      'e.g. --transport in-process (HTTP runs too)',
    );
  }
  return asked.includes('in-process') ? ['http', 'in-process'] : ['http'];
}

async function modelsOf(
  urls: ReadonlyMap<string, string>,
  names: readonly string[],
  qos: Readonly<Record<string, number>>,
  seed: number,
): Promise<LoadModel[]> {
  const out: LoadModel[] = [];
  for (const [i, name] of names.entries()) {
    const base = new URL(urls.get(name)!);
    const meta = (await (await fetch(new URL(`/v2/models/${name}`, base))).json()) as Metadata;
    out.push({ name, weight: 1, qosMs: qos[name] ?? meta.parameters?.qos_ms ?? 1000, base, ...requestFor(meta, seed + i * 101, false) });
  }
  return out;
}

async function infer(m: LoadModel): Promise<number> {
  const t0 = performance.now();
  const r = await post(new URL(`/v2/models/${m.name}/infer`, m.base), m.headers, m.body);
  if (r.status !== 200) throw new Error(`${m.name}: HTTP ${r.status}`);
  return performance.now() - t0;
}

/** Median latency of 20 sequential requests per model (after 3 warm-ups), HTTP included. */
async function quietLatencies(models: readonly LoadModel[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of models) {
    for (let i = 0; i < 3; i++) await infer(m);
    const samples: number[] = [];
    for (let i = 0; i < 20; i++) samples.push(await infer(m));
    out.set(m.name, median(samples));
  }
  return out;
}

/** Concurrent requests per model in the warm-up (a burst across every model at once). */
const WARM_BURST = 4;

/** Whether an arm's answers pass the load generator's cheap check (status, headers, size); a server that fails it would fail every probe. */
async function checkAnswers(models: readonly LoadModel[]): Promise<void> {
  for (const m of models) {
    const r = await post(new URL(`/v2/models/${m.name}/infer`, m.base), m.headers, m.body);
    const check = { ...(m.answerBytes !== undefined ? { binaryBytes: m.answerBytes } : {}), verify: true };
    if (r.status !== 200 || !answerOk(r.headers, r.body.byteLength, check, r.body)) {
      throw new Error(
        `${m.name}: the answer (HTTP ${r.status}, ${r.body.byteLength} bytes) is not the size its metadata declares ` +
          `(${m.answerBytes ?? 'unknown'} bytes of outputs): the load generator would count every answer as an error`,
      );
    }
  }
}

async function warm(models: readonly LoadModel[]): Promise<void> {
  await checkAnswers(models);
  for (const m of models) for (let i = 0; i < 5; i++) await infer(m);
  // A server makes its extra instances (veltair's arenas, ORT's worker sessions) at its first
  // concurrency; warmed one request at a time, it would make them inside the first probe.
  await Promise.all(models.flatMap((m) => Array.from({ length: WARM_BURST }, () => infer(m))));
}

async function simulated(
  mix: Mix,
  policy: string,
  cores: number,
  qos: Readonly<Record<string, number>>,
  seed: number,
  calibration?: string,
): Promise<number | null> {
  const bin = join(repoRoot(), 'bin', 'veltair');
  const r = await execa(
    process.execPath,
    [
      bin,
      'simulate',
      '--profiles',
      mix.bundles.join(','),
      '--models',
      mix.bundles.map(modelName).join(','),
      '--cores',
      String(cores),
      '--policy',
      policy,
      '--find-max',
      '--seed',
      String(seed),
      '--duration',
      '20',
      ...Object.entries(qos).flatMap(([n, ms]) => ['--qos', `${n}=${ms.toFixed(3)}`]),
      ...(calibration ? ['--calibration', calibration] : []),
      '--json',
    ],
    { reject: false },
  );
  if (r.exitCode !== 0) return null;
  const out = JSON.parse(r.stdout) as { maxQps?: { policy: string; maxQps: number }[] };
  return out.maxQps?.find((m) => m.policy === policy)?.maxQps ?? null;
}

interface ArmRound {
  readonly maxQps: number;
  readonly undecidedQps: number[];
  readonly boundTooShortBelowQps: number | null;
  readonly noise: ProbeNoise[];
}

/** One arm's max QPS at QoS: fresh servers, warm-up, the find-max search, every probe judged by early stopping. */
async function measureArm(
  kind: string,
  ctx: ArmContext,
  a: Args,
  o: { durationS: number; seed: number; startQps: number; maxRuns?: number },
  log: (s: string) => void = () => undefined,
): Promise<ArmRound> {
  const servers = await startArm(kind, ctx);
  try {
    const models = await modelsOf(servers.urls, ctx.names, ctx.qosMs, a.seed);
    await warm(models);
    const found = await findMaxQps(new URL(servers.urls.get(ctx.names[0]!)!), models, {
      minDurationS: o.durationS,
      maxDurationS: a.probeLimitS,
      verify: a.verify,
      armPids: servers.pids,
      seed: o.seed,
      startQps: o.startQps,
      tolerance: a.tolerance,
      maxRuns: Math.min(o.maxRuns ?? a.maxRuns, a.maxRuns),
      onRun: probeLog(kind, log),
    });
    return armRound(found);
  } finally {
    await servers.stop();
  }
}

const armRound = (found: FindMaxResult): ArmRound => ({
  maxQps: found.maxQps,
  undecidedQps: found.undecidedQps,
  boundTooShortBelowQps: found.boundTooShortBelowQps,
  noise: found.runs.map(probeNoise),
});

const probeLog = (kind: string, log: (s: string) => void) => (r: ProbeResult) =>
  log(
    `    ${kind} ${r.totalQps.toFixed(2)} QPS: ${r.verdict}` +
      `${r.rerunOfNoisy ? ' (rerun: outside work was noisy)' : ''}, ${r.models.map((m) => `${m.name} ${m.late} late of ${m.sent}`).join(', ')}, ` +
      `${r.durationS} s; outside ${r.noise.outsideShare === null ? '-' : `${(r.noise.outsideShare * 100).toFixed(1)}%`} of cores, client ` +
      `${r.noise.clientCpuMsPerRequest ?? '-'} ms CPU/request`,
  );

/** The same search through the in-process transport (serve-in-process.ts): the arm's backend built and called in this process. */
async function measureArmInProcess(
  kind: string,
  ctx: ArmContext,
  a: Args,
  o: { durationS: number; seed: number; startQps: number },
  log: (s: string) => void,
): Promise<ArmRound> {
  const arm = await startInProcessArm(kind, ctx, a.seed);
  try {
    const models: LoadModel[] = ctx.names.map((name) => ({ name, weight: 1, qosMs: ctx.qosMs[name]!, body: '', headers: {} }));
    // The HTTP arms' warm-up, here: each model alone, then a burst across every model at once.
    for (const [i, m] of models.entries()) {
      for (let k = 0; k < 5; k++) if ((await arm.send(i)) !== 200) throw new Error(`${kind} in-process: ${m.name} did not answer`);
    }
    await Promise.all(models.flatMap((_, i) => Array.from({ length: WARM_BURST }, () => arm.send(i))));
    return armRound(
      await findMaxVia(arm.send, models, {
        minDurationS: o.durationS,
        maxDurationS: a.probeLimitS,
        seed: o.seed,
        startQps: o.startQps,
        tolerance: a.tolerance,
        maxRuns: a.maxRuns,
        onRun: probeLog(`${kind} (in-process)`, log),
      }),
    );
  } finally {
    await arm.close();
  }
}

/** ort-pinned's split for this mix: the best of the first few candidates in a short probe each. */
async function chooseSplit(ctx: ArmContext, quiet: ReadonlyMap<string, number>, a: Args, startQps: number, log: (s: string) => void) {
  const candidates = candidateSplits(
    ctx.cores,
    ctx.names.map((n) => quiet.get(n)!),
    a.pinnedProbes,
  );
  const probes: { split: Split; maxQps: number }[] = [];
  for (const split of candidates) {
    const { maxQps } = await measureArm('ort-pinned', { ...ctx, split }, a, {
      durationS: a.probeDurationS,
      seed: a.seed + 77,
      startQps,
      maxRuns: 8,
    });
    probes.push({ split, maxQps });
    log(`  ort-pinned probe ${splitText(split, ctx.names)}: max ${maxQps.toFixed(2)} QPS`);
  }
  const best = probes.reduce((b, p) => (p.maxQps > b.maxQps ? p : b));
  return { split: best.split, probes };
}

/** The heavy-then-light timeline on a fresh server of `policy` (serve-timeline.ts). */
async function traceOn(policy: string, ctx: ArmContext, quiet: ReadonlyMap<string, number>, seed: number): Promise<Timeline> {
  const server = await startArm(policy, ctx);
  try {
    const models = await modelsOf(server.urls, ctx.names, {}, seed);
    await warm(models);
    const heavy = models.reduce((h, m) => (quiet.get(m.name)! > quiet.get(h.name)! ? m : h));
    const light = models.reduce((l, m) => (quiet.get(m.name)! < quiet.get(l.name)! ? m : l));
    return await traceHeavyThenLight(policy, heavy, light);
  } finally {
    await server.stop();
  }
}

function splitLineOf(
  pinned: { split: Split; probes: { split: Split; maxQps: number }[] },
  names: readonly string[],
  probeS: number,
): string {
  return (
    `ort-pinned split (chosen by measurement, ${probeS} s probes): ${splitText(pinned.split, names)}; probed ` +
    pinned.probes.map((p) => `${splitText(p.split, names)} → ${p.maxQps.toFixed(2)} QPS`).join(', ')
  );
}

/** The mix being measured, as far as it got: what a run cut short (SIGTERM) still prints. */
interface Partial {
  mix: string;
  models: string[];
  ruleLine?: string;
  splitLine?: string;
  arms?: ArmResult[];
}

async function benchMix(mix: Mix, a: Args, log: (s: string) => void, partial: Partial) {
  const names = mix.bundles.map(modelName);
  const work = mkdtempSync(join(tmpdir(), `veltair-serve-bench-${mix.name}-`));
  // Latency alone on every core through veltair's fcfs server: the base of every arm's QoS.
  const probeCtx: ArmContext = { names, bundles: mix.bundles, qosMs: {}, cores: a.cores, work };
  const probe = await startArm('fcfs', probeCtx);
  let quiet: Map<string, number>;
  try {
    quiet = await quietLatencies(await modelsOf(probe.urls, names, {}, a.seed));
  } finally {
    await probe.stop();
  }
  const timelines: Timeline[] = [];
  if (a.timeline && names.length > 1)
    for (const policy of ['fcfs', 'veltair']) timelines.push(await traceOn(policy, probeCtx, quiet, a.seed));
  const rule = qosRule(mix.k, quiet);
  const ruleLine = qosRuleLine(rule, quiet, a.cores.length);
  log(`mix ${mix.name}: ${ruleLine}`);
  partial.ruleLine = ruleLine;
  const ctx: ArmContext = { ...probeCtx, qosMs: rule.qosMs };
  const start = names.reduce((s, n) => s + 1000 / quiet.get(n)!, 0) / names.length / 2;
  const pinned = a.arms.some((x) => x.kind === 'ort-pinned') ? await chooseSplit(ctx, quiet, a, start, log) : undefined;
  const results: ArmResult[] = a.arms.map((arm) => ({
    label: arm.label,
    kind: arm.kind,
    maxQps: [],
    undecided: [],
    noise: [],
    simulatedQps: null,
  }));
  partial.arms = results;
  const inProcessArms = a.transports.includes('in-process') ? a.arms.filter((x) => hasInProcessForm(x.kind)) : [];
  const inProcess: ArmResult[] = inProcessArms.map((arm) => ({
    label: arm.label,
    kind: arm.kind,
    maxQps: [],
    undecided: [],
    noise: [],
    simulatedQps: null,
  }));
  if (pinned) partial.splitLine = splitLineOf(pinned, names, a.probeDurationS);
  for (let round = 0; round < a.rounds; round++) {
    const order = round % 2 === 0 ? a.arms : [...a.arms].reverse();
    for (const arm of order) {
      const armCtx = pinned ? { ...ctx, split: pinned.split } : ctx;
      const m = await measureArm(arm.kind, armCtx, a, { durationS: a.durationS, seed: a.seed + round * 1000, startQps: start }, log);
      const r = results.find((x) => x.label === arm.label)!;
      r.maxQps.push(m.maxQps);
      r.undecided.push(m.undecidedQps);
      r.noise.push(m.noise);
      log(
        `  round ${round + 1} ${arm.label}: max ${m.maxQps.toFixed(2)} QPS` +
          `${m.undecidedQps.length > 0 ? ` (undecided at ${m.undecidedQps.map((q) => q.toFixed(2)).join(', ')})` : ''}` +
          `${m.boundTooShortBelowQps !== null ? `; ${boundTooShortText(m.boundTooShortBelowQps)}` : ''}`,
      );
      const ip = inProcess.find((x) => x.label === arm.label);
      if (!ip) continue;
      // Right after the same arm over HTTP, in the same round: the two transports are paired like the arms.
      const n = await measureArmInProcess(arm.kind, ctx, a, { durationS: a.durationS, seed: a.seed + round * 1000, startQps: start }, log);
      ip.maxQps.push(n.maxQps);
      ip.undecided.push(n.undecidedQps);
      ip.noise.push(n.noise);
      log(`  round ${round + 1} ${arm.label} (in-process): max ${n.maxQps.toFixed(2)} QPS`);
    }
  }
  const sweeps: { label: string; points: SweepPoint[] }[] = [];
  if (a.sweep) {
    for (const arm of a.arms) {
      const servers = await startArm(arm.kind, pinned ? { ...ctx, split: pinned.split } : ctx);
      try {
        const models = await modelsOf(servers.urls, names, rule.qosMs, a.seed);
        await warm(models);
        const runs = await runSweep(new URL(servers.urls.get(names[0]!)!), models, a.sweep, a.sweepDurationS, a.seed + 5000);
        sweeps.push({ label: arm.label, points: sweepPoints(runs) });
        log(`  sweep ${arm.label}: worst within-QoS per step ${runs.map((r) => `${(r.satisfaction * 100).toFixed(0)}%`).join(' ')}`);
      } finally {
        await servers.stop();
      }
    }
  }
  const attribution: { arm: string; fraction: number; result: AttributionResult }[] = [];
  for (const r of results) {
    // One traced run per veltair policy (the first of an A/A pair), at each fraction of its median max QPS.
    if (r.kind.startsWith('ort') || r.label !== r.kind || r.maxQps.length === 0) continue;
    for (const fraction of a.attribute) {
      const servers = await startArm(r.kind, ctx);
      try {
        const models = await modelsOf(servers.urls, names, rule.qosMs, a.seed);
        await warm(models);
        const qps = fraction * median(r.maxQps);
        const result = await runTraced(new URL(servers.urls.get(names[0]!)!), models, qps, a.attributeDurationS, a.seed + 7000);
        attribution.push({ arm: r.label, fraction, result });
        const late = result.models.map((m) => `${m.name} ${m.late}/${m.sent} late`).join(', ');
        log(`  attribution ${r.label} at ${(fraction * 100).toFixed(0)}% (${qps.toFixed(2)} QPS): ${late}`);
      } finally {
        await servers.stop();
      }
    }
  }
  for (const r of results) {
    if (r.kind.startsWith('ort') || r.label !== r.kind) continue;
    r.simulatedQps = await simulated(mix, r.kind, a.cores.length, rule.qosMs, a.seed, a.calibration);
  }
  const splitLine = pinned ? splitLineOf(pinned, names, a.probeDurationS) : undefined;
  return {
    mix: mix.name,
    models: names,
    k: mix.k,
    heterogeneous: mix.heterogeneous,
    quietMs: Object.fromEntries(quiet),
    qosMs: rule.qosMs,
    hardSharing: rule.hardSharing,
    ruleLine,
    ...(splitLine ? { splitLine } : {}),
    pinnedProbes: pinned?.probes.map((p) => ({ split: p.split, maxQps: p.maxQps })) ?? [],
    timelines,
    // `arm` beside `label`: readers of the JSON name an arm by either.
    arms: results.map((r) => ({ arm: r.label, ...r })),
    resolution: aaChecks(results),
    ...(inProcess.length > 0
      ? { inProcess: { arms: inProcess.map((r) => ({ arm: r.label, ...r })), resolution: aaChecks(inProcess) } }
      : {}),
    ...(a.sweep ? { sweep: { spec: a.sweep, durationS: a.sweepDurationS, arms: sweeps } } : {}),
    attribution,
  };
}

function writeJson(path: string, value: unknown): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(value, null, 2));
  renameSync(tmp, path);
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const machine = await machineInfo();
  const command = `node dist/src/bench/serve-bench.js ${process.argv.slice(2).join(' ')}`;
  console.log(
    `### Live serving (${machineLine(machine)}, ${new Date().toISOString().slice(0, 10)})\n\nCommand: \`${command}\` ` +
      `(${a.rounds} rounds, arms interleaved, order reversed every other round; each probe ≥ ${a.durationS} s and ≤ ${a.probeLimitS} s, ` +
      `stopped when the early-stopping rule decides; search tolerance ${a.tolerance})\n`,
  );
  const out: Awaited<ReturnType<typeof benchMix>>[] = [];
  const json = () => ({ machine, args: { ...a, arms: a.arms.map((x) => x.label) }, results: out });
  let partial: Partial | undefined;
  // Cut short (a budget's timeout): print the mix in progress with the rounds it finished, then stop.
  process.once('SIGTERM', () => {
    const rounds = partial?.arms ? Math.min(...partial.arms.map((x) => x.maxQps.length)) : 0;
    if (partial?.ruleLine && partial.arms && rounds === 0) {
      console.log(
        `Mix ${partial.mix}: cut short before every arm finished one round (` +
          `${partial.arms.map((x) => `${x.label} ${x.maxQps.map((q) => q.toFixed(2)).join('/') || '-'}`).join(', ')} QPS)\n`,
      );
    }
    if (partial?.ruleLine && partial.arms && rounds > 0) {
      const arms = partial.arms.map((x) => ({
        ...x,
        maxQps: x.maxQps.slice(0, rounds),
        undecided: x.undecided.slice(0, rounds),
        noise: x.noise.slice(0, rounds),
      }));
      console.log(
        `${mixTable({
          mix: partial.mix,
          models: partial.models,
          cores: a.cores,
          ruleLine: partial.ruleLine,
          ...(partial.splitLine ? { splitLine: partial.splitLine } : {}),
          arms,
        })}\n\n` + `(cut short: ${rounds} of ${a.rounds} rounds complete for every arm; no simulator column)\n`,
      );
      if (a.jsonOut) writeJson(a.jsonOut, { ...json(), cut: { mix: partial.mix, arms: partial.arms } });
    }
    process.exit(124);
  });
  for (const mix of a.mixes) {
    partial = { mix: mix.name, models: mix.bundles.map(modelName) };
    const r = await benchMix(mix, a, (s) => process.stderr.write(`${s}\n`), partial);
    partial = undefined;
    out.push(r);
    console.log(
      mixTable({
        mix: r.mix,
        models: r.models,
        cores: a.cores,
        ruleLine: r.ruleLine,
        ...(r.splitLine ? { splitLine: r.splitLine } : {}),
        arms: r.arms,
      }),
      '\n',
    );
    if (r.inProcess) {
      console.log(
        mixTable({
          mix: `${r.mix}, in-process transport (beside HTTP, not instead of it)`,
          models: r.models,
          cores: a.cores,
          ruleLine: r.ruleLine,
          arms: r.inProcess.arms,
        }),
        '\n',
      );
    }
    for (const t of r.timelines) console.log(timelineTable(t), '\n');
    for (const x of r.attribution)
      console.log(
        `late requests, ${r.mix}, ${x.arm} at ${(x.fraction * 100).toFixed(0)}% of its max QPS:\n${attributionTable(x.result)}\n`,
      );
    if (a.jsonOut) writeJson(a.jsonOut, json());
    if (a.jsonOut && r.sweep) {
      // The format of `veltair load --qps-sweep --json`: `veltair load --plot-from FILE --plot PREFIX` draws it.
      const file = a.jsonOut.replace(/\.json$/, '') + `-${r.mix}-sweep.json`;
      writeJson(file, {
        mix: r.mix,
        sweep: { ...r.sweep.spec, rates: sweepRates(r.sweep.spec) },
        durationS: r.sweep.durationS,
        seed: a.seed + 5000,
        qosMs: r.qosMs,
        arms: r.sweep.arms,
        live: true,
      });
      process.stderr.write(`sweep of mix ${r.mix}: ${file} (draw: veltair load --plot-from ${file} --plot PREFIX)\n`);
    }
  }
}

await main();
