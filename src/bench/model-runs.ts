/**
 * One model's compile, check against ONNX Runtime and timing, each in its own child process under the
 * benchmark lock: what coverage.ts and speed-set.ts run for every model. A child of its own means a
 * model that crashes the runtime is a row of the table, not the end of the run.
 *
 * With BENCH_LOCK set, a compile or a check holds that lock shared and a timing holds it exclusive (as
 * bench/torchvision/suite.sh does), so timings never overlap other benchmarks; a compile's seconds
 * start when the lock was taken, not when the wait for it began.
 *
 *   node dist/src/bench/model-runs.js --check MODEL BUNDLE   the check child: {"relErr", "refSpread"} on stdout
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { pairedRatios } from '../stats.js';
import { repoRoot } from '../toolchain/paths.js';
import { compareWithOrt } from './against-ort.js';
import { MATCH_TOLERANCE } from './coverage-table.js';
import type { Roofline } from './step-roofline.js';

const veltairBin = () => join(repoRoot(), 'bin', 'veltair');
const LOCKED_AT = 'bench-lock-taken-ns=';

/** The command under the benchmark lock when BENCH_LOCK names one: shared for compiles, exclusive for timings. */
function locked(mode: '-s' | '-x', cmd: string[]): [string, string[]] {
  const lock = process.env['BENCH_LOCK'];
  // The shell prints when the lock was taken, so a compile's time leaves out its wait for the lock.
  return lock
    ? ['flock', [mode, lock, 'sh', '-c', `echo "${LOCKED_AT}$(date +%s%N)" >&2; exec "$@"`, 'sh', ...cmd]]
    : [cmd[0]!, cmd.slice(1)];
}

/** Seconds from the lock being taken (or from `t0Ms`, with no lock) to now. */
function secondsSinceStart(stderr: string, t0Ms: number): number {
  const m = new RegExp(`${LOCKED_AT}(\\d+)`).exec(stderr);
  if (!m) return (performance.now() - t0Ms) / 1000;
  return (Date.now() * 1e6 - Number(m[1])) / 1e9;
}

function dirBytes(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.size;
  return readdirSync(path).reduce((sum, f) => sum + dirBytes(join(path, f)), 0);
}

/** The last line veltair printed on stderr that reads as its error (it prints one line per error). */
export function errorLine(stderr: string, fallback: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  return lines.reverse().find((l) => /^error|UNSUPPORTED|\[[A-Z_]+\]/.test(l)) ?? lines[0] ?? fallback;
}

export interface CompileResult {
  readonly ok: boolean;
  readonly wallSeconds: number;
  readonly tuningSeconds?: number;
  readonly bundleBytes?: number;
  /** The error line veltair printed (code and message) when it refused or failed. */
  readonly error?: string;
}

/** `veltair compile MODEL -o BUNDLE --db DB BUDGET… --force --json`, under the lock held shared. */
export async function compileBundle(model: string, bundle: string, db: string, budget: readonly string[]): Promise<CompileResult> {
  const [cmd, args] = locked('-s', [
    process.execPath,
    veltairBin(),
    'compile',
    model,
    '-o',
    bundle,
    '--db',
    db,
    ...budget,
    '--force',
    '--json',
  ]);
  const t0 = performance.now();
  const r = await execa(cmd, args, { reject: false, stdin: 'ignore', all: false });
  const wallSeconds = secondsSinceStart(r.stderr, t0);
  if (r.exitCode !== 0) return { ok: false, wallSeconds, error: errorLine(r.stderr, `exit ${r.exitCode}`) };
  let tuningSeconds: number | undefined;
  try {
    tuningSeconds = (JSON.parse(r.stdout) as { tuningSeconds?: number }).tuningSeconds;
  } catch {
    /* the bundle is what counts */
  }
  return { ok: true, wallSeconds, bundleBytes: dirBytes(bundle), ...(tuningSeconds !== undefined ? { tuningSeconds } : {}) };
}

export interface MatchResult {
  readonly relErr: number;
  readonly ok: boolean;
  readonly error?: string;
}

/** The bundle against ONNX Runtime on one seeded input (the --check child, under the lock held shared). */
export async function checkBundle(name: string, model: string, bundle: string): Promise<MatchResult> {
  // Shared, like a compile: the check's runs must not land inside another process's timing.
  const [cmd, args] = locked('-s', [process.execPath, fileURLToPath(import.meta.url), '--check', model, bundle]);
  const r = await execa(cmd, args, { reject: false, stdin: 'ignore' });
  if (r.exitCode !== 0) return { relErr: NaN, ok: false, error: errorLine(r.stderr, `the check of ${name} exited ${r.exitCode}`) };
  const { relErr, refSpread } = JSON.parse(r.stdout) as { relErr: number; refSpread: number };
  if (!(refSpread > 0))
    return { relErr, ok: false, error: "ONNX Runtime's output is constant on the seeded input, so matching it proves nothing" };
  return { relErr, ok: relErr <= MATCH_TOLERANCE };
}

export interface Timing {
  readonly veltairMs: number;
  readonly ortMs: number;
  /** Median of the paired rounds' veltair/ORT ratios, and their range. */
  readonly ratio: number;
  readonly minRatio: number;
  readonly maxRatio: number;
}

/** A flat list of samples cut into rounds of `runs` (a trailing partial round is dropped). */
export function roundsOf(samples: readonly number[], runs: number): number[][] {
  const out: number[][] = [];
  for (let i = 0; i + runs <= samples.length; i += runs) out.push(samples.slice(i, i + runs));
  return out;
}

/** `veltair bench --noise 0` at `threads` against ONNX Runtime, under the lock held exclusive. */
export async function benchBundle(
  model: string,
  bundle: string,
  threads: number,
  rounds: number,
  runs: number,
): Promise<Timing | { error: string }> {
  const [cmd, args] = locked('-x', [
    process.execPath,
    veltairBin(),
    'bench',
    bundle,
    '--model',
    model,
    '--threads',
    String(threads),
    '--noise',
    '0',
    '--rounds',
    String(rounds),
    '--runs',
    String(runs),
    '--json',
  ]);
  const r = await execa(cmd, args, { reject: false, stdin: 'ignore' });
  if (r.exitCode !== 0) return { error: errorLine(r.stderr, `bench exited ${r.exitCode}`) };
  const quiet = (
    JSON.parse(r.stdout) as {
      results: { noise: number; veltairMs: number; ortMs: number; ratioVsOrt: number; samples: { veltair: number[]; ort: number[] } }[];
    }
  ).results.find((c) => c.noise === 0);
  if (!quiet) return { error: 'bench printed no quiet condition' };
  const spread = pairedRatios(roundsOf(quiet.samples.ort, runs), roundsOf(quiet.samples.veltair, runs));
  return { veltairMs: quiet.veltairMs, ortMs: quiet.ortMs, ratio: quiet.ratioVsOrt, minRatio: spread.minRatio, maxRatio: spread.maxRatio };
}

/** The bundle's per-step profile against the machine's limits at `threads` (step-roofline.ts), under the lock held exclusive. */
export async function rooflineOfBundle(bundle: string, threads: number, runs: number): Promise<Roofline | { error: string }> {
  const script = fileURLToPath(new URL('./step-roofline.js', import.meta.url));
  const [cmd, args] = locked('-x', [process.execPath, script, bundle, '--threads', String(threads), '--runs', String(runs), '--json']);
  const r = await execa(cmd, args, { reject: false, stdin: 'ignore' });
  if (r.exitCode !== 0) return { error: errorLine(r.stderr, `the profile exited ${r.exitCode}`) };
  return JSON.parse(r.stdout) as Roofline;
}

/** The child: max |bundle − ORT| / max |ORT| over the first output, on one seeded input, at 1 thread. */
async function check(model: string, bundle: string): Promise<void> {
  const [c] = await compareWithOrt(model, bundle, [1]);
  process.stdout.write(`${JSON.stringify({ relErr: c!.maxRef > 0 ? c!.maxDiff / c!.maxRef : c!.maxDiff, refSpread: c!.refSpread })}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--check') {
  check(process.argv[3]!, process.argv[4]!).catch((e: unknown) => {
    console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
