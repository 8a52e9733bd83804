/**
 * Bundles of one model, timed against the first: each round times every bundle (warm-up, then `runs`
 * timed inferences, their median), in forward order on even rounds and reverse order on odd ones,
 * so drift falls on all of them alike; the ratio to the first bundle is paired within each round.
 * Each bundle of each round runs in a fresh process (bundle-time-child.ts): loaded side by side in
 * one process, a bundle and a copy of itself read up to 4% apart. `--in-process` times them in this
 * one (faster). For comparing compiles of the same model (transfer
 * against scratch, two compiler versions) that were not made in one run; name one bundle twice for
 * a control pair that shows the method's own spread. `--noise L` times every bundle on its level-L
 * versions with level L's co-runner on the cores the kernels leave free (paired-noise.ts), started
 * before the first round and kept running to the last, so every bundle meets the same pressure.
 *
 *   npm run build && node dist/src/bench/pair-bundles.js BUNDLE BUNDLE… [--threads 1] [--rounds 9] [--runs 5] [--noise 0] [--in-process]
 * Markdown on stdout.
 */
import { readBundle } from '../bundle/read.js';
import { loadBundle } from '../runtime/session.js';
import { timeBundleInChild, timeInferences } from './bundle-time-child.js';
import { median, summarizeRatios } from '../stats.js';
import { modelFeeds } from '../compile/feeds.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { availableCores } from '../toolchain/cpu.js';
import { startNoise } from '../interference/generator.js';
import { pairedNoisePlan } from './paired-noise.js';
import { VeltairError } from '../errors.js';

const flag = (name: string, fallback: number, min = 1) => {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < min) throw new Error(`${name} must be an integer from ${min}`);
  return v;
};

async function main(): Promise<void> {
  const threads = flag('--threads', 1),
    rounds = flag('--rounds', 9),
    runs = flag('--runs', 5);
  // Before anything loads the runtime addon: its pinning narrows this process's affinity mask.
  const plan = pairedNoisePlan(threads, flag('--noise', 0, 0), availableCores());
  const inProcess = process.argv.includes('--in-process');
  const paths = process.argv
    .slice(2)
    .filter((a, i, all) => !a.startsWith('--') && !(all[i - 1]?.startsWith('--') && all[i - 1] !== '--in-process'));
  if (paths.length < 2) throw new Error('give at least two bundles of the same model: the first is the baseline');
  const manifests = await Promise.all(paths.map((p) => readBundle(p)));
  const sha = manifests[0]!.manifest.model.sha256;
  const other = manifests.findIndex((b) => b.manifest.model.sha256 !== sha);
  if (other >= 0) throw new Error(`${paths[other]} was compiled from another model than ${paths[0]}`);
  const noise = plan.level > 0 ? await startNoise({ level: plan.level, cores: plan.noiseCores }) : undefined;
  let coRunnerExited = false;
  noise?.finished.then(
    () => (coRunnerExited = true),
    () => (coRunnerExited = true),
  );
  const ms = paths.map(() => [] as number[]);
  try {
    await timeRounds(paths, plan.level, threads, runs, rounds, inProcess, () => coRunnerExited, ms);
  } finally {
    await noise?.stop();
  }
  const machine = await machineInfo();
  const lines = [
    `#### Bundles paired against ${paths[0]} (${machineLine(machine)})`,
    '',
    `Command: \`node dist/src/bench/pair-bundles.js ${paths.join(' ')} --threads ${threads} --rounds ${rounds} --runs ${runs}` +
      `${plan.level > 0 ? ` --noise ${plan.level}` : ''}${inProcess ? ' --in-process' : ''}\` ` +
      `(${inProcess ? 'all bundles in this one process' : 'each bundle of each round in a fresh process'}; ` +
      `${plan.level > 0 ? `level-${plan.level} versions, its co-runner on cores ${plan.noiseCores.join(',')}` : 'quiet'})`,
    '',
    '| bundle | latency, median of rounds (ms) | ratio to the first, paired median [min–max] |',
    '|---|---|---|',
    ...paths.map((p, i) => {
      const s = summarizeRatios(ms[i]!.map((x, r) => x / ms[0]![r]!));
      const ratio = i === 0 ? '1 (baseline)' : `${s.medianRatio.toFixed(3)} [${s.minRatio.toFixed(3)}–${s.maxRatio.toFixed(3)}]`;
      return `| ${p} | ${median(ms[i]!).toFixed(2)} | ${ratio} |`;
    }),
    '',
  ];
  process.stdout.write(lines.join('\n'));
  process.exit(0);
}

/** Every round times every bundle, forward on even rounds and backward on odd ones; appends to `ms`. */
async function timeRounds(
  paths: readonly string[],
  level: number,
  threads: number,
  runs: number,
  rounds: number,
  inProcess: boolean,
  coRunnerExited: () => boolean,
  ms: number[][],
): Promise<void> {
  const time = inProcess
    ? await inProcessTimer(paths, level, threads, runs)
    : (i: number) => timeBundleInChild(paths[i]!, threads, runs, level);
  for (let r = 0; r < rounds; r++) {
    const order = paths.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) {
      ms[i]!.push(await time(i));
      // A co-runner that died would leave the later bundles timed quietly: stop rather than mislead.
      if (coRunnerExited()) {
        throw new Error(`the level-${level} co-runner exited during round ${r + 1}`);
      }
    }
  }
}

/** All bundles loaded here, each timed by a warm-up and `runs` inferences in turn. */
async function inProcessTimer(
  paths: readonly string[],
  level: number,
  threads: number,
  runs: number,
): Promise<(i: number) => Promise<number>> {
  const bundles = await Promise.all(paths.map((p) => loadBundle(p, { threads, level, pinThreads: true })));
  const feeds = modelFeeds(bundles[0]!.manifest.model.inputs);
  const outs = bundles.map((b) => b.executor.run(feeds));
  return async (i) => timeInferences(bundles[i]!, feeds, outs[i]!, runs);
}

main().catch((e: unknown) => {
  const hint = e instanceof VeltairError ? ` (hint: ${e.hint})` : '';
  process.stderr.write(`pair-bundles: ${e instanceof Error ? e.message : String(e)}${hint}\n`);
  process.exit(2);
});
