/**
 * `veltair calibrate-serving BUNDLE… -o FILE [--cores LIST] [--policy P] [--requests N] [--json]`:
 * serve the bundles live on this machine, time sequential requests against each, and write the
 * serving calibration that `veltair simulate --calibration FILE` charges (src/load/calibrate-serving.ts).
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { quoteForMessage, userError } from '../errors.js';
import { calibrateServing } from '../load/calibrate-serving.js';
import { writeTextAtomic } from '../atomic-file.js';
import { availableCores, parseCoreList } from '../toolchain/cpu.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { parsePositiveInt } from '../terminal/args.js';
import { note, printJson, printLine } from '../terminal/output.js';

interface CalibrateServingFlags {
  output?: string;
  cores?: string;
  policy: string;
  requests: string;
  json?: boolean;
}

export function registerCalibrateServingCommand(program: Command): void {
  program
    .command('calibrate-serving')
    .description('measure live serving costs (front end, block dispatch, hand-back) on this machine for veltair simulate --calibration')
    .argument('<bundles...>', "bundle directories to serve; give several input sizes for the front end's curve by tensor bytes")
    .requiredOption('-o, --output <file>', 'the calibration file to write (JSON, written atomically)')
    .option('--cores <list>', 'cores the server runs on, e.g. 0,1 (default: every core this process may use)')
    .option('--policy <p>', "the server's scheduling policy (layerwise gives the most blocks per request)", 'layerwise')
    .option('--requests <n>', 'timed sequential requests per model, after 5 warm-up requests', '30')
    .option('--json', 'print the calibration on stdout')
    .action(async (bundleArgs: string[], f: CalibrateServingFlags) => {
      const bundles = bundleArgs.map((b) => resolve(b));
      for (const [i, b] of bundles.entries()) {
        if (!existsSync(b) || !statSync(b).isDirectory()) {
          throw userError(
            'BAD_ARGUMENT',
            `${quoteForMessage(bundleArgs[i]!)} is not a bundle directory`,
            'pass directories written by veltair compile',
          );
        }
      }
      const cores = f.cores === undefined ? availableCores() : parseCoreList(f.cores);
      const requests = parsePositiveInt('--requests', f.requests, 100_000);
      const machine = machineLine(await machineInfo());
      const say = (m: string) => {
        if (!f.json && process.stderr.isTTY) note(m);
      };
      const cal = await calibrateServing({
        bundles,
        cores,
        policy: f.policy,
        requests,
        machine,
        onProgress: say,
        command: `veltair calibrate-serving ${bundleArgs.join(' ')} --cores ${cores.join(',')} --policy ${f.policy} --requests ${requests}`,
      });
      await writeTextAtomic(f.output!, JSON.stringify(cal, null, 2) + '\n');
      if (f.json) {
        printJson(cal);
        return;
      }
      printLine(
        `serving calibration (${machine}, cores ${cores.join(',')}): ` +
          `front end ${cal.frontEnd.map((p) => `${p.bytes} B → ${p.us} µs`).join(', ')}; ` +
          `block dispatch ${cal.blockDispatchUs} µs + ${cal.wakeUpUsPerCore} µs per extra core; ` +
          `event loop ${cal.eventLoopUsPerBlock} µs per block → ${f.output}`,
      );
    });
}
