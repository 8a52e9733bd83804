/**
 * `veltair bench` (registered in src/cli/bench.ts, loaded only when the command runs): whole-model
 * latency in one run — veltair adaptive (interference proxy), veltair pinned to the best-quiet
 * versions, and ONNX Runtime on the same model and threads, quiet and under each requested noise
 * level (model-bench.ts). `--calibrate-proxy` first fits the proxy on this machine and stores its
 * coefficients in the bundle (src/compile/proxy-calibrate.ts); a signed bundle needs --sign KEY, which renews its signature.
 * Without ONNX Runtime installed, `--calibrate-proxy` still calibrates and stores the proxy, and the
 * comparison is skipped with a note; without `--calibrate-proxy` the command asks for it.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { readBundle, type LoadedBundle } from '../bundle/read.js';
import { checkRewritable } from '../bundle/rewrite-manifest.js';
import { readSigningKey } from '../bundle/sign.js';
import type { ManifestInterferenceProxy } from '../bundle/manifest.js';
import { userError, quoteForMessage } from '../errors.js';
import { openLevelBank, type LevelBank } from '../interference/bank.js';
import { benchModel, type BenchReport } from './model.js';
import { calibrateProxy, checkCalibratable, storeProxy } from '../compile/proxy-calibrate.js';
import { runtimeCores } from '../interference/cores.js';
import { missingOrt, ortInstalled } from '../ort/available.js';
import { availableCores } from '../toolchain/cpu.js';
import { parsePositiveInt } from '../terminal/args.js';
import { formatTable, note, printJson, printLine } from '../terminal/output.js';

export interface BenchFlags {
  model?: string;
  threads?: string;
  noise?: string;
  rounds?: string;
  runs?: string;
  calibrateProxy?: boolean;
  sign?: string;
  json?: boolean;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** --model, else the manifest's model basename beside the bundle or in the working directory; checked by sha256. */
export async function resolveBenchModel(bundle: LoadedBundle, flag: string | undefined): Promise<string> {
  const recorded = bundle.manifest.model.path;
  let path: string | undefined;
  if (flag !== undefined) {
    path = resolve(flag);
    if (!existsSync(path) || !statSync(path).isFile()) {
      throw userError('BAD_ARGUMENT', `--model ${quoteForMessage(flag)} is not a file`, 'pass the .onnx file the bundle was compiled from');
    }
  } else {
    const candidates = recorded ? [join(dirname(bundle.paths.dir), recorded), resolve(recorded)] : [];
    path = candidates.find((c) => existsSync(c) && statSync(c).isFile());
    if (path === undefined) {
      throw userError(
        'BAD_ARGUMENT',
        `the bundle was compiled from ${quoteForMessage(recorded)}, ` +
          'which is not beside the bundle nor in the working directory, and no --model was given',
        'pass the model for ONNX Runtime with --model MODEL.onnx',
      );
    }
  }
  if ((await sha256Of(path)) !== bundle.manifest.model.sha256) {
    throw userError(
      'BAD_ARGUMENT',
      `${path} is not the model ${bundle.paths.dir} was compiled from (its sha256 differs)`,
      'pass the exact .onnx file given to veltair compile, so both sides run the same model',
    );
  }
  return path;
}

function parseNoise(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.some((p) => !/^[0-4]$/.test(p))) {
    throw userError(
      'BAD_ARGUMENT',
      `--noise ${JSON.stringify(text)} must be interference levels 0 to 4 (comma-separated)`,
      'e.g. --noise 4, or --noise 3,4; 0 measures quiet only',
    );
  }
  return [...new Set(parts.map(Number))].filter((l) => l > 0).sort((a, b) => a - b);
}

/** Default threads: what the proxy was calibrated with, else the largest tuned count that leaves a core for noise. */
function defaultThreads(bundle: LoadedBundle, cores: number): number {
  if (bundle.manifest.interferenceProxy) return bundle.manifest.interferenceProxy.threads;
  const fitting = bundle.manifest.options.threads.filter((t) => t < cores);
  return fitting.length > 0 ? Math.max(...fitting) : Math.min(cores, Math.max(...bundle.manifest.options.threads));
}

const f2 = (x: number) => x.toFixed(2);
/** Latencies span microseconds (tiny models) to seconds: four significant digits. */
const fms = (x: number) => (x >= 1000 ? x.toFixed(0) : x.toPrecision(4));
const f3 = (x: number) => x.toFixed(3);
/** A median of timings, or "none" when nothing was timed (never 0.00 µs for an empty sample). */
export const fus = (x: number | null) => (x === null ? 'none' : `${x.toFixed(2)} µs`);

/** Held-out figures first (what to expect on unseen samples); in-sample beside them. */
export function fitText(m: ManifestInterferenceProxy['models']['system']): string {
  const h = m.heldOut;
  const inSample = `in-sample R² ${f3(m.r2)}, ${(m.accuracy * 100).toFixed(0)}%`;
  return h
    ? `held out (${h.folds}-fold by sweep pass, ${h.samples} samples) R² ${f3(h.r2)}, RMS ${f3(h.rmsError)} levels, ` +
        `${(h.accuracy * 100).toFixed(0)}% rounded to the true level; ${inSample}`
    : `no held-out estimate (one sweep pass); ${inSample}`;
}

function calibrationText(calibration: ManifestInterferenceProxy): string {
  const n = Object.values(calibration.perLevel).reduce((s, l) => s + l.samples, 0);
  const levels = calibration.levels.join(',');
  const lines = (['system', 'tenant'] as const).map(
    (k) =>
      `proxy (${k === 'system' ? 'system' : 'tenant-aware'} model) fitted on ${n} samples at levels ${levels}: ${fitText(calibration.models[k])}`,
  );
  lines.push(
    formatTable(
      [
        ['level', 'samples', 'latency ratio', 'other cores busy', 'co-runner GB/s', 'predicted'],
        ...Object.entries(calibration.perLevel).map(([l, s]) => [
          l,
          String(s.samples),
          f3(s.latencyRatio),
          f3(s.otherCoresBusy),
          f2(s.coRunnerMemGBps),
          f2(s.predictedLevel),
        ]),
      ],
      new Set([1, 2, 3, 4, 5]),
    ),
  );
  return lines.join('\n');
}

function reportText(r: BenchReport, calibration: ManifestInterferenceProxy | undefined): string {
  const lines: string[] = [];
  if (calibration) lines.push(calibrationText(calibration), '');
  const fmtPicks = (p: Record<string, number>) =>
    Object.entries(p)
      .map(([l, n]) => `${l}:${n}`)
      .join(' ');
  lines.push(
    formatTable(
      [
        ['noise', 'veltair ms', 'fixed ms', 'ORT ms', 'veltair/ORT', 'adaptive/fixed', 'fixed/ORT', 'predicted levels'],
        ...r.results.map((c) => [
          c.noise === 0 ? 'quiet' : `level ${c.noise}`,
          fms(c.veltairMs),
          fms(c.veltairFixedMs),
          fms(c.ortMs),
          f3(c.ratioVsOrt),
          f3(c.adaptiveVsFixed),
          f3(c.fixedVsOrt),
          fmtPicks(c.predictedLevels),
        ]),
      ],
      new Set([1, 2, 3, 4, 5, 6]),
    ),
  );
  lines.push(
    '',
    `threads ${r.threads}, ${r.rounds} rounds × ${r.runsPerTurn} runs per arm, arms interleaved; ratios are medians of per-round paired ratios`,
  );
  lines.push(`ONNX Runtime ${r.ortVersion}${r.ortPinned ? ' (pinned child)' : ' (child NOT pinned: taskset missing)'}`);
  if (!r.proxy.calibrated)
    lines.push('proxy: the bundle has no fitted coefficients, so adaptive stays at level 0 (run with --calibrate-proxy)');
  if (r.decisionCost) {
    const d = r.decisionCost;
    lines.push(
      `proxy: ${fus(d.decisionMedianUs)} per decision before a run (median of ${d.decisions}, p90 ${fus(d.decisionP90Us)}); ` +
        `${fus(d.switchMedianUs)} to switch versions when the level changed (${d.switches} times); after a run ` +
        `${fus(d.observeMedianUs)} to update the latency ratio (${d.observes} times), ${fus(d.refreshMedianUs)} when procfs is re-read too ` +
        `(${d.refreshes} times, at most every ${r.proxy.refreshMs} ms)`,
    );
  }
  return lines.join('\n');
}

export async function benchAction(bundlePath: string, f: BenchFlags): Promise<void> {
  const compare = ortInstalled();
  if (!compare && !f.calibrateProxy) throw missingOrt('veltair bench times veltair against ONNX Runtime');
  let bundle = await readBundle(bundlePath);
  for (const w of bundle.warnings) note(`warning: ${w}`);
  // Flags first: a typo is reported before the model is hashed or anything is started.
  const all = availableCores();
  const threads = f.threads === undefined ? defaultThreads(bundle, all.length) : parsePositiveInt('--threads', f.threads, all.length);
  const cores = runtimeCores(threads, all);
  const profiled = bundle.manifest.options.levels.filter((l) => l > 0);
  const noisy = f.noise === undefined ? (profiled.length > 0 ? [Math.max(...profiled)] : []) : parseNoise(f.noise);
  if (noisy.length > 0 && cores.noiseCores.length === 0) {
    throw userError(
      'BAD_ARGUMENT',
      `--threads ${threads} leaves no core for the noise generator (this process may use ${all.length})`,
      `use fewer threads, or --noise 0 to measure quiet only`,
    );
  }
  const rounds = f.rounds === undefined ? 5 : parsePositiveInt('--rounds', f.rounds, 1000);
  const runs = f.runs === undefined ? 3 : parsePositiveInt('--runs', f.runs, 10_000);
  // Storing the proxy rewrites the manifest: a signed bundle is refused now, before minutes of calibration, unless its key renews the signature.
  const signingKey = f.sign === undefined ? undefined : readSigningKey(f.sign);
  if (f.sign !== undefined && !f.calibrateProxy)
    throw userError(
      'BAD_ARGUMENT',
      '--sign renews the signature after --calibrate-proxy, which was not given',
      'add --calibrate-proxy, or drop --sign',
    );
  if (f.calibrateProxy) checkRewritable(bundle.paths.dir, signingKey);
  const modelPath = compare ? await resolveBenchModel(bundle, f.model) : undefined;
  const say = (m: string) => {
    if (!f.json && process.stderr.isTTY) note(m);
  };

  // Co-runners are profiled and started before the runtime addon loads (see src/compile/proxy-calibrate.ts).
  const calibrationLevels = f.calibrateProxy ? checkCalibratable(bundle.manifest, cores, threads) : [];
  const bankLevels = [...new Set([...(compare ? noisy : []), ...calibrationLevels.filter((l) => l > 0)])];
  let bank: LevelBank | undefined;
  try {
    if (bankLevels.length > 0) {
      say('starting the co-runners');
      bank = await openLevelBank({
        levels: bankLevels,
        plan: { allCores: cores.allCores, noisyKernelMaxThreads: threads, noiseCores: cores.noiseCores },
      });
    }
    let calibration: ManifestInterferenceProxy | undefined;
    if (f.calibrateProxy) {
      const fit = await calibrateProxy(bundle, { threads, cores, bank: bank!, onProgress: say });
      calibration = fit.proxy;
      bundle = { ...bundle, manifest: await storeProxy(bundle, fit.proxy, signingKey) };
    } else if (!bundle.manifest.interferenceProxy) {
      note('note: the bundle has no fitted interference proxy; adaptive stays at level 0 (fit one with --calibrate-proxy)');
    }
    if (modelPath === undefined) {
      if (f.json) printJson({ bundle: bundle.paths.dir, calibration, results: [] });
      else printLine(calibrationText(calibration!));
      note(
        'note: onnxruntime-node is not installed, so the proxy was calibrated and stored but nothing was compared ' +
          '(npm install onnxruntime-node to compare)',
      );
      return;
    }
    const report = await benchModel(bundle, {
      modelPath,
      threads,
      conditions: [0, ...noisy],
      rounds,
      runs,
      cores,
      ...(bank ? { bank } : {}),
      onProgress: say,
    });
    if (f.json) printJson({ bundle: bundle.paths.dir, model: basename(modelPath), ...report, ...(calibration ? { calibration } : {}) });
    else printLine(reportText(report, calibration));
  } finally {
    await bank?.close();
  }
}
