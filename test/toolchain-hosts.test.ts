/**
 * Every CPU fact on every host type seen so far (test/fixtures/hosts/), from any host: the target
 * fingerprint each shipped record set was measured under, the portable ISA levels, the flags a
 * build at each level requires, vector widths, and the transfer distance between host types. And
 * the one case that made fixtures necessary: a Zen 5 whose hypervisor hides `lzcnt` is still an
 * x86-64-v3/v4 CPU when the probe runs the instruction, and is refused when the probe says it
 * cannot. The real probe is checked on this machine too: it must agree with every level flag this
 * CPU's cpuinfo lists, and catch an instruction that faults.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { targetDistance, transferSeeds } from '../src/db/transfer.js';
import type { TuningRecord } from '../src/db/record.js';
import { cpuInfo, parseCpuInfo, probedFlags, settleCpuInfo } from '../src/toolchain/cpu.js';
import { flagsToProbe, LEVEL_FLAGS } from '../src/toolchain/isa-levels.js';
import { parseProbeOutput, runIsaProbe } from '../src/toolchain/isa-probe.js';
import { levelsOf, missingForLevel, requiredIsaFor, vectorWidths } from '../src/toolchain/isa.js';
import { targetOf } from '../src/toolchain/target.js';
import { fixtureCpu, fixtureFacts, fixtureProber, hostFixtures } from './host-fixtures.js';

const hosts = hostFixtures();
const zen5 = hosts.find((h) => h.name === 'amd-zen5-hidden-lzcnt')!;

test('there is a fixture for each of the six host types, with where its facts come from', () => {
  assert.equal(hosts.length, 6);
  assert.ok(zen5, 'the Zen 5 capture with lzcnt hidden');
  for (const h of hosts) assert.match(h.provenance, /^(Captured|Reconstructed)/, h.name);
  assert.ok(
    !parseCpuInfo(zen5.cpuinfo).listed.has('abm') && !parseCpuInfo(zen5.cpuinfo).listed.has('lzcnt'),
    'its cpuinfo hides abm/lzcnt',
  );
});

test('each fixture yields the target fingerprint its shipped records carry', () => {
  const shipped = new Set(Object.keys((JSON.parse(readFileSync('tuning-db/index.json', 'utf8')) as { targets: object }).targets));
  for (const h of hosts) {
    const fp = targetFingerprint(targetOf(fixtureFacts(h)));
    assert.equal(fp, h.expect.fingerprint, h.name);
    assert.ok(shipped.has(fp), `${h.name}: ${fp} is a target tuning-db/ ships records for`);
  }
});

test("each fixture runs exactly its portable levels, requires each level's flags, and vectorizes as its ISA allows", () => {
  for (const h of hosts) {
    const cpu = fixtureCpu(h);
    assert.deepEqual(levelsOf(cpu.flags), h.expect.levels, h.name);
    assert.deepEqual(probedFlags(cpu), h.expect.probed, `${h.name}: flags settled by the probe`);
    for (const level of ['x86-64-v3', 'x86-64-v4'] as const) {
      const runs = h.expect.levels.includes(level);
      assert.equal(missingForLevel(level, cpu.flags).length === 0, runs, `${h.name} ${level}`);
      assert.deepEqual(
        requiredIsaFor(level, undefined, cpu.flags),
        [...LEVEL_FLAGS[level]].sort(),
        'a level requires its own flags, whatever the host',
      );
      if (runs) assert.deepEqual(vectorWidths(targetOf(fixtureFacts(h, cpu), level).isa), level === 'x86-64-v4' ? [16, 8, 1] : [8, 1]);
    }
    assert.deepEqual(vectorWidths(targetOf(fixtureFacts(h, cpu)).isa), h.expect.vectorWidths, `${h.name} native`);
    const native = requiredIsaFor('native', undefined, cpu.flags);
    assert.ok(
      native.every((f) => cpu.flags.has(f)),
      `${h.name}: native requires only flags the CPU has`,
    );
    assert.ok(!native.includes('hypervisor') && !native.includes('pti'), 'OS and erratum flags are never required');
    assert.ok(native.includes(h.expect.vectorWidths[0] === 16 ? 'avx512f' : 'avx2'));
  }
});

test('native flag selection from the compiler keeps a probed flag and drops one the CPU lacks', () => {
  const help = [
    '  -mabm                       \t\t[enabled]',
    '  -mavx2 \t\t[enabled]',
    '  -mlzcnt \t\t[enabled]',
    '  -msse4a \t\t[enabled]',
    '  -mxop \t\t[disabled]',
  ].join('\n');
  const cpu = fixtureCpu(zen5);
  assert.deepEqual(
    requiredIsaFor('native', help, cpu.flags),
    ['abm', 'avx2'],
    'abm probed in, sse4a (hidden, not a level flag, never probed) out',
  );
  const listedOnly = parseCpuInfo(zen5.cpuinfo);
  assert.deepEqual(requiredIsaFor('native', help, listedOnly.flags), ['avx2']);
});

test('a hidden lzcnt still yields x86-64-v3 and v4 when the probe says the instruction runs, and is refused when it does not', () => {
  const listed = parseCpuInfo(zen5.cpuinfo);
  assert.deepEqual(flagsToProbe(listed.listed), ['abm'], 'only the level flag cpuinfo hides is probed');
  const runs = settleCpuInfo(listed, () => ({ abm: true }));
  assert.deepEqual(levelsOf(runs.flags), ['x86-64-v2', 'x86-64-v3', 'x86-64-v4']);
  assert.deepEqual(runs.probed, { abm: true });
  assert.ok(runs.listed.size === listed.listed.size && !runs.listed.has('abm'), 'what cpuinfo listed is kept apart from what was probed');

  const faults = settleCpuInfo(listed, () => ({ abm: false }));
  assert.deepEqual(missingForLevel('x86-64-v3', faults.flags), ['abm']);
  assert.deepEqual(levelsOf(faults.flags), ['x86-64-v2']);

  const broken = settleCpuInfo(listed, () => {
    throw new Error('cc: not found');
  });
  assert.deepEqual(missingForLevel('x86-64-v4', broken.flags), ['abm'], 'a probe that cannot run settles nothing');
  assert.match(broken.probeError ?? '', /cc: not found.*abm/);

  const silent = settleCpuInfo(listed, () => ({}));
  assert.ok(!silent.flags.has('abm'), 'a flag the probe has no answer for stays absent');
});

test('a CPU that lists every level flag, or claims no level, is never probed', () => {
  for (const h of hosts.filter((x) => x !== zen5)) {
    assert.deepEqual(flagsToProbe(parseCpuInfo(h.cpuinfo).listed), [], h.name);
    assert.equal(
      settleCpuInfo(parseCpuInfo(h.cpuinfo), () => {
        throw new Error('must not run');
      }).probeError,
      undefined,
    );
  }
  assert.deepEqual(flagsToProbe(new Set(['sse', 'sse2', 'mmx', 'fpu'])), [], 'a baseline x86-64 CPU claims no level');
  assert.deepEqual(flagsToProbe(new Set(['sse4_2', 'sse', 'sse2', 'mmx'])), ['cx16', 'lahf_lm', 'pni', 'popcnt', 'sse4_1', 'ssse3']);
});

test('transfer distance between the host types: zero within a type, ISA first, then caches', () => {
  const targets = new Map(hosts.map((h) => [h.name, targetOf(fixtureFacts(h))]));
  const t = (name: string) => targets.get(name)!;
  for (const [name, target] of targets) assert.equal(targetDistance(target, target), 0, name);
  assert.equal(targetDistance(t('amd-zen5-hidden-lzcnt'), t('amd-epyc-avx512-48k-listed')), 0, 'the same CPU with lzcnt listed or hidden');
  for (const [name, target] of targets) {
    if (name === 'amd-zen3-avx2') continue;
    assert.ok(targetDistance(t('amd-zen3-avx2'), target) >= 10, `AVX2 is far from AVX-512 (${name})`);
    assert.ok(Math.abs(targetDistance(t('amd-zen3-avx2'), target) - targetDistance(target, t('amd-zen3-avx2'))) < 1e-9, 'symmetric');
  }
  assert.ok(
    targetDistance(t('intel-xeon-avx512-105m'), t('intel-xeon-avx512-480m')) <
      targetDistance(t('intel-xeon-avx512-105m'), t('amd-zen4-avx512-32k')),
    "the same Xeon with another L3 is nearer than another vendor's AVX-512 part",
  );
  // Seeds for the Zen 5, whatever their order in the database: the AVX-512 host with its L1d and L3
  // (the Xeon, 2 MiB L2) before the one with a 32 KiB L1d and a 32 MiB L3, and the AVX2 host last.
  const rec = (host: string, ms: number): TuningRecord =>
    ({ target: targetFingerprint(t(host)), targetSpec: t(host), status: 'ok', latencies: { 0: [ms] } }) as unknown as TuningRecord;
  const seeds = transferSeeds(
    [rec('amd-zen3-avx2', 1), rec('intel-xeon-avx512-480m', 2), rec('amd-zen4-avx512-32k', 3)],
    t('amd-zen5-hidden-lzcnt'),
    't1-0000000000000000',
    3,
  );
  assert.deepEqual(
    seeds.map((s) => s.record.target),
    ['intel-xeon-avx512-480m', 'amd-zen4-avx512-32k', 'amd-zen3-avx2'].map((n) => targetFingerprint(t(n))),
  );
  assert.ok(seeds[2]!.distance >= 10, 'the AVX2 host comes last');
});

test('the ISA probe on this machine agrees with every level flag its cpuinfo lists, and catches a faulting instruction', () => {
  const listed = cpuInfo().listed;
  const levelFlags = [...new Set(Object.values(LEVEL_FLAGS).flat())].filter((f) => listed.has(f));
  const answers = runIsaProbe([...levelFlags, 'ud2', 'no_such_flag']);
  for (const f of levelFlags) assert.equal(answers[f], true, `${f} is listed, so it runs`);
  assert.equal(answers['ud2'], false, 'ud2 faults: the SIGILL guard turns it into "absent"');
  assert.ok(!('no_such_flag' in answers), 'a flag without a probe gets no answer');
  assert.deepEqual(parseProbeOutput('abm 1\navx2 0\nxop ?\n'), { abm: true, avx2: false });
  assert.deepEqual(fixtureProber(zen5)(['abm', 'avx2']), { abm: true });
});
