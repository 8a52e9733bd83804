/**
 * The calibration inputs a sparse head's versions are measured on (`calibration`, `veltair compile --calibration FILE`):
 *  - FILE.npy: model inputs, float32 or float64, shaped [rows, W] (or [W]: one row), W the model
 *    input's width (its elements per batch row); no labels, so no precision@1;
 *  - any other FILE: the Extreme Classification format `veltair train` reads (`label,label feat:val …`),
 *    densified to W; its labels give precision@1;
 *  - no FILE, and the model was exported by `veltair train` with its training.json beside it: the
 *    held-out eval file it was trained with (else its training file), if it is still there
 *    unchanged (same sha256);
 *  - else seeded standard-normal inputs, said so in the compile output and in the bundle.
 * At most `rows` rows are used, evenly spaced over the file.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { userError } from '../errors.js';
import { seededRng } from '../random.js';
import { decodeNpy } from '../runtime/io-npy.js';
import { readXc, type XcDataset } from '../sparse/xc-reader.js';

export interface CalibrationInputs {
  readonly source: 'file' | 'training-data' | 'generated';
  readonly path: string | null;
  /** rows × width model inputs. */
  readonly inputs: Float32Array;
  readonly rows: number;
  readonly labels: readonly (readonly number[])[] | null;
  readonly note: string;
}

const evenly = (total: number, want: number): number[] => {
  const n = Math.min(total, want);
  return Array.from({ length: n }, (_, i) => Math.floor((i * total) / n));
};

function fromNpy(bytes: Uint8Array, path: string, width: number, want: number): CalibrationInputs {
  const t = decodeNpy(bytes, path);
  if (t.dtype !== 'float32' && t.dtype !== 'float64') {
    throw userError(
      'BAD_INPUT',
      `calibration file ${path} holds ${t.dtype}; model inputs are float32`,
      'save the inputs as float32 (numpy: x.astype("float32"))',
    );
  }
  const w = t.shape.length === 1 ? t.shape[0]! : t.shape.slice(1).reduce((a, b) => a * b, 1);
  const total = t.shape.length === 1 ? 1 : t.shape[0]!;
  if (w !== width || t.shape.length === 0 || total < 1) {
    throw userError(
      'BAD_INPUT',
      `calibration file ${path} has rows of ${w} values (shape [${t.shape.join(', ')}]), but the model input takes ${width}`,
      `save the calibration inputs as [rows, ${width}]`,
    );
  }
  const pick = evenly(total, want);
  const inputs = new Float32Array(pick.length * width);
  pick.forEach((r, i) => {
    for (let j = 0; j < width; j++) inputs[i * width + j] = Number(t.data[r * width + j]!);
  });
  return {
    source: 'file',
    path,
    inputs,
    rows: pick.length,
    labels: null,
    note: `${pick.length} rows of ${path} (no labels: no precision@1)`,
  };
}

function fromXc(d: XcDataset, width: number, want: number, source: CalibrationInputs['source'], what: string): CalibrationInputs {
  const pick = evenly(d.rows, want);
  const inputs = new Float32Array(pick.length * width);
  const labels = pick.map((r, i) => {
    for (let p = d.row[r]!; p < d.row[r + 1]!; p++) inputs[i * width + d.idx[p]!] = d.val[p]!;
    return Array.from(d.labels.subarray(d.lrow[r]!, d.lrow[r + 1]!));
  });
  return { source, path: d.path, inputs, rows: pick.length, labels, note: `${pick.length} rows of ${what} ${d.path}, with labels` };
}

async function fromTraining(
  modelDir: string | undefined,
  width: number,
  classes: number,
  want: number,
): Promise<CalibrationInputs | string> {
  if (modelDir === undefined) return 'the model was given as bytes, with no training.json beside it';
  const training = join(modelDir, 'training.json');
  if (!existsSync(training)) return 'no training.json beside the model';
  let info: { train?: { path?: unknown; sha256?: unknown }; eval?: { path?: unknown; sha256?: unknown } };
  try {
    info = JSON.parse(await readFile(training, 'utf8')) as typeof info;
  } catch {
    return `${training} is not readable JSON`;
  }
  for (const [part, what] of [
    [info.eval, 'the held-out eval file veltair train used'],
    [info.train, 'the training file veltair train used'],
  ] as const) {
    if (!part || typeof part.path !== 'string' || typeof part.sha256 !== 'string' || !existsSync(part.path)) continue;
    const d = await readXc(part.path, { inputDim: width, outputDim: classes });
    if (d.sha256 !== part.sha256) continue;
    return fromXc(d, width, want, 'training-data', what);
  }
  return `the data files ${training} names are gone or changed`;
}

function generated(width: number, rows: number, seed: number, why: string): CalibrationInputs {
  const rng = seededRng(seed);
  const inputs = new Float32Array(rows * width);
  for (let i = 0; i < inputs.length; i += 2) {
    const u = Math.max(rng.next(), 1e-12),
      v = rng.next(); // Box-Muller: two standard normals
    inputs[i] = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    if (i + 1 < inputs.length) inputs[i + 1] = Math.sqrt(-2 * Math.log(u)) * Math.sin(2 * Math.PI * v);
  }
  return {
    source: 'generated',
    path: null,
    inputs,
    rows,
    labels: null,
    note: `recall measured on ${rows} GENERATED inputs (seeded standard normal, seed ${seed}), not real data (${why}); pass --calibration FILE`,
  };
}

export async function calibrationInputs(o: {
  file: string | undefined;
  modelDir: string | undefined;
  width: number;
  classes: number;
  rows: number;
  seed: number;
}): Promise<CalibrationInputs> {
  if (o.file !== undefined) {
    let bytes: Uint8Array;
    try {
      bytes = await readFile(o.file);
    } catch (e) {
      throw userError(
        'FILE_NOT_FOUND',
        `cannot read calibration file ${o.file}: ${(e as Error).message}`,
        'pass an existing .npy or XC-format file',
      );
    }
    if (o.file.endsWith('.npy')) return fromNpy(bytes, o.file, o.width, o.rows);
    const d = await readXc(o.file, {
      inputDim: o.width,
      outputDim: o.classes,
      inputName: 'the model input width',
      outputName: "the output layer's classes",
    });
    return fromXc(d, o.width, o.rows, 'file', 'calibration file');
  }
  const trained = await fromTraining(o.modelDir, o.width, o.classes, o.rows);
  return typeof trained === 'string' ? generated(o.width, o.rows, o.seed, trained) : trained;
}
