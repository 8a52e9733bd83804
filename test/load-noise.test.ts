import test from 'node:test';
import assert from 'node:assert/strict';
import { parsePidStat, parseProcStat } from '../src/load/proc-stat.js';
import { isNoisy, noiseBetween, type NoiseSnapshot } from '../src/load/noise.js';

const PROC_STAT = `cpu  1000 10 300 5000 20 5 15 40 0 0
cpu0 500 5 150 2500 10 2 8 20 0 0
cpu1 500 5 150 2500 10 3 7 20 0 0
intr 12345 0 0
ctxt 999
btime 1700000000
`;

test('/proc/stat: busy is user+nice+system+irq+softirq, steal apart, every CPU line counted (fixture text)', () => {
  const t = parseProcStat(PROC_STAT)!;
  assert.equal(t.busy, 1000 + 10 + 300 + 5 + 15);
  assert.equal(t.steal, 40);
  assert.equal(t.total, 1000 + 10 + 300 + 5000 + 20 + 5 + 15 + 40);
  assert.equal(t.cpus, 2);
  assert.equal(parseProcStat('intr 1 2 3\n'), null);
  assert.equal(parseProcStat('cpu  a b c d\n'), null);
});

test('/proc/PID/stat: utime + stime, counted after the command name even when it holds spaces and parentheses', () => {
  const fields = (comm: string) =>
    `4242 (${comm}) S 1 4242 4242 0 -1 4194560 500 0 0 0 731 129 0 0 20 0 9 0 100 1000 50 18446744073709551615`;
  assert.equal(parsePidStat(fields('node')), 731 + 129);
  assert.equal(parsePidStat(fields('a (weird) name')), 731 + 129);
  assert.equal(parsePidStat('garbage'), null);
});

const snap = (
  wallMs: number,
  busy: number,
  steal: number,
  total: number,
  pids: [number, number | null][],
  clientCpuUs: number,
): NoiseSnapshot => ({
  wallMs,
  machine: { busy, steal, total, cpus: 2 },
  pids: new Map(pids),
  clientCpuUs,
});

test("noise: outside CPU is the machine's busy time less the arm's and the client's, as a share of every core over the probe", () => {
  // 10 s on 2 cores; the machine ran 1,200 ticks (12 s), the arm 900 and the client 100: 2 s outside = 10% of the cores.
  const a = snap(
    0,
    5000,
    100,
    20_000,
    [
      [11, 1000],
      [22, 300],
    ],
    1_000_000,
  );
  const b = snap(
    10_000,
    6200,
    120,
    22_000,
    [
      [11, 1900],
      [22, 400],
    ],
    1_500_000,
  );
  const n = noiseBetween(a, b, 1000);
  assert.equal(n.outsideCpuS, 2);
  assert.equal(n.outsideShare, 0.1);
  assert.equal(n.stealShare, 0.01);
  assert.equal(n.clientCpuMsPerRequest, 0.5, '500 ms of client CPU over 1,000 requests');
  assert.equal(isNoisy(n), true);
  const quiet = noiseBetween(
    a,
    snap(
      10_000,
      5990,
      100,
      22_000,
      [
        [11, 1900],
        [22, 400],
      ],
      1_500_000,
    ),
    1000,
  );
  assert.equal(quiet.outsideShare, 0, 'never below 0: ticks are coarse');
  assert.equal(isNoisy(quiet), false);
  const gone = noiseBetween(
    a,
    snap(
      10_000,
      6200,
      120,
      22_000,
      [
        [11, null],
        [22, 400],
      ],
      1_500_000,
    ),
    1000,
  );
  assert.equal(gone.outsideShare, null, 'a process gone mid-probe: unknown, not guessed');
  assert.equal(isNoisy(gone), false);
  assert.equal(noiseBetween({ ...a, machine: null }, b, 0).clientCpuMsPerRequest, null);
});
