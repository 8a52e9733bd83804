/**
 * `veltair quantize MODEL.onnx -o OUT.onnx --calibrate DIR | --generated N [--method minmax|percentile]`:
 * static post-training quantization into a standard QDQ model (see docs/quantize.md).
 *
 * Calibration inputs: for a one-input model, every .npy / .pb file in DIR is one sample; for a model
 * with several inputs, every sub-directory of DIR is one sample holding one file per input, named
 * after it (NAME.npy or NAME.pb). Files are read in name order; a float64 .npy is narrowed to float32.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, basename } from 'node:path';
import type { Command } from 'commander';
import { quoteForMessage, userError } from '../errors.js';
import { writeFileAtomic } from '../atomic-file.js';
import { decodeModel } from '../onnx/decode.js';
import type { ValueInfo } from '../onnx/model.js';
import type { HostTensor } from '../runtime/host-tensor.js';
import { generatedSamples, quantizeModel, type CalibrationSample } from '../quantize/quantize-model.js';
import type { CalibrationMethod } from '../quantize/ranges.js';
import { printJson, printLine } from '../terminal/output.js';
import { readInputFile } from './run.js';

interface QuantizeFlags {
  readonly output: string;
  readonly calibrate?: string;
  readonly generated?: string;
  readonly method: string;
  readonly percentile?: string;
  readonly force?: boolean;
  readonly json?: boolean;
}

const isInputFile = (f: string): boolean => ['.npy', '.pb'].includes(extname(f).toLowerCase());

function asFloat32(t: HostTensor): HostTensor {
  return t.dtype === 'float64' ? { dtype: 'float32', shape: t.shape, data: Float32Array.from(t.data as Float64Array) } : t;
}

/** Calibration samples from DIR (layout in the header comment). */
export function readCalibrationDir(dir: string, inputs: readonly ValueInfo[]): CalibrationSample[] {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
    entries = readdirSync(dir).sort();
  } catch {
    throw userError(
      'FILE_NOT_FOUND',
      `--calibrate ${quoteForMessage(dir, 200)} is not a readable directory`,
      'pass a directory of .npy / .pb input files',
    );
  }
  if (inputs.length === 1) {
    const files = entries.filter(isInputFile);
    if (files.length === 0)
      throw userError(
        'BAD_INPUT',
        `${quoteForMessage(dir, 200)} holds no .npy or .pb files`,
        'save each calibration input with numpy.save',
      );
    return files.map((f) => ({ [inputs[0]!.name]: asFloat32(readInputFile(join(dir, f))) }));
  }
  const samples = entries.filter((e) => statSync(join(dir, e)).isDirectory());
  if (samples.length === 0)
    throw userError(
      'BAD_INPUT',
      `${quoteForMessage(dir, 200)} holds no sample directories`,
      'for a model with several inputs, put one directory per sample holding NAME.npy for each input',
    );
  return samples.map((s) => {
    const files = readdirSync(join(dir, s)).filter(isInputFile);
    return Object.fromEntries(
      inputs.map((i) => {
        const f = files.find((x) => basename(x, extname(x)) === i.name);
        if (f === undefined)
          throw userError(
            'MISSING_INPUT',
            `${quoteForMessage(join(dir, s), 200)} has no file for input ${quoteForMessage(i.name)}`,
            `add ${i.name}.npy (or .pb) to every sample directory`,
          );
        return [i.name, asFloat32(readInputFile(join(dir, s, f)))];
      }),
    );
  });
}

function parseMethod(m: string): CalibrationMethod {
  if (m !== 'minmax' && m !== 'percentile')
    throw userError('BAD_ARGUMENT', `--method must be minmax or percentile, got ${quoteForMessage(m, 40)}`, 'e.g. --method percentile');
  return m;
}

function parseCount(flag: string, v: string, max: number): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > max)
    throw userError('BAD_ARGUMENT', `--${flag} must be an integer from 1 to ${max}, got ${quoteForMessage(v, 40)}`, `e.g. --${flag} 8`);
  return n;
}

function parsePercentile(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const p = Number(v);
  if (!(p > 50 && p <= 100))
    throw userError('BAD_ARGUMENT', `--percentile must be in (50, 100], got ${quoteForMessage(v, 40)}`, 'e.g. --percentile 99.99');
  return p;
}

export function registerQuantizeCommand(program: Command): void {
  program
    .command('quantize')
    .description('static post-training quantization into a standard QDQ model (s8 per-channel weights, u8 activations)')
    .argument('<model>', 'float ONNX model')
    .requiredOption('-o, --output <file>', 'the quantized .onnx to write')
    .option('--calibrate <dir>', 'calibration inputs: .npy / .pb files (one-input model) or one directory per sample')
    .option('--generated <n>', 'calibrate on N deterministic generated inputs instead')
    .option('--method <method>', 'activation ranges: minmax or percentile', 'minmax')
    .option('--percentile <p>', 'with --method percentile: the upper percentile kept (default 99.99)')
    .option('--force', 'overwrite an existing output file')
    .option('--json', 'machine-readable output on stdout')
    .action(async (file: string, flags: QuantizeFlags) => {
      const method = parseMethod(flags.method);
      const percentile = parsePercentile(flags.percentile);
      if ((flags.calibrate === undefined) === (flags.generated === undefined))
        throw userError('BAD_ARGUMENT', 'veltair quantize needs exactly one of --calibrate DIR and --generated N', 'e.g. --generated 8');
      if (existsSync(flags.output) && !flags.force)
        throw userError('OUTPUT_EXISTS', `${flags.output} already exists`, 'pass --force to overwrite it, or choose another -o path');
      let bytes: Uint8Array;
      try {
        bytes = readFileSync(file);
      } catch {
        throw userError('FILE_NOT_FOUND', `${quoteForMessage(file, 200)} does not exist or is not readable`, 'check the model path');
      }
      const inputs = decodeModel(bytes, file).graph.inputs;
      const samples =
        flags.calibrate !== undefined
          ? readCalibrationDir(flags.calibrate, inputs)
          : generatedSamples(inputs, parseCount('generated', flags.generated!, 10_000));
      const r = await quantizeModel(bytes, file, { method, samples, ...(percentile !== undefined ? { percentile } : {}) });
      await writeFileAtomic(flags.output, r.bytes);
      const summary = {
        model: file,
        output: flags.output,
        method,
        samples: r.samples,
        activations: r.activations,
        weights: r.weights,
        biases: r.biases,
        batchNormsFolded: r.batchNormsFolded,
      };
      if (flags.json) printJson(summary);
      else
        printLine(
          `wrote ${flags.output}: ${r.weights} weights (s8, per channel), ${r.activations} activations (u8, ${method} over ${r.samples} inputs)`,
        );
    });
}
