/**
 * Child process for test/tune-levels.test.ts: opens a level bank (small co-runner buffers), prints
 * the co-runner pids as one JSON line, then idles until it is killed — by the test, with -9.
 */
import { openLevelBank, planCores } from '../src/interference/bank.js';

const MiB = 1 << 20;
const cacheDir = process.argv[2];
const bank = await openLevelBank({
  levels: [0, 1, 2],
  plan: planCores([1]),
  ...(cacheDir ? { cacheDir } : {}),
  settingsFor: () => ({
    randomBytes: 2 * MiB,
    streamBytes: 4 * MiB,
    streamMode: 'copy',
    streamChunkBytes: MiB,
    randomOpsPerTurn: 256,
    cappedByMemory: false,
  }),
});
process.stdout.write(JSON.stringify({ pids: [...bank.runners.values()].map((r) => r.pid) }) + '\n');
setInterval(() => undefined, 1000);
