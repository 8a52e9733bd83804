/**
 * The VELTAIR authors' per-layer profile (a CSV extracted from their artifact, see
 * ../shared/reference/veltair-3990x-resnet50-profile.csv) as a scheduling profile. Every figure
 * is labelled `artifact`: it was measured by them, on their 64-core Threadripper 3990X, with TVM
 * kernels — never by this project. The file has one row per convolution (shapes as
 * H-W-Cin-Cout-KH-KW-padH-padW-strideH-strideW) and columns `us_<cores>`; `#` lines are comments.
 * Each convolution becomes one tunable step with a single version; analytic flops and bytes come
 * from its shape (float32). Pure: takes the text.
 */
import { userError } from '../errors.js';
import {
  PROFILE_FORMAT,
  PROFILE_FORMAT_VERSION,
  checkProfile,
  type LatencyFigure,
  type Profile,
  type ProfileStep,
} from './scheduling-profile.js';

const SHAPE_FIELDS = ['h', 'w', 'cin', 'cout', 'kh', 'kw', 'pad_h', 'pad_w', 'stride_h', 'stride_w'] as const;

const bad = (where: string, line: number, problem: string) =>
  userError(
    'BAD_PROFILE',
    `${where}:${line}: ${problem}`,
    'the artifact CSV has a header `layer,op,h,w,…,us_8,…` and one row per convolution',
  );

export function parseArtifactCsv(text: string, where: string, modelName = 'resnet50'): Profile {
  const lines = text
    .split(/\r?\n/)
    .map((l, i) => ({ l: l.trim(), n: i + 1 }))
    .filter((x) => x.l !== '' && !x.l.startsWith('#'));
  if (lines.length < 2) throw bad(where, 1, 'no header and rows found');
  const header = lines[0]!.l.split(',');
  const col = (name: string) => header.indexOf(name);
  for (const f of ['layer', ...SHAPE_FIELDS]) if (col(f) < 0) throw bad(where, lines[0]!.n, `header has no column ${JSON.stringify(f)}`);
  const coreCols = header
    .map((h, i) => ({ h, i }))
    .filter((x) => /^us_\d+$/.test(x.h))
    .map((x) => ({ cores: Number(x.h.slice(3)), i: x.i }));
  if (coreCols.length === 0) throw bad(where, lines[0]!.n, 'header has no us_<cores> columns');
  const steps: ProfileStep[] = lines.slice(1).map(({ l, n }, index) => {
    const cells = l.split(',');
    if (cells.length !== header.length) throw bad(where, n, `has ${cells.length} fields, the header ${header.length}`);
    const num = (name: string) => {
      const v = Number(cells[col(name)]);
      if (!Number.isFinite(v) || v < 0)
        throw bad(where, n, `field ${name} is ${JSON.stringify(cells[col(name)])}, not a non-negative number`);
      return v;
    };
    const [h, w, cin, cout, kh, kw, ph, pw, sh, sw] = SHAPE_FIELDS.map(num) as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    if (sh < 1 || sw < 1) throw bad(where, n, 'strides must be ≥ 1');
    const oh = Math.floor((h + 2 * ph - kh) / sh) + 1,
      ow = Math.floor((w + 2 * pw - kw) / sw) + 1;
    const macs = oh * ow * cin * cout * kh * kw;
    const bytes = 4 * (h * w * cin + oh * ow * cout + cin * cout * kh * kw);
    const latency: Record<string, Record<string, LatencyFigure>> = {};
    for (const c of coreCols) {
      const us = Number(cells[c.i]);
      if (!(us > 0)) throw bad(where, n, `field us_${c.cores} is ${JSON.stringify(cells[c.i])}, not a positive number`);
      latency[String(c.cores)] = { '0': { us, source: 'artifact' } };
    }
    return {
      index,
      name: `conv${cells[col('layer')]} ${kh}x${kw} ${cin}>${cout} s${sh} ${h}x${w}`,
      op: 'conv2d',
      kind: 'tunable',
      layer: null,
      flops: 2 * macs,
      bytes,
      footprintBytes: bytes,
      versions: [{ id: 'artifact', symbol: null, tunedThreads: null, parallelChunks: null, latencyUs: latency }],
    };
  });
  return checkProfile(
    {
      format: PROFILE_FORMAT,
      formatVersion: PROFILE_FORMAT_VERSION,
      model: { name: modelName, sha256: null, manifestSha256: null },
      machine: {
        description: "AMD Ryzen Threadripper 3990X (64 cores), figures from the VELTAIR authors' artifact",
        cores: 64,
        l3Bytes: null,
        source: 'artifact',
      },
      method: `taken from the VELTAIR artifact (${where}); TVM auto-scheduler kernels; ${steps.length} convolutions only, no other ops; no interference levels`,
      coreCounts: coreCols.map((c) => c.cores),
      levels: [],
      claimCost: null,
      steps,
    } satisfies Profile,
    where,
  );
}
