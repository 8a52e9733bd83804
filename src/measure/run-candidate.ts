/**
 * The runner: measures compiled candidates in a child process running the native harness
 * (native-kernels/harness.c), so a crash, a hang or a wrong answer is a recorded failure and the
 * caller goes on. One child measures a list of jobs serially; for each job it announces "ready"
 * and waits for a "go" line, which is where the caller's beforeJob hook runs (e.g. to start an
 * interference level) — so a tuner can interleave quiet and noisy measurements of the same
 * candidates (A@0, A@2, B@0, B@2, …) without a process start per measurement. A per-job watchdog
 * kills a hung child; a crash loses only the job in flight: a new child takes the rest.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { execa } from 'execa';
import { VeltairError } from '../errors.js';
import { nativeDir, cacheDir } from '../toolchain/paths.js';
import { ensureProgram } from '../toolchain/build-cache.js';

export type MeasureStatus = 'ok' | 'wrong' | 'crash' | 'timeout' | 'compile_error';

export interface Measurement {
  readonly status: MeasureStatus;
  /** Median per-call latency over the repeats (ok only). */
  readonly medianMs?: number;
  /** Every repeat's per-call latency, in the order taken. */
  readonly repeatsMs: readonly number[];
  /** Kernel calls per timed repeat (1 with a cache flush). */
  readonly number?: number;
  readonly maxAbsErr?: number;
  readonly tolerance?: number;
  /** The reference it was checked against was read from the harness's reference cache (not computed by its child). */
  readonly referenceCached?: boolean;
  readonly message?: string;
}

export interface MeasureJob {
  readonly soPath: string;
  readonly symbol: string;
  readonly threads: number;
  /** Floating-point operations of one call: a large layer gets a longer default limit (jobTimeoutMs). */
  readonly flops?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * The default per-job limit: 60 s, or more for a layer whose plain C reference (checked once per workload, at
 * ≥ 0.5 GFLOP/s on one core) and first timed calls would not fit in it — FCN's 2048→512 3×3 head at 65×65 is
 * 80 GFLOP a call. Generous on purpose: the limit is there to catch hangs, not slow candidates.
 */
export function jobTimeoutMs(flops: number | undefined): number {
  return Math.max(DEFAULT_TIMEOUT_MS, Math.ceil(((flops ?? 0) / 0.5e9 + (10 * (flops ?? 0)) / 2e9) * 1000));
}

export interface MeasureOptions {
  /** Cores the harness pins itself (and its OpenMP threads) to; default all. */
  readonly cores?: readonly number[];
  /** Keep repeating until this much kernel time is measured (default 100 ms). */
  readonly minTimeMs?: number;
  readonly minRepeats?: number;
  readonly maxRepeats?: number;
  /** Per-job limit, verification included (default: jobTimeoutMs of the job's flops, at least 60 s). */
  readonly timeoutMs?: number;
  /** clflush packed weights and input before every timed call. */
  readonly flushCache?: boolean;
  readonly seed?: number;
  readonly cacheDir?: string;
  /** Runs before job `index` starts (awaited) and after it ends. */
  readonly beforeJob?: (index: number) => Promise<void> | void;
  /**
   * Asked when job `index` is next, with every earlier job's result known: true skips it (nothing
   * runs, no hooks; measureJobsSkippable reports it as undefined).
   */
  readonly skipJob?: (index: number) => Promise<boolean> | boolean;
  readonly afterJob?: (index: number, m: Measurement) => Promise<void> | void;
  /** Jobs one child is given at most (default JOBS_PER_CHILD); the rest go to the next child. */
  readonly jobsPerChild?: number;
}

/**
 * A tuner measures a whole pass's warm-up candidates, every level of each, in one child per thread
 * count (tune/evaluate.ts): thousands of jobs for a large model from scratch. Each job is three
 * arguments (a path, a symbol, a count), so a child takes at most this many, far below the kernel's
 * limit on a command line, and the next child the rest.
 */
export const JOBS_PER_CHILD = 512;

/** Everything the harness compiles besides the kernel headers (reference.h included: it is part of the key). */
const HARNESS_FILES = ['harness.c', 'reference.c', 'reference.h'];

/**
 * The harness binary, compiled once per (sources, headers, flags, compiler, CPU) into the cache.
 * The sources are read on every call (a few small reads) rather than remembered per process, so a
 * long-lived process never pairs an old harness with kernels built against edited headers.
 */
export async function ensureHarness(dir = cacheDir()): Promise<string> {
  const sources = await Promise.all(HARNESS_FILES.map(async (name) => ({ name, text: await readFile(join(nativeDir(), name), 'utf8') })));
  return ensureProgram({
    name: 'harness',
    artifact: 'harness',
    sources,
    cacheDir: dir,
    hint: 'this is a veltair bug if your C compiler works',
  });
}

function ompEnv(cores: readonly number[]): Record<string, string> {
  return {
    OMP_PLACES: cores.map((c) => `{${c}}`).join(','),
    OMP_PROC_BIND: 'close',
    OMP_DYNAMIC: 'false',
  };
}

interface HarnessLine {
  job: number;
  event: 'ready' | 'result';
  status?: MeasureStatus | 'skipped';
  [k: string]: unknown;
}

function toMeasurement(l: HarnessLine): Measurement {
  return {
    status: l.status === undefined || l.status === 'skipped' ? 'crash' : l.status,
    ...(typeof l['medianMs'] === 'number' ? { medianMs: l['medianMs'] } : {}),
    repeatsMs: Array.isArray(l['repeatsMs']) ? (l['repeatsMs'] as number[]) : [],
    ...(typeof l['number'] === 'number' ? { number: l['number'] } : {}),
    ...(typeof l['maxAbsErr'] === 'number' ? { maxAbsErr: l['maxAbsErr'] } : {}),
    ...(typeof l['tolerance'] === 'number' ? { tolerance: l['tolerance'] } : {}),
    ...(typeof l['referenceCached'] === 'boolean' ? { referenceCached: l['referenceCached'] } : {}),
    ...(typeof l['message'] === 'string' ? { message: l['message'] } : {}),
  };
}

/** One child over `jobs`; returns the measurements it finished (a crash/timeout ends it early). */
async function runChild(
  bin: string,
  refCache: string | undefined,
  jobs: readonly MeasureJob[],
  indices: readonly number[],
  o: MeasureOptions,
  done: Map<number, Measurement | undefined>,
): Promise<void> {
  const cores = o.cores ?? Array.from({ length: availableParallelism() }, (_, i) => i);
  const args = [
    '--cores',
    cores.join(','),
    '--min-time-ms',
    String(o.minTimeMs ?? 100),
    '--min-repeats',
    String(o.minRepeats ?? 3),
    '--max-repeats',
    String(o.maxRepeats ?? 1000),
    '--flush',
    o.flushCache ? '1' : '0',
    '--seed',
    String(o.seed ?? 1),
    '--handshake',
    ...(refCache ? ['--ref-cache', refCache] : []),
  ];
  for (const i of indices) args.push('--job', jobs[i]!.soPath, jobs[i]!.symbol, String(jobs[i]!.threads));
  const child = execa(bin, args, { env: ompEnv(cores), stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', buffer: false, reject: false });
  let current: number | undefined;
  let timedOut = false;
  let watchdog: NodeJS.Timeout | undefined;
  const stderr: string[] = [];
  child.stderr?.on('data', (d: Buffer) => {
    if (stderr.length < 20) stderr.push(d.toString());
  });
  const lines = createInterface({ input: child.stdout! });
  for await (const text of lines) {
    let line: HarnessLine;
    try {
      line = JSON.parse(text) as HarnessLine;
    } catch {
      continue;
    }
    const index = indices[line.job];
    if (index === undefined) continue;
    if (line.event === 'ready') {
      if (await o.skipJob?.(index)) {
        child.stdin?.write('skip\n');
        continue;
      }
      current = index;
      await o.beforeJob?.(index);
      watchdog = setTimeout(
        () => {
          timedOut = true;
          child.kill('SIGKILL');
        },
        o.timeoutMs ?? jobTimeoutMs(jobs[index]!.flops),
      );
      child.stdin?.write('go\n');
    } else if (line.status === 'skipped') {
      done.set(index, undefined);
    } else {
      clearTimeout(watchdog);
      const m = toMeasurement(line);
      done.set(index, m);
      current = undefined;
      await o.afterJob?.(index, m);
    }
  }
  const result = await child;
  clearTimeout(watchdog);
  if (current !== undefined && !done.has(current)) {
    const limit = o.timeoutMs ?? jobTimeoutMs(jobs[current]!.flops);
    const why = timedOut ? `no result within ${limit} ms` : `harness died (${result.signal ?? `exit ${result.exitCode}`})`;
    const m: Measurement = {
      status: timedOut ? 'timeout' : 'crash',
      repeatsMs: [],
      message: `${why} ${stderr.join('').slice(0, 200)}`.trim(),
    };
    done.set(current, m);
    await o.afterJob?.(current, m);
  } else if (result.exitCode !== 0 && indices.every((i) => !done.has(i))) {
    throw new VeltairError('INTERNAL', `measurement harness failed: ${stderr.join('').slice(0, 300)}`, 'this is a veltair bug', 2);
  }
}

/** Measure jobs serially, in order; one Measurement per job, failures included. */
export async function measureJobs(jobs: readonly MeasureJob[], o: Omit<MeasureOptions, 'skipJob'> = {}): Promise<Measurement[]> {
  return (await measureJobsSkippable(jobs, o)).map((m) => m!);
}

/** measureJobs with `skipJob`: a skipped job's entry is undefined. */
export async function measureJobsSkippable(jobs: readonly MeasureJob[], o: MeasureOptions = {}): Promise<(Measurement | undefined)[]> {
  const bin = await ensureHarness(o.cacheDir ?? cacheDir());
  // Reference outputs outlive one child (harness.c): kept per harness build, so a changed reference never answers.
  // A cache directory that cannot be made only costs time: the children then compute every reference.
  const wanted = join(o.cacheDir ?? cacheDir(), 'refs', basename(bin));
  const refCache = await mkdir(wanted, { recursive: true }).then(
    () => wanted,
    () => undefined,
  );
  const done = new Map<number, Measurement | undefined>();
  let pending = jobs.map((_, i) => i);
  while (pending.length > 0) {
    const before = done.size;
    await runChild(bin, refCache, jobs, pending.slice(0, Math.max(1, o.jobsPerChild ?? JOBS_PER_CHILD)), o, done);
    pending = pending.filter((i) => !done.has(i));
    if (done.size === before) {
      // the child died before starting anything: record the first job as crashed so we always progress
      done.set(pending[0]!, { status: 'crash', repeatsMs: [], message: 'harness exited before the job started' });
      pending = pending.slice(1);
    }
  }
  return jobs.map((_, i) => done.get(i));
}
