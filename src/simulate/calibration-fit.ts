/**
 * From live answers (each timed by the client, with the server's timeline and its tensor bytes) to the
 * serving calibration the simulator charges (src/simulate/calibration.ts):
 *   front end, per distinct tensor size: median over its requests of client time − the
 *     dispatcher's share (HTTP both ways, parse, decode, encode, the in-process client — all of
 *     which the load generator's run pays on the same cores);
 *   block dispatch: median of (decision → native start) over blocks of the smallest team seen;
 *   wake-up per core: the slope of that median from the smallest team to the largest (≥ 0; 0 with one team size);
 *   event loop per block: median hand-back (native end → event loop) + median scheduler µs per block.
 */
import { internalError } from '../errors.js';
import { median } from '../stats.js';
import { CALIBRATION_FORMAT, type ServingCalibration } from './calibration.js';

/** What the fit reads of one live answer: [decided, native start, native end, resumed, cores] per block, in ms. */
export interface LiveAnswer {
  readonly clientMs: number;
  readonly schedulerUs: number | null;
  readonly timeline: { readonly answer: number; readonly blocks: readonly (readonly [number, number, number, number, number])[] } | null;
}

export interface CalibrationSample {
  readonly bytes: number;
  readonly answer: LiveAnswer;
}

export function fitCalibration(
  samples: readonly CalibrationSample[],
  meta: { machine: string; measured: string; command: string },
): ServingCalibration {
  const usable = samples.filter((s) => s.answer.timeline !== null);
  if (usable.length === 0) {
    throw internalError('no answer carried a veltair_timeline', 'calibrate against a veltair server (not an ONNX Runtime backend)');
  }
  const bySize = new Map<number, number[]>();
  for (const s of usable) {
    const front = (s.answer.clientMs - s.answer.timeline!.answer) * 1000;
    bySize.set(s.bytes, [...(bySize.get(s.bytes) ?? []), Math.max(0, front)]);
  }
  const frontEnd = [...bySize].sort((a, b) => a[0] - b[0]).map(([bytes, us]) => ({ bytes, us: Number(median(us).toFixed(1)) }));
  const byCores = new Map<number, number[]>();
  const handBack: number[] = [];
  const perBlockScheduler: number[] = [];
  for (const s of usable) {
    const t = s.answer.timeline!;
    for (const [decided, start, end, resumed, cores] of t.blocks) {
      byCores.set(cores, [...(byCores.get(cores) ?? []), Math.max(0, (start - decided) * 1000)]);
      handBack.push(Math.max(0, (resumed - end) * 1000));
    }
    if (t.blocks.length > 0 && s.answer.schedulerUs !== null) perBlockScheduler.push(s.answer.schedulerUs / t.blocks.length);
  }
  const teams = [...byCores.keys()].sort((a, b) => a - b);
  const lo = teams[0],
    hi = teams[teams.length - 1];
  const dispatchLo = lo === undefined ? 0 : median(byCores.get(lo)!);
  const wake = lo === undefined || hi === lo ? 0 : Math.max(0, (median(byCores.get(hi!)!) - dispatchLo) / (hi! - lo));
  const eventLoop = (handBack.length > 0 ? median(handBack) : 0) + (perBlockScheduler.length > 0 ? median(perBlockScheduler) : 0);
  const r1 = (x: number) => Number(x.toFixed(1));
  return {
    format: CALIBRATION_FORMAT,
    version: 1,
    ...meta,
    frontEnd,
    blockDispatchUs: r1(dispatchLo - wake * Math.max(0, (lo ?? 1) - 1)),
    wakeUpUsPerCore: r1(wake),
    eventLoopUsPerBlock: r1(eventLoop),
  };
}
