import test from 'node:test';
import assert from 'node:assert/strict';
import { execa } from 'execa';

const script = 'bench/serve/16core.sh';

test('the 16-core script plans serve-bench within its budget: every arm, the rounds, a load-run length the budget allows', async () => {
  const r = await execa(
    'bash',
    [
      script,
      '--cores',
      '1',
      '--budget',
      '600',
      '--rounds',
      '3',
      '--calibration',
      'cal.json',
      '--timeline',
      '--plan',
      'het1',
      'x=a.bundle,b.bundle',
    ],
    { reject: false },
  );
  assert.equal(r.exitCode, 0, r.stderr);
  const [plan, command] = r.stderr.split('\n');
  const m = /^plan: 1 cores \((\d+)\), budget 600 s, 2 mix\(es\), 5 arms, 3 rounds: ([0-9.]+) s per load run/.exec(plan!);
  assert.ok(m, plan);
  const d = Number(m[2]);
  assert.ok(d >= 0.2, 'never under the floor');
  // The plan's own arithmetic: per mix ≤ its share of 85% of the budget.
  assert.ok(2 * (15 + (3 * 5 + 3) * (4 + 8 * (d - 0.005))) <= 600 * 0.85 + 1e-6, `${d} s per run fits`);
  for (const flag of [
    '--arms ort,ort-pinned,ort-instances,fcfs,veltair',
    '--rounds 3',
    `--cores ${m[1]}`,
    '--mix het1',
    '--mix x=a.bundle,b.bundle',
    '--max-runs 8',
    '--json-out serve-16core/serve-bench.json',
    '--calibration cal.json',
    '--timeline',
  ]) {
    assert.ok(command!.includes(flag), `${flag} in ${command}`);
  }
});

test('a small budget keeps the floor; bad budgets and options are refused', async () => {
  const r = await execa('bash', [script, '--cores', '1', '--budget', '10', '--plan'], { reject: false });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.match(r.stderr, /0\.20 s per load run/);
  assert.match(r.stderr, /--mix het1 --mix het2 --mix het3/);
  for (const args of [['--budget', '5'], ['--budget', 'x'], ['--rounds', '0'], ['--nope']]) {
    const bad = await execa('bash', [script, ...args, '--plan'], { reject: false });
    assert.equal(bad.exitCode, 2, args.join(' '));
  }
});
