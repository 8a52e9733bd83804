/**
 * The whole-model table of bench/RESULTS.md from a `bench/torchvision/suite.sh` work folder:
 * per model the quiet veltair/ORT ratio at 1 and 2 threads (medians of paired rounds, from
 * `veltair bench --json`), the share of the run outside tuned kernels (`suite.sh profile`: the
 * step profiler at 1 and 2 threads), the compile's budget, then the geomean and the worst model per count.
 *
 *   node dist/src/bench/suite-table.js WORK
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface BenchCase {
  readonly noise: number;
  readonly veltairMs: number;
  readonly ortMs: number;
  readonly ratioVsOrt: number;
}
interface Row {
  readonly model: string;
  readonly byThreads: Map<number, BenchCase>;
  /** threads → share of the profiled run outside tuned kernels. */
  readonly nonKernel: Map<number, number>;
  readonly compile?: { tuningSeconds: number; measured: number };
}

const THREADS = [1, 2] as const;

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

function rowOf(work: string, model: string): Row {
  const byThreads = new Map<number, BenchCase>();
  for (const t of THREADS) {
    const r = readJson(join(work, 'results', `${model}.t${t}.json`)) as { results?: BenchCase[] } | undefined;
    const quiet = r?.results?.find((c) => c.noise === 0);
    if (quiet) byThreads.set(t, quiet);
  }
  const nonKernel = new Map<number, number>();
  for (const t of THREADS) {
    const p = readJson(join(work, 'results', `${model}.profile.t${t}.json`)) as { nonKernelShare?: number } | undefined;
    if (typeof p?.nonKernelShare === 'number') nonKernel.set(t, p.nonKernelShare);
  }
  const c = readJson(join(work, 'results', `${model}.compile.json`)) as { tuningSeconds?: number; measured?: number } | undefined;
  return {
    model,
    byThreads,
    nonKernel,
    ...(c?.tuningSeconds !== undefined ? { compile: { tuningSeconds: c.tuningSeconds, measured: c.measured ?? 0 } } : {}),
  };
}

const geomean = (xs: readonly number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
const cell = (c: BenchCase | undefined) =>
  c ? `${c.ratioVsOrt.toFixed(3)} (${c.veltairMs.toPrecision(4)} / ${c.ortMs.toPrecision(4)} ms)` : 'none';

export function suiteTable(work: string): string {
  const models = readdirSync(join(work, 'models'))
    .filter((f) => f.endsWith('.onnx'))
    .map((f) => f.slice(0, -5))
    .sort();
  const rows = models.map((m) => rowOf(work, m)).filter((r) => r.byThreads.size > 0 || r.compile);
  const lines = [
    '| model | 1 thread veltair/ORT (veltair / ORT ms) | 2 threads veltair/ORT | outside kernels (1 / 2 threads) | compile s (measured) |',
    '|---|---|---|---|---|',
  ];
  const share = (x: number | undefined) => (x === undefined ? 'none' : `${(x * 100).toFixed(1)}%`);
  for (const r of rows) {
    lines.push(
      `| ${r.model} | ${cell(r.byThreads.get(1))} | ${cell(r.byThreads.get(2))} | ${share(r.nonKernel.get(1))} / ${share(r.nonKernel.get(2))} | ` +
        `${r.compile ? `${r.compile.tuningSeconds.toFixed(0)} (${r.compile.measured})` : 'none'} |`,
    );
  }
  lines.push('');
  for (const t of THREADS) {
    const got = rows.flatMap((r) => (r.byThreads.has(t) ? [{ model: r.model, ratio: r.byThreads.get(t)!.ratioVsOrt }] : []));
    if (got.length === 0) {
      lines.push(`${t} thread(s): no model benchmarked`);
      continue;
    }
    const worst = got.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    lines.push(
      `${t} thread(s): ${got.length} models, geomean veltair/ORT ${geomean(got.map((g) => g.ratio)).toFixed(3)}, ` +
        `worst ${worst.model} ${worst.ratio.toFixed(3)}, above 1.1×: ${
          got
            .filter((g) => g.ratio > 1.1)
            .map((g) => g.model)
            .join(', ') || 'none'
        }`,
    );
    const shares = rows.flatMap((r) => (r.nonKernel.has(t) ? [{ model: r.model, share: r.nonKernel.get(t)! }] : []));
    if (shares.length > 0) {
      lines.push(
        `${t} thread(s): outside tuned kernels above 10% of the run: ` +
          `${
            shares
              .filter((x) => x.share > 0.1)
              .map((x) => `${x.model} ${share(x.share)}`)
              .join(', ') || 'none'
          } (of ${shares.length} profiled)`,
      );
    }
  }
  return lines.join('\n');
}

const work = process.argv[2];
if (work && import.meta.url === `file://${process.argv[1]}`) {
  if (!existsSync(join(work, 'models'))) {
    console.error(`error: ${work} has no models/ folder (bench/torchvision/suite.sh models WORK makes it)`);
    process.exit(1);
  }
  console.log(suiteTable(work));
}
