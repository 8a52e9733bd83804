/**
 * The noise guard: a tiny watchdog process the level bank starts beside its co-runners. Its stdin
 * is a pipe from the tuner; lines `add PID` / `del PID` keep a list of live co-runners. When the
 * pipe closes without a clean `bye` — the tuner died, even by kill -9 — it SIGKILLs every PID
 * still listed.
 *
 * Why it exists: between measurements the co-runners are SIGSTOPped, and a stopped process does
 * not act on the SIGTERM its parent-death signal sends (only SIGKILL and SIGCONT reach it), so
 * without this a killed tuner would leave stopped co-runners holding gigabytes forever.
 *
 * It ignores SIGINT/SIGTERM/SIGHUP on purpose: a Ctrl-C to the terminal's process group must not
 * take the guard down before the tuner, which is exactly when it has work to do.
 */
import { createInterface } from 'node:readline';

const pids = new Set<number>();
let clean = false;

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
  process.on(sig, () => {
    /* wait for EOF */
  });

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const [verb, arg] = line.trim().split(/\s+/);
  const pid = Number(arg);
  if (verb === 'add' && Number.isInteger(pid) && pid > 1) pids.add(pid);
  else if (verb === 'del') pids.delete(pid);
  else if (verb === 'bye') clean = true;
});
lines.on('close', () => {
  if (!clean) {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
  process.exit(0);
});
