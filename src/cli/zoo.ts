/**
 * `veltair zoo list|build`: the seven evaluation models as real ONNX files, built on demand.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { userError } from '../errors.js';
import { findZooModel, writeZooModel, zooModels, type ZooOptionValues } from '../zoo/index.js';
import { formatTable, printJson, printLine } from '../terminal/output.js';

interface BuildFlags {
  readonly output: string;
  readonly force?: boolean;
  readonly json?: boolean;
  readonly resolution?: string;
  readonly layers?: string;
  readonly sequence?: string;
  readonly seed?: string;
  readonly embeddings?: boolean;
  readonly branch5x5?: boolean;
}

function integerFlag(flag: string, value: string): number {
  if (!/^\d+$/.test(value))
    throw userError('BAD_ARGUMENT', `--${flag} must be a non-negative integer, got ${JSON.stringify(value)}`, `e.g. --${flag} 2`);
  return Number(value);
}

/** Only flags the user gave become options, so the model's own declarations decide what is valid. */
export function zooOptionsFromFlags(flags: BuildFlags): ZooOptionValues {
  const opts: Record<string, number | boolean> = {};
  for (const name of ['resolution', 'layers', 'sequence', 'seed'] as const) {
    const v = flags[name];
    if (v !== undefined) opts[name] = integerFlag(name, v);
  }
  if (flags.embeddings) opts['embeddings'] = true;
  if (flags.branch5x5) opts['branch5x5'] = true;
  return opts;
}

export function registerZooCommand(program: Command): void {
  const zoo = program.command('zoo').description('the evaluation models as real ONNX files (seeded weights)');
  zoo
    .command('list')
    .description('list the zoo models and their options')
    .option('--json', 'machine-readable output on stdout')
    .action((opts: { json?: boolean }) => {
      const rows = zooModels.map((m) => ({
        name: m.name,
        description: m.description,
        reference: m.reference,
        inputs: m.inputs().map((v) => ({ name: v.name, dtype: v.dtype, shape: v.shape ?? [] })),
        options: m.options.map((o) => ({ name: o.name, kind: o.kind, default: o.default, description: o.description })),
      }));
      if (opts.json) return printJson({ models: rows });
      printLine(
        formatTable([
          ['name', 'inputs', 'options', 'description'],
          ...rows.map((r) => [
            r.name,
            r.inputs.map((i) => `${i.name}[${i.shape.join('x')}]`).join(' '),
            r.options.map((o) => `${o.name}=${o.default}`).join(' '),
            r.description,
          ]),
        ]),
      );
    });
  zoo
    .command('build')
    .description('write one zoo model as an ONNX file')
    .argument('<name>', 'model name (see `veltair zoo list`)')
    .requiredOption('-o, --output <file>', 'output .onnx path')
    .option('--resolution <px>', 'input resolution (ssd_resnet34)')
    .option('--layers <n>', 'encoder layers (bert_large)')
    .option('--sequence <n>', 'sequence length (bert_large)')
    .option('--embeddings', 'include the embedding layers and int64 input_ids (bert_large)')
    .option('--branch5x5', "the paper's 5x5 inception branch instead of torchvision's 3x3 (googlenet)")
    .option('--seed <n>', 'weight seed (default 1)')
    .option('--force', 'overwrite an existing output file')
    .option('--json', 'machine-readable output on stdout')
    .action(async (name: string, flags: BuildFlags) => {
      findZooModel(name);
      if (existsSync(flags.output) && !flags.force) {
        throw userError('OUTPUT_EXISTS', `${flags.output} already exists`, 'pass --force to overwrite it, or choose another -o path');
      }
      const written = await writeZooModel(name, flags.output, zooOptionsFromFlags(flags));
      if (flags.json) printJson({ model: name, path: written.path, bytes: written.bytes });
      else printLine(`wrote ${written.path} (${(written.bytes / 1e6).toFixed(1)} MB)`);
    });
}
