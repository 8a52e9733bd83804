/**
 * `veltair noise --level N [--cores 1,2] [--seconds S] [--json]` runs the interference generator
 * in the foreground until Ctrl-C or S seconds; `veltair noise --calibrate [--rounds R] [--levels …]
 * [--json]` measures what each level does to reference probes on this machine.
 */
import type { Command } from 'commander';
import { userError } from '../errors.js';
import { calibrate, type Calibration, type ProbeCalibration } from '../interference/calibrate.js';
import { LEVELS, levelSpec } from '../interference/levels.js';
import { availableCores, parseCoreList } from '../toolchain/cpu.js';
import { noiseCores, startNoise, type NoiseHandle, type NoiseStats } from '../interference/generator.js';
import { formatTable, note, printJson, printLine } from '../terminal/output.js';

interface NoiseCliOptions {
  level?: string;
  cores?: string;
  seconds?: string;
  calibrate?: boolean;
  rounds?: string;
  levels?: string;
  json?: boolean;
}

const GiB = 1 << 30;
const MiB = 1 << 20;
const bytes = (n: number) => (n >= GiB ? `${(n / GiB).toFixed(2)} GiB` : `${(n / MiB).toFixed(1)} MiB`);

function parseLevel(text: string): number {
  if (!/^\d+$/.test(text.trim())) {
    throw userError('BAD_ARGUMENT', `level ${JSON.stringify(text)} is not a number`, 'use a level from 1 to 4, e.g. --level 3');
  }
  return levelSpec(Number(text)).level;
}

function parsePositive(text: string, flag: string, integer: boolean): number {
  const n = Number(text);
  if (!(n > 0) || !Number.isFinite(n) || (integer && !Number.isInteger(n))) {
    throw userError(
      'BAD_ARGUMENT',
      `${flag} ${JSON.stringify(text)} is not a positive ${integer ? 'integer' : 'number'}`,
      `e.g. ${flag} ${integer ? 5 : 10}`,
    );
  }
  return n;
}

async function runForeground(opts: NoiseCliOptions): Promise<void> {
  const level = parseLevel(opts.level!);
  const all = availableCores();
  const cores = opts.cores !== undefined ? parseCoreList(opts.cores, all) : noiseCores([all[0]!], all);
  if (cores.length === 0) {
    throw userError(
      'BAD_ARGUMENT',
      'no core is left for the noise generator (only one core is available)',
      `pass --cores ${all[0]} to share the kernel's core`,
    );
  }
  const seconds = opts.seconds !== undefined ? parsePositive(opts.seconds, '--seconds', false) : undefined;
  note(
    `veltair noise: level ${level} (${levelSpec(level).summary}) on core${cores.length > 1 ? 's' : ''} ${cores.join(',')}; touching buffers…`,
  );
  // Ctrl-C is how this command normally ends: stop the co-runner cleanly, even mid-start.
  let interrupted = false;
  let handle: NoiseHandle | undefined;
  const onSignal = () => {
    interrupted = true;
    void handle?.stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let stats: NoiseStats;
  try {
    try {
      handle = await startNoise({ level, cores, seconds });
    } catch (e) {
      if (interrupted) {
        note('veltair noise: interrupted before the co-runner was ready');
        return;
      }
      throw e;
    }
    const s = handle.settings;
    note(
      `veltair noise: running (${handle.ready.isa}, ${handle.ready.threads} thread(s), random ${bytes(s.randomBytes)}, ` +
        `stream ${bytes(s.streamBytes)} ${s.streamMode}` +
        `${s.cappedByMemory ? ', sizes capped to half the free memory' : ''}); ${seconds ? `stopping after ${seconds} s` : 'Ctrl-C to stop'}`,
    );
    if (interrupted) void handle.stop();
    stats = await handle.finished;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const gbps = stats.seconds > 0 ? (stats.streamBytesRead + stats.streamBytesWritten) / stats.seconds / 1e9 : 0;
  const mops = stats.seconds > 0 ? stats.randomOps / stats.seconds / 1e6 : 0;
  note(`veltair noise: stopped after ${stats.seconds.toFixed(1)} s; streamed ${gbps.toFixed(1)} GB/s, ${mops.toFixed(1)} M random ops/s`);
  if (opts.json) printJson({ level, cores, settings: handle.settings, ready: handle.ready, stats });
}

const ratioCell = (p: ProbeCalibration) => `${p.medianRatio.toFixed(3)} [${p.minRatio.toFixed(2)}–${p.maxRatio.toFixed(2)}]`;

export function calibrationTable(c: Calibration): string {
  const m = c.machine;
  const header =
    `${m.cpu}, ${m.cores} cores, L3 ${bytes(m.l3Bytes)} (${m.l3Source}); probe on core ${m.kernelCore}, noise on ${m.noiseCores.join(',')}; ` +
    `${c.rounds} interleaved rounds per level\nprobes: cache ${bytes(m.probeSizes.cacheBytes)}, l3 ${bytes(m.probeSizes.l3Bytes)}, ` +
    `stream ${bytes(m.probeSizes.streamBytes)}; ` +
    'cells: median noisy/quiet time ratio [min–max over rounds]';
  const rows = [
    ['level', 'cache probe', 'l3 probe', 'stream probe', 'noise GB/s', 'noise Mops/s'],
    ...c.levels.map((l) => [
      String(l.level),
      ratioCell(l.cacheProbe),
      ratioCell(l.l3Probe),
      ratioCell(l.streamProbe),
      l.noise.streamGBps.toFixed(1),
      l.noise.randomMopsPerSecond.toFixed(1),
    ]),
  ];
  const shares = c.levels.flatMap((l) => [l.cacheProbe, l.l3Probe, l.streamProbe].flatMap((p) => [...p.quietCpuShare, ...p.noisyCpuShare]));
  const minShare = Math.min(...shares);
  const warning =
    minShare < 0.9
      ? `\n\nwarning: the probe had as little as ${(minShare * 100).toFixed(0)}% of its core (other processes ran there): ` +
        'this machine is oversubscribed, so ratios above include CPU contention, not only cache/memory contention'
      : '';
  return `${header}\n\n${formatTable(rows, new Set([4, 5]))}${warning}`;
}

async function runCalibration(opts: NoiseCliOptions): Promise<void> {
  const rounds = parsePositive(opts.rounds ?? '5', '--rounds', true);
  const levels = opts.levels !== undefined ? opts.levels.split(',').map(parseLevel) : undefined;
  const noise = opts.cores !== undefined ? parseCoreList(opts.cores) : undefined;
  const showProgress = !opts.json && process.stderr.isTTY;
  const result = await calibrate({ rounds, levels, noiseCores: noise, onProgress: showProgress ? note : undefined });
  if (opts.json) printJson(result);
  else printLine(calibrationTable(result));
}

export function registerNoiseCommand(program: Command): void {
  program
    .command('noise')
    .description('run the interference generator (a co-runner on the cores the kernel does not use), or calibrate its levels')
    .option('--level <n>', 'interference level 1..4 to run in the foreground')
    .option('--cores <list>', 'cores for the co-runner, e.g. 1,2 (default: every available core but the first)')
    .option('--seconds <s>', 'stop after S seconds (default: run until Ctrl-C)')
    .option('--calibrate', 'measure the slowdown each level causes on cache-resident and streaming probes')
    .option('--rounds <r>', 'with --calibrate: interleaved quiet/noisy rounds per level (default 5)')
    .option('--levels <list>', 'with --calibrate: levels to measure (default 1,2,3,4)')
    .option('--json', 'machine-readable output on stdout, nothing else there')
    .addHelpText('after', `\nLevels:\n${LEVELS.map((l) => `  ${l.level}  ${l.summary}`).join('\n')}\n`)
    .action(async (opts: NoiseCliOptions) => {
      if (opts.calibrate && opts.level !== undefined) {
        throw userError(
          'BAD_ARGUMENT',
          '--calibrate and --level cannot be combined',
          'use --calibrate [--levels 1,2] to measure levels, or --level N to run one',
        );
      }
      if (opts.calibrate) return runCalibration(opts);
      if (opts.level === undefined) {
        throw userError(
          'BAD_ARGUMENT',
          'veltair noise needs --level N or --calibrate',
          'e.g. `veltair noise --level 3 --seconds 10` or `veltair noise --calibrate`',
        );
      }
      return runForeground(opts);
    });
}
