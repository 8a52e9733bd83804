/**
 * What live serving pays that a profile does not hold, as a calibration file the simulator can
 * charge (`veltair simulate --calibration FILE`), measured on a machine by
 * `veltair calibrate-serving` (src/load/calibrate-serving.ts). Format (JSON):
 *
 *   { "format": "veltair-serving-calibration", "version": 1,
 *     "machine": "…", "measured": "2026-12-03T…", "command": "…",
 *     "frontEnd": [ { "bytes": 12288, "us": 310 }, … ],   per request: HTTP parse, tensor decode and
 *                  encode, loopback transfer — by request + response tensor bytes, ascending bytes;
 *                  linear between points, the end points' slope beyond them
 *     "blockDispatchUs": 40,    per block: scheduler decision → the native team started (one core)
 *     "wakeUpUsPerCore": 12,    per block, per core of its team beyond the first (thread wake-up)
 *     "eventLoopUsPerBlock": 25 per block: the event loop's own work (decision, hand-back) }
 *
 * How the simulator charges them (engine.ts; all simulated): each block lasts blockDispatchUs +
 * wakeUpUsPerCore × (cores − 1) + eventLoopUsPerBlock longer, its cores held throughout; each
 * request's latency gains its front-end cost; and the front end's CPU time, at the offered rate,
 * is taken from the cores: every block runs slower by 1 / (1 − share), share = Σ_model rate ×
 * front-end µs / (10⁶ × cores), capped at 0.9.
 */
import { readFileSync } from 'node:fs';
import { quoteForMessage, userError } from '../errors.js';

export const CALIBRATION_FORMAT = 'veltair-serving-calibration';

export interface ServingCalibration {
  readonly format: typeof CALIBRATION_FORMAT;
  readonly version: 1;
  readonly machine: string;
  readonly measured: string;
  readonly command: string;
  readonly frontEnd: readonly { readonly bytes: number; readonly us: number }[];
  readonly blockDispatchUs: number;
  readonly wakeUpUsPerCore: number;
  readonly eventLoopUsPerBlock: number;
}

const bad = (where: string, why: string) =>
  userError('BAD_ARGUMENT', `serving calibration ${where}: ${why}`, 'measure one with veltair calibrate-serving, or fix the field');

const nonNegative = (x: unknown) => typeof x === 'number' && Number.isFinite(x) && x >= 0;

/** Check a parsed calibration; `where` names the file in errors. */
export function validateCalibration(v: unknown, where: string): ServingCalibration {
  if (typeof v !== 'object' || v === null) throw bad(where, 'is not a JSON object');
  const c = v as Record<string, unknown>;
  if (c['format'] !== CALIBRATION_FORMAT) throw bad(where, `field "format" is not ${JSON.stringify(CALIBRATION_FORMAT)}`);
  if (c['version'] !== 1) throw bad(where, 'field "version" is not 1 (the only version this veltair reads)');
  for (const k of ['machine', 'measured', 'command'])
    if (typeof c[k] !== 'string') throw bad(where, `field ${JSON.stringify(k)} is not a string`);
  for (const k of ['blockDispatchUs', 'wakeUpUsPerCore', 'eventLoopUsPerBlock']) {
    if (!nonNegative(c[k])) throw bad(where, `field ${JSON.stringify(k)} is not a number ≥ 0`);
  }
  const fe = c['frontEnd'];
  if (!Array.isArray(fe) || fe.length === 0) throw bad(where, 'field "frontEnd" is not a non-empty list of { bytes, us }');
  fe.forEach((p: unknown, i) => {
    const q = p as Record<string, unknown>;
    if (typeof p !== 'object' || p === null || !nonNegative(q['bytes']) || !nonNegative(q['us']))
      throw bad(where, `frontEnd[${i}] is not { bytes ≥ 0, us ≥ 0 }`);
    if (i > 0 && (q['bytes'] as number) <= (fe[i - 1] as { bytes: number }).bytes)
      throw bad(where, `frontEnd[${i}].bytes is not above frontEnd[${i - 1}].bytes`);
  });
  return c as unknown as ServingCalibration;
}

export function readCalibration(path: string): ServingCalibration {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    const why = (e as { code?: string }).code === 'ENOENT' ? 'does not exist' : 'is not JSON';
    throw userError('BAD_ARGUMENT', `serving calibration ${quoteForMessage(path)} ${why}`, 'measure one with veltair calibrate-serving');
  }
  return validateCalibration(parsed, quoteForMessage(path));
}

/** Front-end µs of a request moving `bytes` of tensors: linear between the points, their end slopes beyond. */
export function frontEndUs(c: ServingCalibration, bytes: number): number {
  const p = c.frontEnd;
  if (p.length === 1) return p[0]!.us;
  let i = 1;
  while (i < p.length - 1 && p[i]!.bytes < bytes) i++;
  const a = p[i - 1]!,
    b = p[i]!;
  return Math.max(0, a.us + ((b.us - a.us) * (bytes - a.bytes)) / (b.bytes - a.bytes));
}

/** What the engine charges, per model and per block, derived from a calibration for one mix. */
export interface Charges {
  /** Per model: front-end ms added to each request's latency. */
  readonly frontEndMs: readonly number[];
  /** Extra ms of a block with `cores` cores. */
  blockMs(cores: number): number;
  /** Share of the cores the front end takes at these per-model rates (QPS), 0 to 0.9. */
  share(ratesQps: readonly number[], cores: number): number;
}

export function chargesFor(c: ServingCalibration, tensorBytes: readonly number[]): Charges {
  const fe = tensorBytes.map((b) => frontEndUs(c, b));
  return {
    frontEndMs: fe.map((us) => us / 1000),
    blockMs: (cores) => (c.blockDispatchUs + c.wakeUpUsPerCore * Math.max(0, cores - 1) + c.eventLoopUsPerBlock) / 1000,
    share: (rates, cores) => Math.min(0.9, rates.reduce((s, q, i) => s + q * fe[i]!, 0) / 1e6 / Math.max(1, cores)),
  };
}
