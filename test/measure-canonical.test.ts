/**
 * The canonical form of a kernel unit (src/measure/canonical.ts): candidates that differ only in
 * their symbol (and the header comment naming it and its schedule) have one canonical source;
 * the symbol is replaced exactly where it is a name or a name's prefix, nowhere else.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKernel } from '../src/codegen/kernel.js';
import type { WorkloadShape } from '../src/ir/workload.js';
import { canonicalUnit, renameSymbol } from '../src/measure/canonical.js';
import { makeCandidate } from '../src/space/candidate.js';
import { defaultTableRefresh } from '../src/space/presets.js';
import { detectTarget } from '../src/toolchain/target.js';

const W: WorkloadShape = {
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin: 3,
  h: 8,
  w: 8,
  cout: 16,
  kh: 3,
  kw: 3,
  strideH: 1,
  strideW: 1,
  pads: [1, 1, 1, 1],
  dilationH: 1,
  dilationW: 1,
  groups: 1,
  oh: 8,
  ow: 8,
  epilogue: ['bias', 'relu'],
};

test('a schedule at 1 and at 2 threads: two symbols, one canonical source that names neither', async () => {
  const t = await detectTarget();
  const s = defaultTableRefresh(W, t, 1);
  const one = generateKernel(makeCandidate(W, s, t)),
    two = generateKernel(makeCandidate(W, { ...s, threads: 2 }, t));
  assert.notEqual(one.symbol, two.symbol);
  const c1 = canonicalUnit(one),
    c2 = canonicalUnit(two);
  assert.deepEqual(c1, c2);
  assert.match(c1.symbol, /^vt_c[0-9a-f]{16}$/);
  assert.ok(!c1.source.includes(one.symbol) && !c1.source.includes('"threads"'), 'neither the symbol nor the schedule header is left');
  for (const name of ['_run(', '_run_nchw(', '_desc(', '_pack_weight(', '_epi('])
    assert.ok(c1.source.includes(`${c1.symbol}${name}`), name);
  assert.equal(c1.source.split('\n').length, one.source.split('\n').length, 'line numbers kept');
  const other = generateKernel(makeCandidate(W, { ...s, unroll: s.unroll === 1 ? 2 : 1 }, t));
  assert.notEqual(canonicalUnit(other).symbol, c1.symbol, 'another schedule is other code');
});

test('the symbol is replaced as a name or a name prefix only', () => {
  const sym = 'vt_k0123456789abcdef';
  // Names (and name prefixes) of `own`, next to lookalikes of `sym` that are other names.
  const srcOf = (own: string) =>
    [`void ${own}_run(void);`, `int ${own};`, `int x${sym}_y;`, `int ${sym}0;`, `int ${sym}a_b;`, `"${own}_desc"`].join('\n');
  const c = canonicalUnit({ symbol: sym, source: srcOf(sym) });
  assert.deepEqual(c.source.split('\n'), [
    `void ${c.symbol}_run(void);`,
    `int ${c.symbol};`,
    `int x${sym}_y;`,
    `int ${sym}0;`,
    `int ${sym}a_b;`,
    `"${c.symbol}_desc"`,
  ]);
  assert.equal(renameSymbol(`${c.symbol}.c:3:1: error in ${c.symbol}_run`, c.symbol, sym), `${sym}.c:3:1: error in ${sym}_run`);
  const other = 'vt_kfedcba9876543210';
  assert.deepEqual(canonicalUnit({ symbol: other, source: srcOf(other) }), c, 'whatever the symbol, as long as nothing else differs');
  assert.notDeepEqual(canonicalUnit({ symbol: other, source: srcOf(sym) }), c, 'a name left as it was is a difference');
});
