/**
 * What the plot tests share: a small in-memory manifest with hand-picked latencies (so every row a
 * data function returns can be checked by hand), its candidate profiles, and readers for what the
 * plot command writes — an XML well-formedness check, a PNG header, an RFC 4180 CSV parser.
 */
import { inflateSync } from 'node:zlib';
import type { Manifest, ManifestLayer, ManifestVersion } from '../src/bundle/manifest.js';
import type { BundleProfiles } from '../src/bundle/candidates-file.js';
import type { Schedule } from '../src/space/knobs.js';
import type { CandidateProfile } from '../src/tune/candidate-points.js';
import { fakeManifest } from './bundle-fixture.js';

export const NASTY_NAME = 'fc, "final" <b>&amp;\nnext\u0001';
const hex = (n: number) => n.toString(16).padStart(2, '0').repeat(32);
const schedule = {
  vec: 16,
  regOc: 1,
  regCols: 1,
  tileIc: 1,
  tileOc: 1,
  tileRows: 1,
  tileCols: 1,
  loopOrder: 'oc_outer',
  parallelAxis: 'oc',
  unroll: 1,
  threads: 1,
} as unknown as Schedule;
const CONV_KEY = 'conv2d-00000000000000aa';
const DENSE_KEY = 'dense-00000000000000bb';

interface Point {
  readonly id: number;
  readonly l2: number;
  readonly chunks: number;
  readonly ms: Readonly<Record<string, number>>;
  readonly threads?: number;
}

function version(p: Point, inPlan = true): ManifestVersion {
  return {
    id: hex(p.id),
    symbol: `vt_k${hex(p.id).slice(0, 16)}`,
    schedule,
    threads: p.threads ?? 1,
    workspaceBytes: 0,
    features: {
      footprintBytes: { l1: 1024, l2: p.l2, l3: p.l2, total: 4 * p.l2 },
      parallelChunks: p.chunks,
      threads: p.threads ?? 1,
      loadBalance: 1,
      arithmeticIntensity: 1,
      registerTile: 1,
      reductionSplit: 1,
      flops: 1e6,
    },
    latencyMs: p.ms,
    latencyByThreadsMs: { '1': p.ms['0']! },
    inPlan,
  };
}

function candidate(p: Point, kept: boolean, dominated: boolean, status: CandidateProfile['status'] = 'ok'): CandidateProfile {
  return {
    id: hex(p.id),
    status,
    schedule,
    threads: p.threads ?? 1,
    footprintBytes: { l1: 1024, l2: p.l2, l3: p.l2, total: 4 * p.l2 },
    parallelChunks: p.chunks,
    latencyMs: status === 'ok' ? p.ms : {},
    repeats: status === 'ok' ? Object.fromEntries(Object.keys(p.ms).map((l) => [l, 5])) : {},
    kept,
    dominated,
  };
}

// conv workload: v1 = locality-heavy (big tile, few chunks; best at level 1), v2 = parallelism-heavy (best
// quiet, and at level 2, though listed second); one dominated, one crashed.
const V1: Point = { id: 1, l2: 800 * 1024, chunks: 2, ms: { '0': 1.0, '1': 1.2, '2': 4.0 } };
const V2: Point = { id: 2, l2: 64 * 1024, chunks: 128, ms: { '0': 0.9, '1': 1.6, '2': 1.7 } };
const DOMINATED: Point = { id: 3, l2: 300 * 1024, chunks: 16, ms: { '0': 1.8, '1': 2.5, '2': 4.5 } };
const CRASHED: Point = { id: 4, l2: 100 * 1024, chunks: 32, ms: {} };
const DENSE: Point = { id: 5, l2: 40 * 1024, chunks: 8, ms: { '0': 0.5, '1': 0.6, '2': 0.7 } };
const DENSE_SLOW: Point = { id: 6, l2: 20 * 1024, chunks: 16, ms: { '0': 0.9, '1': 0.9, '2': 0.9 } };

function layer(
  index: number,
  name: string,
  op: string,
  workload: string | null,
  versions: ManifestVersion[],
  bestMs?: Record<string, number>,
): ManifestLayer {
  return {
    index,
    name,
    op,
    tunable: workload !== null,
    workload,
    inputs: [index],
    outputs: [index + 1],
    inputShapes: [[1, 64, 56, 56]],
    outputShape: [1, 64, 56, 56],
    dtype: 'float32',
    attrs: {},
    epilogue: [],
    epilogueParams: [],
    params: {},
    versions,
    ...(bestMs ? { family: { regretPercent: {}, bestMs, candidates: versions.length + 1, dominated: 1 } } : {}),
  };
}

/**
 * Layers: 0 conv (v1, v2), 1 relu (not tunable), 2 conv sharing layer 0's workload, 3 dense named
 * NASTY_NAME (one version).
 */
export function plotManifest(): Manifest {
  const base = fakeManifest({}, '0'.repeat(64));
  const convBest = { '0': 0.9, '1': 1.2, '2': 1.7 };
  return {
    ...base,
    options: { ...base.options, levels: [0, 1, 2], maxVersions: 5 },
    layers: [
      layer(0, 'conv_a', 'conv2d', CONV_KEY, [version(V1), version(V2)], convBest),
      layer(1, 'relu', 'relu', null, []),
      layer(2, 'conv,b', 'conv2d', CONV_KEY, [version(V1), version(V2)], convBest),
      layer(3, NASTY_NAME, 'dense', DENSE_KEY, [version(DENSE)], { '0': 0.5, '1': 0.6, '2': 0.7 }),
    ],
  };
}

export function plotProfiles(): BundleProfiles {
  return {
    format: 1,
    workloads: [
      {
        workload: CONV_KEY,
        timedSeconds: 1,
        candidates: [
          candidate(V1, true, false),
          candidate(V2, true, false),
          candidate(DOMINATED, false, true),
          candidate(CRASHED, false, false, 'crash'),
        ],
      },
      { workload: DENSE_KEY, timedSeconds: 1, candidates: [candidate(DENSE, true, false), candidate(DENSE_SLOW, false, true)] },
    ],
  };
}

/** Problems that make `xml` not well-formed (empty: fine). Enough XML for what vega writes. */
export function xmlProblems(xml: string): string[] {
  const problems: string[] = [];
  // eslint-disable-next-line no-control-regex -- these are exactly the characters XML forbids
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/.test(xml)) problems.push('a character XML forbids');
  const stack: string[] = [];
  const token = new RegExp(
    '<(\\/?)([A-Za-z_][\\w:.-]*)((?:\\s+[\\w:.-]+\\s*=\\s*(?:"[^"<]*"|\'[^\'<]*\'))*)\\s*(\\/?)>' +
      '|<!--[\\s\\S]*?-->|<\\?[\\s\\S]*?\\?>|<!DOCTYPE[^>]*>|<!\\[CDATA\\[[\\s\\S]*?\\]\\]>',
    'g',
  );
  let at = 0;
  const text = (t: string) => {
    if (t.includes('<')) problems.push(`raw '<' or malformed tag near ${JSON.stringify(t.slice(0, 60))}`);
    for (const m of t.matchAll(/&([^;\s]*);?/g)) {
      if (!/^&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);$/.test(m[0])) problems.push(`bad entity ${JSON.stringify(m[0].slice(0, 20))}`);
    }
  };
  for (const m of xml.matchAll(token)) {
    text(xml.slice(at, m.index));
    at = m.index! + m[0].length;
    if (!m[2]) continue;
    const [, close, name, attrs, selfClose] = m;
    for (const a of attrs!.matchAll(/"([^"]*)"|'([^']*)'/g)) text(a[1] ?? a[2] ?? '');
    if (close) {
      const open = stack.pop();
      if (open !== name) problems.push(`</${name}> closes <${open ?? 'nothing'}>`);
    } else if (!selfClose) stack.push(name!);
  }
  text(xml.slice(at));
  if (stack.length > 0) problems.push(`unclosed <${stack.join('>, <')}>`);
  if (!/^\s*(<\?xml[^>]*>\s*)?<svg[\s>]/.test(xml)) problems.push('does not start with <svg');
  return problems;
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Width and height from the IHDR chunk. */
export function pngSize(png: Buffer): { width: number; height: number } {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

export function svgSize(svg: string): { width: number; height: number } {
  const m = /<svg[^>]*\swidth="([\d.]+)"[^>]*\sheight="([\d.]+)"/.exec(svg);
  if (!m) throw new Error('svg has no width/height');
  return { width: Number(m[1]), height: Number(m[2]) };
}

/** RFC 4180: quoted fields may hold commas, CR/LF and doubled quotes; records end in CRLF. */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '',
    record: string[] = [],
    i = 0,
    quoted = false;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (c === '"') {
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '') {
      quoted = true;
      i++;
      continue;
    }
    if (c === ',') {
      record.push(field);
      field = '';
      i++;
      continue;
    }
    if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i += 2;
      continue;
    }
    if (c === '"' || c === '\n' || c === '\r') throw new Error(`unquoted ${JSON.stringify(c)} at ${i}`);
    field += c;
    i++;
  }
  if (field !== '' || record.length > 0) throw new Error('last record does not end in CRLF');
  return records;
}

/** Scatter points in the layer figure's panel (a): vega labels each with the x axis title. */
export function scatterPoints(svg: string): string[] {
  return [...svg.matchAll(/<path [^>]*aria-label="L2 tile footprint \(KiB\)[^"]*"[^>]*>/g)].map((m) => m[0]);
}

/** Decoded 8-bit RGB(A) PNG pixels (what resvg writes), unfiltered. */
export function decodePng(png: Buffer): { width: number; height: number; channels: number; pixels: Uint8Array } {
  const { width, height } = pngSize(png);
  const depth = png[24],
    colorType = png[25];
  if (depth !== 8 || (colorType !== 6 && colorType !== 2)) throw new Error(`unsupported PNG: depth ${depth}, color type ${colorType}`);
  const channels = colorType === 6 ? 4 : 3;
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at),
      type = png.toString('latin1', at + 4, at + 8);
    if (type === 'IDAT') idat.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels]! : 0;
      const p = a + b - c,
        pa = Math.abs(p - a),
        pb = Math.abs(p - b),
        pc = Math.abs(p - c);
      const predictor = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][filter]!;
      pixels[y * stride + x] = (line[x]! + predictor) & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

/** Pixels darker than mid-grey (opaque): ink on the white background. */
export function darkPixels(png: Buffer): number {
  const { channels, pixels } = decodePng(png);
  let n = 0;
  for (let i = 0; i < pixels.length; i += channels) {
    const opaque = channels === 3 || pixels[i + 3]! > 128;
    if (opaque && pixels[i]! + pixels[i + 1]! + pixels[i + 2]! < 3 * 128) n++;
  }
  return n;
}
