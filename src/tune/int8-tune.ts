/**
 * INT8 tuning: each qconv2d / qmatmul layer's candidates from int8Space on the fastest INT8 path the
 * target runs (and the portable AVX2 path where it runs that too), generated, compiled by the system
 * cc into one driver per layer (measure/int8-driver.ts), run one at a time in a child process,
 * checked EXACTLY against the integer reference (ir/quant-reference.ts, which the caller hands in,
 * so the tuner stays free of how the reference is run) on a seeded input before
 * their time counts, and folded into a family of at most `maxVersions` non-dominated versions
 * (space/family.ts). Where the AVX2 path is tuned beside a faster one, its best version keeps one
 * slot of the family: the portable member.
 *
 * Each candidate is timed at the compile's thread count, at its levels back to back: level 0 (where
 * its output is checked) and, with a co-runner bank (interference/bank.ts, the FP32 tuner's), each
 * noisy level the bank's core plan leaves room for, with exactly that level's co-runner running.
 * INT8 records do not go to the tuning database (its records are keyed by FP32 workloads and schedules).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Layer } from '../ir/layer.js';
import { generateInt8Kernel, type Int8KernelSource } from '../codegen/int8-kernel.js';
import { int8Blob, packInt8, type Int8Blob } from '../codegen/int8-pack.js';
import { int8ProblemOf, type Int8Problem } from '../space/int8-problem.js';
import { int8BalancedSchedule, int8Space, repairInt8, type Int8Schedule } from '../space/int8-knobs.js';
import { int8Features } from '../space/int8-features.js';
import { selectFamily, type Family, type FamilyCandidate } from '../space/family.js';
import type { Int8Path } from '../toolchain/isa.js';
import { buildInt8Driver, timeInt8Candidate, type Int8Timing } from '../measure/int8-driver.js';
import { median } from '../stats.js';
import { kernelCores, measurableLevels, type LevelBank } from '../interference/bank.js';
import { seededRng, type Rng } from '../random.js';

/** The integer reference of a layer: its output, in the layer's own order (NCHW / row-major), from a u8 input in that order. */
export type Int8Reference = (l: Layer, x: Uint8Array) => ArrayLike<number>;

export interface Int8TuneOptions {
  readonly reference: Int8Reference;
  /** Usable INT8 paths of the target, fastest first (toolchain/isa.ts int8PathsAt). */
  readonly paths: readonly Int8Path[];
  /** Candidates per layer (split over the tuned paths). */
  readonly trials: number;
  readonly maxVersions: number;
  readonly threads: number;
  readonly cflags: readonly string[];
  readonly seed: number;
  /** Minimum timed window per candidate (default 100 ms, the measurement protocol's). */
  readonly minTimeMs?: number;
  readonly timeoutMs?: number;
  readonly onNote?: (m: string) => void;
  /** Levels to time at (default [0]); noisy ones need `bank`. */
  readonly levels?: readonly number[];
  readonly bank?: LevelBank;
}

/** One measured, exact INT8 candidate: what a bundle ships when it is kept. */
export interface Int8Version extends FamilyCandidate<Int8Schedule> {
  readonly kernel: Int8KernelSource;
  readonly blob: Int8Blob;
  /** Every repeat, per level measured. */
  readonly repeatsMs: Readonly<Record<string, readonly number[]>>;
}

export interface Int8LayerFamily {
  readonly layer: number;
  readonly problem: Int8Problem;
  readonly family: Family<Int8Version>;
  /** Candidates built, and how many failed (crash, timeout, or an output that differs from the reference). */
  readonly measured: number;
  readonly failed: number;
}

/** The paths tuned: the fastest usable, and AVX2 beside it when usable (the portable member). */
export function int8TuningPaths(usable: readonly Int8Path[]): Int8Path[] {
  const best = usable[0] ?? 'scalar';
  return best !== 'avx2' && usable.includes('avx2') ? [best, 'avx2'] : [best];
}

/**
 * `count` schedules of one path: the shape's balanced pick first (the one a two-trial budget must not
 * miss), then the two ends of the trade-off (one block per task; whole rows), then seeded picks between.
 */
function sampleSchedules(p: Int8Problem, path: Int8Path, count: number, rng: Rng): Int8Schedule[] {
  const space = int8Space(p, path);
  const ends = [
    int8BalancedSchedule(p, path),
    repairInt8(p, { path, regOc: 2, regCols: 4, tileOc: 1, tileCols: 1 }),
    repairInt8(p, { path, regOc: 4, regCols: 6, tileOc: 1 << 20, tileCols: 1 << 20 }),
  ];
  const out = new Map(ends.map((s) => [JSON.stringify(s), s]));
  for (let tries = 0; out.size < Math.min(count, space.length) && tries < 20 * count; tries++) {
    const s = rng.pick(space);
    out.set(JSON.stringify(s), s);
  }
  return [...out.values()].slice(0, Math.max(1, count));
}

/** A seeded u8 input of the layer (its NCHW / row-major form for the reference, NHWC for the kernel) and the reference output in NHWC. */
function checkData(l: Layer, p: Int8Problem, rng: Rng, reference: Int8Reference): { nhwc: Uint8Array; expected: Uint8Array } {
  const shape = l.inputShapes[0]!;
  const count = shape.reduce((a, b) => a * b, 1);
  const x = Uint8Array.from({ length: count }, () => rng.int(0, 255));
  const y = reference(l, x);
  const conv = l.op === 'qconv2d' && shape.length === 4;
  const nhwc = conv ? toChannelsLast(x, shape) : x;
  const yNhwc = conv ? toChannelsLast(Array.from(y), l.outputShape) : Array.from(y);
  const typed = p.outDtype === 'int32' ? Int32Array.from(yNhwc) : p.outDtype === 'int8' ? Int8Array.from(yNhwc) : Uint8Array.from(yNhwc);
  const bytes = new Uint8Array(typed.buffer);
  return { nhwc: Uint8Array.from(nhwc), expected: bytes };
}

function toChannelsLast<T extends ArrayLike<number>>(d: T, shape: readonly number[]): number[] {
  const [n, c, h, w] = shape as [number, number, number, number];
  const out = new Array<number>(d.length);
  for (let b = 0; b < n; b++)
    for (let ch = 0; ch < c; ch++) for (let q = 0; q < h * w; q++) out[(b * h * w + q) * c + ch] = d[(b * c + ch) * h * w + q]!;
  return out;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

export async function tuneInt8Layer(l: Layer, o: Int8TuneOptions): Promise<Int8LayerFamily> {
  const problem = int8ProblemOf(l);
  const rng = seededRng(o.seed + l.index);
  const paths = int8TuningPaths(o.paths);
  const per = Math.max(2, Math.ceil(o.trials / paths.length));
  const schedules = paths.flatMap((path) => sampleSchedules(problem, path, per, rng));
  const kernels = schedules.map((s) => generateInt8Kernel(problem, s));
  const { nhwc, expected } = checkData(l, problem, rng, o.reference);
  const dir = await mkdtemp(join(tmpdir(), 'veltair-int8-tune-'));
  const versions: Int8Version[] = [];
  let failed = 0;
  try {
    const exe = await buildInt8Driver(dir, problem, kernels, expected.length, o.cflags);
    await writeFile(join(dir, 'in.bin'), nhwc);
    const levels = o.bank ? measurableLevels(o.bank.plan, o.threads, o.levels ?? [0]) : [0];
    const cores = o.bank ? kernelCores(o.bank.plan, o.threads) : undefined;
    for (const [i, s] of schedules.entries()) {
      const blob = int8Blob(packInt8(l, problem, s));
      const k = kernels[i]!;
      const repeatsMs: Record<string, readonly number[]> = {};
      let failure: string | undefined;
      for (const level of levels) {
        await o.bank?.activate(level);
        let t: Int8Timing;
        try {
          t = await timeInt8Candidate(exe, dir, i, blob, {
            threads: o.threads,
            minTimeMs: o.minTimeMs ?? 100,
            timeoutMs: o.timeoutMs ?? 60_000,
            ...(cores ? { cores } : {}),
          });
        } finally {
          await o.bank?.quiesce();
        }
        if (t.status !== 'ok' || t.repeatsMs.length === 0) failure = `level ${level}: ${t.status} ${t.message ?? ''}`;
        else if (level === levels[0] && (!t.output || !sameBytes(t.output, expected)))
          failure = 'its output differs from the integer reference';
        if (failure) break;
        repeatsMs[String(level)] = t.repeatsMs;
      }
      if (failure) {
        failed++;
        o.onNote?.(`layer ${l.index} INT8 candidate ${k.symbol} failed: ${failure}`);
        continue;
      }
      versions.push({
        id: k.symbol,
        symbol: k.symbol,
        schedule: s,
        features: int8Features(problem, s, o.threads),
        latencyMs: Object.fromEntries(Object.entries(repeatsMs).map(([lv, r]) => [lv, median(r)])),
        kernel: k,
        blob,
        repeatsMs,
      });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return { layer: l.index, problem, family: familyOf(versions, paths, o.maxVersions), measured: schedules.length, failed };
}

/**
 * The best path's family, with the portable path's fastest (level 0) version in one slot when it was
 * tuned beside it; `candidates` counts both paths', `dominated` the best path's.
 */
function familyOf(versions: readonly Int8Version[], paths: readonly Int8Path[], maxVersions: number): Family<Int8Version> {
  const portable = paths.length > 1 ? paths[1]! : undefined;
  const main = versions.filter((v) => v.schedule.path === paths[0]);
  const side = versions.filter((v) => v.schedule.path === portable).sort((a, b) => a.latencyMs['0']! - b.latencyMs['0']!)[0];
  if (!side || maxVersions < 2 || main.length === 0) return selectFamily(versions, { maxVersions });
  const f = selectFamily(main, { maxVersions: maxVersions - 1 });
  return { ...f, versions: [...f.versions, side], count: f.count + 1, candidates: versions.length };
}
