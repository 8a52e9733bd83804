/**
 * Why the ONNX Runtime baseline runs with glibc malloc tunables (pinned-child.ts): the same
 * single-layer ORT model (ResNet-50's 1×1 conv 64→256 at 56×56 with bias, the layer the choice was
 * made on), same session options, same pinned core, timed in two children — one with glibc's
 * defaults, one with MALLOC_KEEP_TUNABLES — alternately for R rounds (defaults, tunables,
 * tunables, defaults, …). Each turn: one unreported warm-up measurement on first use, then runs for
 * at least --ms milliseconds; reported: the median per setting over rounds of each turn's median,
 * and the paired ratio defaults/tunables per round.
 *   node dist/src/bench/ort-malloc.js [--rounds 5] [--ms 300] [--threads 1] [--json]
 * A timing: run it under the benchmark lock (`flock -x "$BENCH_LOCK" …`).
 */
import { fileURLToPath } from 'node:url';
import { withKey, type Workload } from '../ir/workload.js';
import { median } from '../stats.js';
import { startOrtChild } from '../ort/layer-child.js';
import { MALLOC_KEEP_TUNABLES } from '../toolchain/malloc-tunables.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';

export const MALLOC_LAYER: Workload = withKey({
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin: 64,
  h: 56,
  w: 56,
  cout: 256,
  kh: 1,
  kw: 1,
  strideH: 1,
  strideW: 1,
  pads: [0, 0, 0, 0],
  dilationH: 1,
  dilationW: 1,
  groups: 1,
  oh: 56,
  ow: 56,
  epilogue: ['bias'],
});

export interface MallocComparison {
  readonly rounds: number;
  readonly defaultsMs: number;
  readonly tunablesMs: number;
  /** Median over rounds of defaults/tunables, with its range. */
  readonly ratio: { readonly median: number; readonly min: number; readonly max: number };
  readonly perRound: readonly { readonly defaultsMs: number; readonly tunablesMs: number }[];
  readonly pinned: boolean;
  readonly ortVersion: string;
}

export async function compareMalloc(o: {
  rounds: number;
  ms: number;
  threads: number;
  cores: readonly number[];
}): Promise<MallocComparison> {
  const plain = await startOrtChild(o.cores, { mallocTunables: false });
  const tuned = await startOrtChild(o.cores, { mallocTunables: true });
  try {
    const perRound: { defaultsMs: number; tunablesMs: number }[] = [];
    let version = 'unknown';
    for (let r = 0; r < o.rounds; r++) {
      const order = r % 2 === 0 ? [plain, tuned] : [tuned, plain];
      const got = new Map<unknown, number>();
      for (const child of order) {
        const t = await child.measure(MALLOC_LAYER, o.threads, o.ms);
        got.set(child, t.medianMs);
        version = t.ortVersion;
      }
      perRound.push({ defaultsMs: got.get(plain)!, tunablesMs: got.get(tuned)! });
    }
    const ratios = perRound.map((p) => p.defaultsMs / p.tunablesMs);
    return {
      rounds: o.rounds,
      defaultsMs: median(perRound.map((p) => p.defaultsMs)),
      tunablesMs: median(perRound.map((p) => p.tunablesMs)),
      ratio: { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) },
      perRound,
      pinned: plain.pinned && tuned.pinned,
      ortVersion: version,
    };
  } finally {
    await plain.close();
    await tuned.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const threads = arg('--threads', 1);
  const r = await compareMalloc({
    rounds: arg('--rounds', 5),
    ms: arg('--ms', 300),
    threads,
    cores: Array.from({ length: threads }, (_, i) => i),
  });
  if (process.argv.includes('--json')) process.stdout.write(JSON.stringify({ machine: await machineInfo(), ...r }) + '\n');
  else {
    process.stdout.write(
      [
        `machine: ${machineLine(await machineInfo())}`,
        `ONNX Runtime ${r.ortVersion}, ResNet-50 1x1 conv 64>256 56x56 +bias, ${threads} thread(s), ${r.pinned ? 'pinned' : 'NOT pinned'}, ` +
          `${r.rounds} alternating rounds`,
        `glibc defaults: ${r.defaultsMs.toFixed(3)} ms median; with ${MALLOC_KEEP_TUNABLES}: ${r.tunablesMs.toFixed(3)} ms median`,
        `paired ratio defaults/tunables: ${r.ratio.median.toFixed(2)} [${r.ratio.min.toFixed(2)}–${r.ratio.max.toFixed(2)}]`,
      ].join('\n') + '\n',
    );
  }
}
