/**
 * The VNNI ISA levels: what each guarantees (its psABI level plus AVX-VNNI / AVX-512 VNNI), the
 * flags that select it and read back as it, the INT8 paths a kernel built at it may use, and a CPU
 * without the extension refused by the flag's name.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { int8PathsAt, levelFlags, levelOfFlags, missingForLevel } from '../src/toolchain/isa.js';
import { flagsFor } from '../src/toolchain/flags.js';
import { LEVEL_FLAGS } from '../src/toolchain/isa-levels.js';
import { checkIsa } from '../src/compile/options.js';
import { cpuInfo } from '../src/toolchain/cpu.js';
import { isVeltairError } from '../src/errors.js';

test('a VNNI level is its psABI level plus the VNNI extension, selected by -march and the -m option', () => {
  assert.deepEqual([...levelFlags('x86-64-v4-vnni')].sort(), [...LEVEL_FLAGS['x86-64-v4'], 'avx512_vnni'].sort());
  assert.deepEqual([...levelFlags('x86-64-v3-vnni')].sort(), [...LEVEL_FLAGS['x86-64-v3'], 'avx_vnni'].sort());
  for (const level of ['x86-64-v3', 'x86-64-v4', 'x86-64-v3-vnni', 'x86-64-v4-vnni'] as const)
    assert.equal(levelOfFlags(flagsFor('kernel', level)), level);
  assert.ok(flagsFor('kernel', 'x86-64-v4-vnni').includes('-mavx512vnni'));
  assert.equal(levelOfFlags(flagsFor('kernel')), 'native');
});

test('the INT8 paths of a VNNI level include its VNNI path; the plain levels do not', () => {
  assert.equal(int8PathsAt('x86-64-v4-vnni', new Set())[0], 'avx512vnni');
  assert.equal(int8PathsAt('x86-64-v3-vnni', new Set())[0], 'avxvnni');
  assert.equal(int8PathsAt('x86-64-v4', new Set())[0], 'avx2');
});

test('a CPU without the VNNI extension is refused by its name', () => {
  const v4 = new Set(LEVEL_FLAGS['x86-64-v4']);
  assert.deepEqual(missingForLevel('x86-64-v4-vnni', v4), ['avx512_vnni']);
  assert.deepEqual(missingForLevel('x86-64-v3-vnni', v4), ['avx_vnni']);
  for (const level of ['x86-64-v3-vnni', 'x86-64-v4-vnni'] as const) {
    const missing = missingForLevel(level, cpuInfo().flags);
    if (missing.length === 0) assert.equal(checkIsa(level), level);
    else
      assert.throws(
        () => checkIsa(level),
        (e) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && e.message.includes(`--isa ${level} needs ${missing.join(', ')}`),
      );
  }
});
