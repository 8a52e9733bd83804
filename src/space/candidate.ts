/** A candidate: a schedule for a workload, with its analytic features, about to be compiled and measured. */
import type { WorkloadShape } from '../ir/workload.js';
import { scheduleFeatures, type ScheduleFeatures } from './features.js';
import { whyInvalid, type Schedule } from './knobs.js';
import type { Target } from '../toolchain/target.js';
import { internalError } from '../errors.js';

export interface Candidate {
  readonly workload: WorkloadShape;
  readonly schedule: Schedule;
  readonly features: ScheduleFeatures;
}

export function makeCandidate(workload: WorkloadShape, schedule: Schedule, target: Target): Candidate {
  const why = whyInvalid(schedule, workload, target);
  if (why) throw internalError(`invalid schedule ${JSON.stringify(schedule)}: ${why}`);
  return { workload, schedule, features: scheduleFeatures(workload, schedule) };
}
