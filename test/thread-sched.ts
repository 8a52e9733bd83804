/** Test helper: each of this process's threads, its nice value and scheduling policy (Linux: /proc/self/task/TID/stat, fields 19 and 41). */
import { readdirSync, readFileSync } from 'node:fs';

export interface ThreadSched {
  readonly tid: number;
  readonly nice: number;
  readonly policy: number;
}

export const SCHED_OTHER = 0;
export const SCHED_BATCH = 3;

export function threadSched(): ThreadSched[] {
  const out: ThreadSched[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({ tid: Number(tid), nice: Number(fields[16]), policy: Number(fields[38]) });
    } catch {
      /* the thread ended meanwhile */
    }
  }
  return out;
}
