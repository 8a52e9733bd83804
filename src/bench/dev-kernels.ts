/**
 * Developer benchmark (not a test): times a few ResNet-50 / MobileNet-V2 layers for a handful of
 * schedules, single thread by default, next to ONNX Runtime and the measured FMA peak, in one run.
 *   npx tsc -p . && node dist/src/bench/dev-kernels.js [--threads 1] [--layers r3x3_56,r1x1_56a] [--min-ms 100] [--extra N] [--rounds 2]
 *     [--try '{"tileOc":8,"loopOrder":"spatial_outer"}' …]  (extra schedules: overrides of the default, ';'-separated)
 * Every schedule is measured --rounds times, interleaved (A B C … A B C …), and each row reports the
 * best round's median; ORT is measured before and after. On a shared machine the numbers drift:
 * compare rows of the same run only.
 */
import { withKey, workloadMacs, type WorkloadShape } from '../ir/workload.js';
import { makeCandidate } from '../space/candidate.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy } from '../space/presets.js';
import { problemOf } from '../space/problem.js';
import { seededRng } from '../random.js';
import { registerTiles, repair, type Schedule, sampleSchedules } from '../space/knobs.js';
import { detectTarget } from '../toolchain/target.js';
import { measureCandidates } from '../measure/measure-candidates.js';
import { measurePeakGflops } from '../measure/peak.js';
import { measureOrtLayer } from '../ort/layer.js';

function conv(
  cin: number,
  hw: number,
  cout: number,
  k: number,
  stride: number,
  groups = 1,
  epilogue: WorkloadShape['epilogue'] = ['bias', 'relu'],
  pad = (k - 1) >> 1,
): WorkloadShape {
  const o = Math.floor((hw + 2 * pad - k) / stride) + 1;
  return {
    op: 'conv2d',
    dtype: 'float32',
    n: 1,
    cin,
    h: hw,
    w: hw,
    cout,
    kh: k,
    kw: k,
    strideH: stride,
    strideW: stride,
    pads: [pad, pad, pad, pad],
    dilationH: 1,
    dilationW: 1,
    groups,
    oh: o,
    ow: o,
    epilogue,
  };
}

const LAYERS: Record<string, WorkloadShape> = {
  r_conv1: conv(3, 224, 64, 7, 2),
  r3x3_56: conv(64, 56, 64, 3, 1),
  r3x3_28: conv(128, 28, 128, 3, 1),
  r3x3_14: conv(256, 14, 256, 3, 1),
  r3x3_7: conv(512, 7, 512, 3, 1),
  r1x1_56a: conv(64, 56, 256, 1, 1, 1, ['bias']),
  r1x1_56b: conv(256, 56, 64, 1, 1),
  r1x1_28: conv(512, 28, 128, 1, 1),
  r1x1_14: conv(1024, 14, 256, 1, 1),
  r1x1_7: conv(2048, 7, 512, 1, 1),
  r1x1_s2: conv(256, 56, 512, 1, 2, 1, ['bias']),
  mb_dw_112: conv(96, 112, 96, 3, 2, 96, ['bias', 'clip']),
  mb_dw_56: conv(144, 56, 144, 3, 1, 144, ['bias', 'clip']),
  mb_dw_14: conv(576, 14, 576, 3, 1, 576, ['bias', 'clip']),
  mb_dw_7: conv(960, 7, 960, 3, 1, 960, ['bias', 'clip']),
  mb_pw_56: conv(144, 56, 24, 1, 1, 1, ['bias']),
  mb_pw_14: conv(96, 14, 576, 1, 1, 1, ['bias', 'clip']),
  bert_qkv: { op: 'dense', dtype: 'float32', m: 384, k: 768, n: 768, epilogue: ['bias'] },
  bert_ffn1: { op: 'dense', dtype: 'float32', m: 384, k: 768, n: 3072, epilogue: ['bias', 'gelu'] },
  bert_scores: { op: 'batch_matmul', dtype: 'float32', batch: 12, m: 384, k: 64, n: 384, transB: true, epilogue: [] },
  bert_context: { op: 'batch_matmul', dtype: 'float32', batch: 12, m: 384, k: 384, n: 64, transB: false, epilogue: [] },
  fc_1000: { op: 'dense', dtype: 'float32', m: 1, k: 2048, n: 1000, epilogue: ['bias'] },
};

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const target = await detectTarget();
const threads = Number(arg('--threads', '1'));
const minMs = Number(arg('--min-ms', '100'));
const extra = Number(arg('--extra', '4'));
const rounds = Number(arg('--rounds', '2'));
const names = arg('--layers', Object.keys(LAYERS).join(',')).split(',').filter(Boolean);
// --conv cin,hw,cout,k,stride[,groups,pad]: an ad-hoc conv layer, named by its numbers
for (const spec of arg('--conv', '').split(';').filter(Boolean)) {
  const [cin, hw, cout, k, stride, groups, pad] = spec.split(',').map(Number) as number[];
  LAYERS[`conv_${spec}`] = conv(cin!, hw!, cout!, k!, stride!, groups ?? 1, ['bias', 'relu'], pad ?? (k! - 1) >> 1);
  names.push(`conv_${spec}`);
}
const cores = Array.from({ length: threads }, (_, i) => i);
const peak = await measurePeakGflops({ cores, threads });
console.log(`target ${target.cpuModel} cores=${target.cores} | FMA peak ${peak.gflops.toFixed(1)} GFLOP/s on ${threads} thread(s)`);

for (const name of names) {
  const w = withKey(LAYERS[name]!);
  const flops = 2 * workloadMacs(w);
  const schedules: Schedule[] = [
    defaultTableRefresh(w, target, threads),
    localityGreedy(w, target, threads),
    parallelHeavy(w, target, threads),
  ];
  const p = problemOf(w, schedules[0]!.vec);
  for (const reg of registerTiles(p, target).slice(0, 3)) schedules.push(repair({ ...schedules[0]!, ...reg }, w, target));
  for (const o of arg('--try', '').split(';').filter(Boolean)) {
    schedules.push(repair({ ...schedules[0]!, ...(JSON.parse(o) as Partial<Schedule>) }, w, target));
  }
  schedules.push(...sampleSchedules(w, target, extra, seededRng(7)).map((s) => repair({ ...s, threads }, w, target)));
  const unique = [...new Map(schedules.map((s) => [JSON.stringify(s), s])).values()];
  const cands = unique.map((s) => makeCandidate(w, s, target));
  const ort1 = await measureOrtLayer(w, { threads, minMs });
  const interleaved = Array.from({ length: rounds }, () => cands).flat();
  const all = await measureCandidates(interleaved, { cores, minTimeMs: minMs });
  const res = all.slice(0, cands.length).map((r, i) => {
    const oks = all
      .filter((_, j) => j % cands.length === i)
      .map((x) => x.measurement)
      .filter((m) => m.status === 'ok');
    const bestRound = oks.reduce((a, b) => (b.medianMs! < a.medianMs! ? b : a), oks[0] ?? r.measurement);
    return { ...r, measurement: bestRound };
  });
  const ort2 = await measureOrtLayer(w, { threads, minMs });
  const ortMs = Math.min(ort1.medianMs, ort2.medianMs);
  let best = Infinity;
  let bestSchedule: Schedule | undefined;
  for (const r of res) {
    const m = r.measurement;
    const s = r.candidate.schedule;
    const desc =
      `v${s.vec} reg ${s.regOc}x${s.regCols} tile ic${s.tileIc} oc${s.tileOc} r${s.tileRows} c${s.tileCols} ` +
      `${s.loopOrder} ${s.parallelAxis} u${s.unroll} t${s.threads}`;
    if (m.status !== 'ok') {
      console.log(`  ${name} ${desc}: ${m.status} ${m.message ?? ''}`);
      continue;
    }
    if (m.medianMs! < best) {
      best = m.medianMs!;
      bestSchedule = s;
    }
    const gf = flops / (m.medianMs! * 1e6);
    console.log(`  ${name} ${desc}: ${m.medianMs!.toFixed(3)} ms ${gf.toFixed(1)} GFLOP/s ${((100 * gf) / peak.gflops).toFixed(0)}% peak`);
  }
  const gf = flops / (best * 1e6);
  console.log(
    `${name}: best ${best.toFixed(3)} ms ${gf.toFixed(1)} GFLOP/s (${((100 * gf) / peak.gflops).toFixed(0)}% of peak) | ` +
      `ORT ${ortMs.toFixed(3)} ms | ratio ${(best / ortMs).toFixed(2)}`,
  );
  console.log(`  best schedule ${JSON.stringify(bestSchedule)}`);
}
