/**
 * `veltair bench-layers MODEL.onnx [--layers i,j,…] [--trials N] [--threads N] [--rounds N]
 * [--input-shape NAME=DIMS]… [--json]`: per tunable layer, a small search, then the best kernel
 * against ONNX Runtime's single-op model of the same layer and the FMA peak, in one run. The
 * command lives in the comparison room (src/compare/layers-command.ts), loaded when it runs.
 */
import type { Command } from 'commander';
import type { BenchLayersCliOptions } from '../compare/layers-command.js';
import { loadOrtRoom } from './ort-room.js';
import { collectInputShape } from './inspect.js';

export function registerBenchLayersCommand(program: Command): void {
  program
    .command('bench-layers')
    .description('tune each tunable layer briefly and time it against ONNX Runtime and the FMA peak, in one run')
    .argument('<model>', 'path to an .onnx file')
    .option('--layers <list>', 'layer indices as `veltair inspect` prints them, e.g. 3,7,10-12 (default: every unique tunable workload)')
    .option('--trials <n>', 'candidates searched per layer', '16')
    .option('--threads <n>', 'threads for veltair and ONNX Runtime alike, pinned to cores 0..n-1', '1')
    .option('--rounds <n>', 'alternating veltair/ONNX Runtime measurement rounds per layer', '3')
    .option('--seed <n>', 'seed of the schedule sampler', '1')
    .option(
      '--input-shape <name=dims>',
      'pin an input shape, e.g. input=1x3x224x224 (repeatable)',
      collectInputShape,
      new Map<string, readonly number[]>(),
    )
    .option('--json', 'machine-readable output on stdout')
    .action(async (model: string, opts: BenchLayersCliOptions) => {
      const room = await loadOrtRoom('layers-command', 'veltair bench-layers times each layer against ONNX Runtime');
      await room.benchLayersAction(model, opts);
    });
}
