/**
 * Streaming reader for the Extreme Classification Repository format:
 *   [samples features labels]            optional header line
 *   label,label,… feat:val feat:val …     one sample per line (labels may be empty: " 3:1 7:0.5")
 * Two passes over the file: the first checks every line (naming its number and what is wrong) and
 * counts, the second fills exactly-sized CSR arrays. So a 1 GB file is never held in memory, not
 * even once (only its CSR form is, ~8 bytes per feature), and nothing is allocated before the whole
 * file is known to be good. Both passes hash the bytes; if they differ the file changed under us.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { VeltairError, userError } from '../errors.js';

export interface XcHeader {
  readonly samples: number;
  readonly features: number;
  readonly labels: number;
}

export interface XcDataset {
  readonly path: string;
  readonly rows: number;
  /** CSR offsets [rows+1] into idx/val (float64: exact past 2^31 features). */
  readonly row: Float64Array;
  readonly idx: Int32Array;
  readonly val: Float32Array;
  readonly lrow: Float64Array;
  readonly labels: Int32Array;
  readonly header: XcHeader | null;
  readonly sha256: string;
  readonly bytes: number;
  readonly unlabelled: number;
}

export interface XcLimits {
  readonly inputDim: number;
  readonly outputDim: number;
  /** How the limits are named in errors, e.g. 'the spec\'s "input"'. */
  readonly inputName?: string;
  readonly outputName?: string;
}

const HINT =
  'each line is `label,label,… feature:value feature:value …` with 0-based integer labels and feature indices ' +
  '(the Extreme Classification Repository format); an optional first line `samples features labels` is the header';

interface Visitor {
  label(x: number): void;
  feature(i: number, v: number): void;
  end(): void;
}

const isDigits = (s: string) => /^\d+$/.test(s);
const quote = (s: string) => JSON.stringify(s.length > 40 ? s.slice(0, 40) + '…' : s);

/** Parse one (non-blank) data line; throws with file:line on anything malformed. */
function parseLine(s: string, where: string, limits: XcLimits, v: Visitor): void {
  const tokens = s.split(/[ \t]+/);
  let t = 0;
  if (tokens[0] === '') {
    t = 1; // leading blank: no labels
  } else if (!tokens[0]!.includes(':')) {
    t = 1;
    for (const lab of tokens[0]!.split(',')) {
      if (!isDigits(lab)) throw userError('BAD_DATA', `${where}: label ${quote(lab)} is not a non-negative integer`, HINT);
      const x = Number(lab);
      if (x >= limits.outputDim) {
        throw userError(
          'BAD_DATA',
          `${where}: label ${x} is ≥ the output dim ${limits.outputDim} (${limits.outputName ?? 'the output layer'})`,
          'labels are 0-based: make the output layer wider, or drop the samples whose labels are out of range',
        );
      }
      v.label(x);
    }
  }
  for (; t < tokens.length; t++) {
    const tok = tokens[t]!;
    if (tok === '') continue;
    const colon = tok.indexOf(':');
    if (colon <= 0 || colon === tok.length - 1 || tok.indexOf(':', colon + 1) >= 0) {
      throw userError('BAD_DATA', `${where}: ${quote(tok)} is not feature:value`, HINT);
    }
    const is = tok.slice(0, colon),
      vs = tok.slice(colon + 1);
    if (!isDigits(is)) throw userError('BAD_DATA', `${where}: feature index ${quote(is)} is not a non-negative integer`, HINT);
    const i = Number(is);
    if (i >= limits.inputDim) {
      throw userError(
        'BAD_DATA',
        `${where}: feature index ${i} is ≥ the input dim ${limits.inputDim} (${limits.inputName ?? 'the network input'})`,
        'feature indices are 0-based: raise the spec\'s "input", or drop those features',
      );
    }
    const val = Number(vs);
    if (vs.trim() === '' || (Number.isNaN(val) && !/^[+-]?(nan|inf)/i.test(vs))) {
      throw userError('BAD_DATA', `${where}: value ${quote(vs)} of feature ${i} is not a number`, HINT);
    }
    if (!Number.isFinite(val) || !Number.isFinite(Math.fround(val))) {
      throw userError(
        'BAD_DATA',
        `${where}: value ${quote(vs)} of feature ${i} is not finite (NaN and Inf cannot be trained on)`,
        'replace or drop the non-finite values (and values beyond float32 range) before training',
      );
    }
    v.feature(i, val);
  }
  v.end();
}

function parseHeader(s: string): XcHeader | null {
  const t = s.trim().split(/[ \t]+/);
  if (t.length !== 3 || !t.every(isDigits)) return null;
  return { samples: Number(t[0]), features: Number(t[1]), labels: Number(t[2]) };
}

async function eachLine(path: string, onLine: (line: string, n: number) => void): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0,
    n = 0;
  let rest = '';
  const stream = createReadStream(path, { highWaterMark: 1 << 20 });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      bytes += chunk.length;
      const text = rest + chunk.toString('latin1');
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        onLine(text.charCodeAt(nl - 1) === 13 ? text.slice(start, nl - 1) : text.slice(start, nl), ++n);
        start = nl + 1;
      }
      rest = text.slice(start);
    }
  } catch (e) {
    if (e instanceof VeltairError || (e as { code?: string }).code === undefined) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    throw userError(
      code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE',
      `cannot read ${path} (${code})`,
      'pass the path of an XC-format data file',
    );
  }
  if (rest.length > 0) onLine(rest.endsWith('\r') ? rest.slice(0, -1) : rest, n + 1);
  return { sha256: hash.digest('hex'), bytes };
}

export async function readXc(path: string, limits: XcLimits): Promise<XcDataset> {
  const info = await stat(path).catch((e: NodeJS.ErrnoException) => {
    throw userError(
      e.code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE',
      `cannot read ${path} (${e.code ?? String(e)})`,
      'pass the path of an XC-format data file',
    );
  });
  if (info.isDirectory())
    throw userError('FILE_UNREADABLE', `${path} is a directory, not a data file`, 'pass the path of an XC-format data file');
  // Pass 1: check and count.
  let header: XcHeader | null = null;
  let rows = 0,
    nnz = 0,
    nlab = 0,
    unlabelled = 0,
    firstContent = true,
    blankAt = 0;
  let rowLabels = 0;
  const counter: Visitor = {
    label() {
      nlab++;
      rowLabels++;
    },
    feature() {
      nnz++;
    },
    end() {
      rows++;
      if (rowLabels === 0) unlabelled++;
      rowLabels = 0;
    },
  };
  const first = await eachLine(path, (line, n) => {
    if (line.trim() === '') {
      blankAt ||= n;
      return;
    }
    if (blankAt) throw userError('BAD_DATA', `${path}:${blankAt}: empty line`, `${HINT}; blank lines may only end the file`);
    if (firstContent) {
      firstContent = false;
      header = parseHeader(line);
      if (header) {
        const h: XcHeader = header;
        if (h.features > limits.inputDim) {
          throw userError(
            'BAD_DATA',
            `${path}:${n}: the header declares ${h.features} features, ` +
              `more than the input dim ${limits.inputDim} (${limits.inputName ?? 'the network input'})`,
            'raise the spec\'s "input" to the header\'s feature count',
          );
        }
        if (h.labels > limits.outputDim) {
          throw userError(
            'BAD_DATA',
            `${path}:${n}: the header declares ${h.labels} labels, ` +
              `more than the output dim ${limits.outputDim} (${limits.outputName ?? 'the output layer'})`,
            "make the output layer as wide as the header's label count",
          );
        }
        return;
      }
    }
    parseLine(line, `${path}:${n}`, limits, counter);
  });
  if (rows === 0) {
    throw userError('BAD_DATA', `${path} has no samples${first.bytes === 0 ? ' (the file is empty)' : ''}`, HINT);
  }
  const h = header as XcHeader | null;
  if (h && h.samples !== rows) {
    throw userError(
      'BAD_DATA',
      `${path}: the header says ${h.samples} samples but the file has ${rows}`,
      'the file may be truncated; fix the header or regenerate the file',
    );
  }
  // Pass 2: fill.
  const row = new Float64Array(rows + 1),
    lrow = new Float64Array(rows + 1);
  const idx = new Int32Array(nnz),
    val = new Float32Array(nnz),
    labels = new Int32Array(nlab);
  let r = 0,
    f = 0,
    l = 0,
    seenHeader = false;
  const filler: Visitor = {
    label(x) {
      labels[l++] = x;
    },
    feature(i, v) {
      idx[f] = i;
      val[f] = v;
      f++;
    },
    end() {
      r++;
      row[r] = f;
      lrow[r] = l;
    },
  };
  const second = await eachLine(path, (line, n) => {
    if (line.trim() === '') return;
    if (h && !seenHeader) {
      seenHeader = true;
      return;
    }
    if (r >= rows || f > nnz || l > nlab) return;
    parseLine(line, `${path}:${n}`, limits, filler);
  });
  if (second.sha256 !== first.sha256 || r !== rows || f !== nnz || l !== nlab) {
    throw userError('BAD_DATA', `${path} changed while it was being read`, 'train from a file that is not being written to');
  }
  return { path, rows, row, idx, val, lrow, labels, header: h, sha256: first.sha256, bytes: first.bytes, unlabelled };
}

/** Bytes the CSR form of a data set holds in memory. */
export function datasetBytes(d: XcDataset): number {
  return d.row.byteLength + d.lrow.byteLength + d.idx.byteLength + d.val.byteLength + d.labels.byteLength;
}
