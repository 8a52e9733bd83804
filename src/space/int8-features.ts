/**
 * The analytic features of an INT8 schedule, in the FP32 schedules' terms (features.ts), so family
 * selection orders INT8 versions the same way: locality-heavy (large tiles) to parallelism-heavy.
 * Bytes are those one parallel task touches: its weight slab (tile oc × every reduction step), the
 * input rows its output columns read, and its outputs.
 */
import type { ScheduleFeatures } from './features.js';
import { int8Dims, type Int8Problem } from './int8-problem.js';
import { int8TileCounts, int8Vec, type Int8Schedule } from './int8-knobs.js';

export function int8Features(p: Int8Problem, s: Int8Schedule, threads: number): ScheduleFeatures {
  const v = int8Vec(s.path);
  const d = int8Dims(p, v);
  const c = int8TileCounts(p, s);
  const tileOcLanes = Math.min(s.tileOc * s.regOc, d.ocVecs) * v;
  const tileCols = Math.min(s.tileCols * s.regCols, d.cols);
  // depthwise weights are packed widened to int32 (int8-pack.ts)
  const weightBytes = tileOcLanes * d.k4 * 4;
  const inputBytes = p.kh * ((tileCols - 1) * p.sw + (p.kw - 1) * p.dw + 1) * (p.depthwise ? tileOcLanes : d.cinGP);
  const outputBytes = tileOcLanes * tileCols * (p.outDtype === 'int32' ? 4 : 1);
  const blockBytes = s.regOc * v * d.k4 * 4;
  const tile = weightBytes + inputBytes + outputBytes;
  const macs = p.n * p.oh * p.ow * p.cout * (p.depthwise ? p.kh * p.kw : (p.kh * p.kw * p.cin) / p.groups);
  const allWeights = d.taskGroups * d.ocVecs * v * d.k4 * 4;
  const allInput = p.n * d.hp * d.wp * d.cp;
  return {
    footprintBytes: { l1: blockBytes, l2: tile, l3: allWeights + allInput, total: allWeights + allInput + p.n * p.oh * p.ow * p.cout },
    parallelChunks: c.tasks,
    threads,
    loadBalance: c.tasks / (threads * Math.ceil(c.tasks / threads)),
    arithmeticIntensity: (2 * macs) / c.tasks / Math.max(tile, 1),
    registerTile: s.regOc * s.regCols * v,
    reductionSplit: 1,
    flops: 2 * macs,
  };
}
