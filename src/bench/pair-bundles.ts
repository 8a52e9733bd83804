/**
 * Bundles of one model, timed against the first in one process: each round runs every bundle
 * (warm-up, then `runs` timed inferences, their median), in forward order on even rounds and reverse
 * order on odd ones, so drift falls on all of them alike; the ratio to the first bundle is paired
 * within each round. For comparing compiles of the same model (transfer against scratch, two
 * compiler versions) that were not made in one run.
 *
 *   npm run build && node dist/src/bench/pair-bundles.js BUNDLE BUNDLE… [--threads 1] [--rounds 9] [--runs 5]
 * Markdown on stdout.
 */
import { loadBundle } from '../runtime/session.js';
import { median, summarizeRatios } from '../stats.js';
import { modelFeeds } from './feeds.js';
import { machineInfo, machineLine } from './machine.js';

const flag = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
};

async function main(): Promise<void> {
  const threads = flag('--threads', 1), rounds = flag('--rounds', 9), runs = flag('--runs', 5);
  const paths = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
  if (paths.length < 2) throw new Error('give at least two bundles of the same model: the first is the baseline');
  const bundles = await Promise.all(paths.map((p) => loadBundle(p, { threads, pinThreads: true })));
  const sha = bundles[0]!.manifest.model.sha256;
  const other = bundles.findIndex((b) => b.manifest.model.sha256 !== sha);
  if (other >= 0) throw new Error(`${paths[other]} was compiled from another model than ${paths[0]}`);
  const feeds = modelFeeds(bundles[0]!.manifest.model.inputs);
  const outs = bundles.map((b) => b.executor.run(feeds));
  const ms = bundles.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    const order = bundles.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) {
      bundles[i]!.executor.run(feeds, outs[i]);
      const xs: number[] = [];
      for (let k = 0; k < runs; k++) {
        const t0 = process.hrtime.bigint();
        bundles[i]!.executor.run(feeds, outs[i]);
        xs.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      ms[i]!.push(median(xs));
    }
  }
  const machine = await machineInfo();
  const lines = [
    `#### Bundles paired against ${paths[0]} (${machineLine(machine)})`, '',
    `Command: \`node dist/src/bench/pair-bundles.js ${paths.join(' ')} --threads ${threads} --rounds ${rounds} --runs ${runs}\``, '',
    '| bundle | latency, median of rounds (ms) | ratio to the first, paired median [min–max] |', '|---|---|---|',
    ...paths.map((p, i) => {
      const s = summarizeRatios(ms[i]!.map((x, r) => x / ms[0]![r]!));
      const ratio = i === 0 ? '1 (baseline)' : `${s.medianRatio.toFixed(3)} [${s.minRatio.toFixed(3)}–${s.maxRatio.toFixed(3)}]`;
      return `| ${p} | ${median(ms[i]!).toFixed(2)} | ${ratio} |`;
    }), '',
  ];
  process.stdout.write(lines.join('\n'));
  process.exit(0);
}

main().catch((e: unknown) => { process.stderr.write(`pair-bundles: ${e instanceof Error ? e.message : String(e)}\n`); process.exit(2); });
