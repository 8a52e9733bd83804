/**
 * `veltair` entry point: builds the commander program from one file per command, runs it, and
 * turns every error into one clear line and an exit code (0 ok, 1 user/input error, 2 internal).
 */
import { Command, CommanderError } from 'commander';
import { reportError } from '../terminal/output.js';
import { VERSION } from '../version.js';
import { registerInspectCommand } from './inspect.js';
import { registerZooCommand } from './zoo.js';
import { registerNoiseCommand } from './noise.js';
import { registerDbCommand } from './db.js';
import { registerBenchLayersCommand } from './bench-layers.js';
import { registerCompileCommand } from './compile.js';
import { registerBenchCommand } from './bench.js';
import { registerRunCommand } from './run.js';
import { registerPlotCommand } from './plot.js';
import { registerReportCommand } from './report.js';
import { registerKeygenCommand } from './keygen.js';
import { registerSignCommand } from './sign.js';
import { registerServeCommand } from './serve.js';
import { registerLoadCommand } from './load.js';
import { registerSimulateCommand } from './simulate.js';
import { registerCalibrateServingCommand } from './calibrate-serving.js';
import { registerProfileCommand } from './profile.js';
import { registerTrainCommand } from './train.js';
import { registerDataCommand } from './data.js';
import { registerQuantizeCommand } from './quantize.js';

export type CommandRegistrar = (program: Command) => void;

const registrars: readonly CommandRegistrar[] = [
  registerInspectCommand,
  registerZooCommand,
  registerNoiseCommand,
  registerBenchLayersCommand,
  registerDbCommand,
  registerQuantizeCommand,
  registerCompileCommand,
  registerRunCommand,
  registerBenchCommand,
  registerPlotCommand,
  registerReportCommand,
  registerProfileCommand,
  registerSimulateCommand,
  registerCalibrateServingCommand,
  registerServeCommand,
  registerLoadCommand,
  registerKeygenCommand,
  registerSignCommand,
  registerTrainCommand,
  registerDataCommand,
];

export function buildProgram(): Command {
  const program = new Command('veltair')
    .description('Compile ONNX models into Pareto kernel families for multi-tenant CPU inference')
    .version(VERSION)
    .option('--verbose', 'print stacks with errors')
    .exitOverride()
    .showHelpAfterError();
  for (const register of registrars) register(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help / --version exit through here with code 0; usage errors are user errors.
      return e.exitCode === 0 ? 0 : 1;
    }
    return reportError(e, argv.includes('--verbose'));
  }
}
