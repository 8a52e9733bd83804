/**
 * `veltair bench BUNDLE [--model MODEL.onnx] [--threads N] [--noise LEVEL[,LEVEL…]] [--rounds R]
 *  [--runs N] [--calibrate-proxy [--sign KEY]] [--json]`
 * Whole-model latency in one run: veltair adaptive (interference proxy), veltair pinned to the
 * best-quiet versions, and ONNX Runtime on the same model and threads — quiet and under each
 * requested noise level. The command lives in the comparison room (src/compare/model-command.ts),
 * loaded only when it runs, so an install without ONNX Runtime runs every other command.
 *
 * --json prints `{ threads, rounds, …, proxy, decisionCost, calibration?, results: [ { threads,
 * noise, veltairMs, veltairFixedMs, ortMs, ratioVsOrt, adaptiveVsFixed, fixedVsOrt,
 * predictedLevels, samples: { veltair, veltairFixed, ort } } ] }`, one result per condition.
 */
import type { Command } from 'commander';
import type { BenchFlags } from '../compare/model-command.js';
import { loadOrtRoom } from './ort-room.js';

export function registerBenchCommand(program: Command): void {
  program
    .command('bench')
    .description(
      'whole-model latency: veltair adaptive, veltair fixed best-quiet versions and ONNX Runtime, quiet and under noise, in one run',
    )
    .argument('<bundle>', 'bundle directory written by veltair compile')
    .option('--model <file>', "the .onnx model for ONNX Runtime (default: the bundle's recorded model, beside the bundle or here)")
    .option('--threads <n>', "threads for veltair and ONNX Runtime (default: the proxy's calibration threads, else all cores but one)")
    .option(
      '--noise <levels>',
      'noise levels to measure besides quiet, e.g. 4 or 3,4; 0: quiet only (default: the highest level the bundle was profiled at)',
    )
    .option('--rounds <n>', 'interleaved rounds per condition (default 5)')
    .option('--runs <n>', 'timed runs per arm per round, after one warm-up run (default 3)')
    .option('--calibrate-proxy', 'first fit the interference proxy on this machine and store its coefficients in the bundle')
    .option(
      '--sign <key>',
      'with --calibrate-proxy on a signed bundle: its Ed25519 private key, to renew manifest.sig over the new manifest',
    )
    .option('--json', 'machine-readable results on stdout, nothing else there')
    .action(async (bundle: string, flags: BenchFlags) => {
      // --calibrate-proxy works without ONNX Runtime: the command checks for it itself.
      const room = await loadOrtRoom('model-command', 'veltair bench times veltair against ONNX Runtime', { needsOrt: false });
      await room.benchAction(bundle, flags);
    });
}
