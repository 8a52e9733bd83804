/**
 * The runtime's non-tunable ops against the machine's copy bandwidth ("fast non-tunable
 * ops … at a stated fraction of memory bandwidth"). Each bundle's steps are timed in the model, as
 * step-times.ts times them (R runs after a warm-up, level-0 versions, --threads N), and each
 * non-kernel step's bytes moved come from the graph plan (bytesMoved). In the same run, memcpy is
 * timed on the same cores for a buffer of the same size (copy-bandwidth.ts; sizes grouped to
 * steps of √2), warm as the op's input is (the step before it just wrote it). Per op kind: the bytes
 * moved per second, and the fraction of copy bandwidth = the time memcpy takes to move the same
 * bytes / the time the op took.
 *   node dist/src/bench/op-bandwidth.js BUNDLE… [--threads 1] [--runs 20] [--json]
 * A timing: run it under the benchmark lock (`flock -x "$BENCH_LOCK" …`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GraphPlan } from '../bundle/plan.js';
import { measureCopyBandwidth } from '../measure/copy-bandwidth.js';
import { availableCores } from '../toolchain/cpu.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { profileSteps } from './step-times.js';

type PlanStep = GraphPlan['steps'][number];

/**
 * Ops that read only what they write (the selected lanes, rows or elements): a channel gather takes
 * each output channel from one input, a Gather takes rows of its table, a slice a part of its input.
 */
const READS_WHAT_IT_WRITES = new Set(['channelgather', 'gather', 'slice', 'split']);

/**
 * Bytes a step reads and writes, from the plan's value sizes (blocked values at their padded size,
 * as the arena holds them): its outputs once, and its distinct inputs once, except for the
 * selecting ops, which read as much as they write. A step with no output moves nothing.
 */
export function bytesMoved(step: Pick<PlanStep, 'inputs' | 'outputs'>, kind: string, valueBytes: (id: number) => number): number {
  const written = step.outputs.reduce((s, v) => s + valueBytes(v), 0);
  if (written === 0) return 0;
  const read = READS_WHAT_IT_WRITES.has(kind) ? written : [...new Set(step.inputs)].reduce((s, v) => s + valueBytes(v), 0);
  return read + written;
}

/** The copy size that stands for `moved` bytes (a copy of N bytes moves 2N), on a grid of √2 steps. */
export function copySizeFor(moved: number): number {
  const n = Math.max(64, moved / 2);
  return Math.round(2 ** (Math.round(Math.log2(n) * 2) / 2));
}

export interface KindBandwidth {
  readonly kind: string;
  readonly steps: number;
  readonly ms: number;
  readonly mbMoved: number;
  /** Bytes moved per second by the op (GB/s). */
  readonly gbps: number;
  /** memcpy's time for the same bytes / the op's time. */
  readonly copyFraction: number;
}

export async function opBandwidth(
  bundle: string,
  runs: number,
  threads: number,
): Promise<{ totalMs: number; otherMs: number; kinds: KindBandwidth[] }> {
  const manifest = JSON.parse(await readFile(join(bundle, 'manifest.json'), 'utf8')) as { graphPlan: GraphPlan };
  const plan = manifest.graphPlan;
  const bytesOf = new Map(plan.values.map((v) => [v.id, v.bytes]));
  const profile = await profileSteps(bundle, runs, threads);
  const others = profile.steps
    .filter((s) => s.profiledMs === undefined && s.planStep !== undefined)
    .map((s) => {
      const p = plan.steps[s.planStep!]!;
      return { kind: s.kind, ms: s.meanMs, moved: bytesMoved(p, s.kind, (id) => bytesOf.get(id) ?? 0) };
    });
  const bw = await measureCopyBandwidth(
    others.filter((o) => o.moved > 0).map((o) => copySizeFor(o.moved)),
    { cores: availableCores().slice(0, threads), ms: 10, reps: 3 },
  );
  const byKind = new Map<string, { steps: number; ms: number; moved: number; copyMs: number }>();
  for (const o of others) {
    const k = byKind.get(o.kind) ?? { steps: 0, ms: 0, moved: 0, copyMs: 0 };
    const gbps = o.moved > 0 ? bw.get(copySizeFor(o.moved))! : 0;
    byKind.set(o.kind, {
      steps: k.steps + 1,
      ms: k.ms + o.ms,
      moved: k.moved + o.moved,
      copyMs: k.copyMs + (gbps > 0 ? o.moved / gbps / 1e6 : 0),
    });
  }
  const kinds = [...byKind]
    .map(([kind, k]) => ({
      kind,
      steps: k.steps,
      ms: k.ms,
      mbMoved: k.moved / 1e6,
      gbps: k.ms > 0 ? k.moved / k.ms / 1e6 : 0,
      copyFraction: k.ms > 0 ? k.copyMs / k.ms : 0,
    }))
    .sort((a, b) => b.ms - a.ms);
  return { totalMs: profile.totalMs, otherMs: profile.otherMs, kinds };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const valued = new Set(['--threads', '--runs']);
  const bundles = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !valued.has(all[i - 1] ?? ''));
  if (bundles.length === 0) {
    process.stderr.write('usage: node dist/src/bench/op-bandwidth.js BUNDLE… [--threads 1] [--runs 20] [--json]\n');
    process.exit(1);
  }
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const threads = arg('--threads', 1),
    runs = arg('--runs', 20);
  const results = [];
  for (const b of bundles) results.push({ bundle: b, ...(await opBandwidth(b, runs, threads)) });
  // The hierarchy for context: a cache-resident copy and one that must go to memory.
  const levels = await measureCopyBandwidth([64 * 1024, 1024 * 1024, 64 * 1024 * 1024], {
    cores: availableCores().slice(0, threads),
    ms: 20,
    reps: 3,
  });
  const reference = [...levels].map(([n, g]) => `${n >= 1 << 20 ? `${n >> 20} MiB` : `${n >> 10} KiB`} ${g.toFixed(1)} GB/s`).join(', ');
  if (process.argv.includes('--json')) {
    process.stdout.write(
      JSON.stringify({ machine: await machineInfo(), threads, runs, copyGbps: Object.fromEntries(levels), results }) + '\n',
    );
  } else {
    const lines = [
      `machine: ${machineLine(await machineInfo())}; ${threads} thread(s), mean of ${runs} profiled runs`,
      `memcpy on the same cores (bytes moved per second, warm): ${reference}`,
      '',
      '| bundle | op | steps | ms | MB moved | GB/s | fraction of memcpy at the same sizes |',
      '|---|---|---|---|---|---|---|',
    ];
    for (const r of results) {
      for (const k of r.kinds) {
        const fraction = k.mbMoved > 0 ? `${(k.copyFraction * 100).toFixed(0)}%` : '(moves nothing)';
        const name = r.bundle.split('/').pop();
        lines.push(
          `| ${name} | ${k.kind} | ${k.steps} | ${k.ms.toFixed(4)} | ${k.mbMoved.toFixed(2)} | ${k.gbps.toFixed(1)} | ${fraction} |`,
        );
      }
    }
    process.stdout.write(lines.join('\n') + '\n');
  }
}
