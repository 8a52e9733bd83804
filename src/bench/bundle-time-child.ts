/**
 * One bundle timed in a process of its own: load, one warm-up inference, then `runs` timed ones;
 * prints `{"ms": median}`. Two bundles loaded in one process were not timed alike: a bundle paired
 * against a byte-for-byte copy of itself read 0.975 to 1.038 (bench/RESULTS.md), so
 * pair-bundles.ts and transfer.ts time each bundle of each round in a fresh process instead.
 *
 *   node dist/src/bench/bundle-time-child.js BUNDLE THREADS RUNS [LEVEL]
 */
import { execa } from 'execa';
import { fileURLToPath } from 'node:url';
import { loadBundle, type Session } from '../runtime/session.js';
import { median } from '../stats.js';
import { modelFeeds } from '../compile/feeds.js';

/** Median latency (ms) of `runs` inferences of the bundle on its versions for `level`, in a fresh child process. */
export async function timeBundleInChild(bundle: string, threads: number, runs: number, level = 0): Promise<number> {
  const args = [fileURLToPath(import.meta.url), bundle, String(threads), String(runs), String(level)];
  const r = await execa(process.execPath, args, { stdin: 'ignore' });
  const ms = (JSON.parse(r.stdout) as { ms?: unknown }).ms;
  if (typeof ms !== 'number' || !(ms > 0)) throw new Error(`bundle-time-child printed ${r.stdout.slice(0, 200)}`);
  return ms;
}

/** Median latency (ms) of `runs` inferences of a loaded bundle, after one warm-up; `outs` are reused output buffers. */
export function timeInferences(s: Session, feeds: Feeds, outs: Outputs, runs: number): number {
  s.executor.run(feeds, outs);
  const xs: number[] = [];
  for (let k = 0; k < runs; k++) {
    const t0 = process.hrtime.bigint();
    s.executor.run(feeds, outs);
    xs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(xs);
}

type Feeds = ReturnType<typeof modelFeeds>;
type Outputs = ReturnType<Session['executor']['run']>;

async function child(bundle: string, threads: number, runs: number, level: number): Promise<void> {
  const s = await loadBundle(bundle, { threads, level, pinThreads: true });
  const feeds = modelFeeds(s.manifest.model.inputs);
  process.stdout.write(`${JSON.stringify({ ms: timeInferences(s, feeds, s.executor.run(feeds), runs) })}\n`);
  process.exit(0);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [bundle, threads, runs, level] = process.argv.slice(2);
  child(bundle!, Number(threads), Number(runs), Number(level ?? 0)).catch((e: unknown) => {
    process.stderr.write(`bundle-time-child: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  });
}
