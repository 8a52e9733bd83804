/**
 * The Winograd form as a schedule knob: which convs may take it, a direct schedule's canonical form
 * and kernel symbol unchanged by the knob, repair and validity under it, the preset, mutation, and
 * the search seeding it, on every ISA a target may have (synthetic targets: no host flags assumed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { canonicalForm, type WorkloadShape } from '../src/ir/workload.js';
import { CODEGEN_VERSION, generateKernel, kernelSymbol, kernelWorkspaceBytes } from '../src/codegen/kernel.js';
import { makeCandidate } from '../src/space/candidate.js';
import { scheduleFeatures } from '../src/space/features.js';
import { parallelHeavy, winogradDefault } from '../src/space/presets.js';
import { problemOf } from '../src/space/problem.js';
import { outputOwner } from '../src/space/tile-owner.js';
import { winogradEligible } from '../src/space/winograd.js';
import { isValid, makeSchedule, mutate, repair, sampleSchedule, threadSplit, whyInvalid, type Schedule } from '../src/space/knobs.js';
import { seededRng } from '../src/random.js';
import { syntheticTarget } from '../src/toolchain/target.js';
import { createTaskSearch } from '../src/tune/search.js';

const TARGETS = [
  syntheticTarget({ avx512f: true, avx2: true, fma: true }, 4),
  syntheticTarget({ avx512f: false, avx2: true, fma: true }, 2),
  syntheticTarget({ avx512f: false, avx2: false, fma: false }, 2),
];

function conv(
  cin: number,
  hw: number,
  cout: number,
  o: { k?: number; stride?: number; groups?: number; dil?: number } = {},
): WorkloadShape {
  const k = o.k ?? 3,
    stride = o.stride ?? 1,
    dil = o.dil ?? 1;
  const pad = ((k - 1) * dil) >> 1,
    out = Math.floor((hw + 2 * pad - (k - 1) * dil - 1) / stride) + 1;
  return {
    op: 'conv2d',
    dtype: 'float32',
    n: 1,
    cin,
    h: hw,
    w: hw,
    cout,
    kh: k,
    kw: k,
    strideH: stride,
    strideW: stride,
    pads: [pad, pad, pad, pad],
    dilationH: dil,
    dilationW: dil,
    groups: o.groups ?? 1,
    oh: out,
    ow: out,
    epilogue: ['bias', 'relu'],
  };
}

const ELIGIBLE = conv(64, 28, 96);

test('only ungrouped stride-1 undilated 3×3 convs with more than a few input channels may take the Winograd form', () => {
  assert.ok(winogradEligible(ELIGIBLE));
  assert.ok(winogradEligible(conv(5, 7, 3)));
  for (const w of [conv(64, 28, 64, { stride: 2 }), conv(64, 28, 64, { groups: 2 }), conv(64, 28, 64, { groups: 64 })]) {
    assert.ok(!winogradEligible(w), JSON.stringify(w));
  }
  assert.ok(!winogradEligible(conv(64, 28, 64, { k: 1 })) && !winogradEligible(conv(64, 28, 64, { k: 5 })));
  assert.ok(!winogradEligible(conv(64, 28, 64, { dil: 2 })));
  assert.ok(!winogradEligible(conv(3, 28, 64)), 'small-cin stems read NCHW input, which the Winograd kernel does not');
  assert.ok(!winogradEligible({ op: 'dense', dtype: 'float32', m: 4, k: 64, n: 64, epilogue: [] }));
});

test("a direct schedule's canonical form, symbol and workspace are what they were before the algo knob", () => {
  const t = TARGETS[0]!;
  const s = parallelHeavy(ELIGIBLE, t);
  assert.equal(s.algo, undefined);
  assert.deepEqual(Object.keys(s), [
    'vec',
    'regOc',
    'regCols',
    'tileIc',
    'tileOc',
    'tileRows',
    'tileCols',
    'loopOrder',
    'parallelAxis',
    'unroll',
    'threads',
  ]);
  assert.deepEqual(makeSchedule({ ...s, algo: 'direct' }), s, "'direct' is left out of the canonical form");
  // the symbol as the code generator hashed it before the knob existed
  const before = `vt_k${createHash('sha256')
    .update(`${CODEGEN_VERSION}\0${canonicalForm(ELIGIBLE)}\0${JSON.stringify(s)}`)
    .digest('hex')
    .slice(0, 16)}`;
  assert.equal(kernelSymbol(ELIGIBLE, s), before);
  assert.equal(kernelSymbol(ELIGIBLE, { ...s, algo: 'direct' }), before, 'an explicit direct names the same kernel');
  const wino = repair({ ...s, algo: 'winograd' }, ELIGIBLE, t);
  assert.notEqual(kernelSymbol(ELIGIBLE, wino), before);
  assert.equal(Object.keys(wino).at(-1), 'algo', 'algo comes last in a Winograd schedule');
  assert.ok(kernelWorkspaceBytes(ELIGIBLE, wino) > kernelWorkspaceBytes(ELIGIBLE, s), 'V and M live in the workspace');
});

test('repair and validity under the Winograd form, on every ISA', () => {
  for (const t of TARGETS) {
    const rng = seededRng(3);
    for (let i = 0; i < 40; i++) {
      const s = repair({ ...sampleSchedule(ELIGIBLE, t, rng), algo: 'winograd' }, ELIGIBLE, t);
      assert.equal(s.algo, 'winograd');
      assert.equal(whyInvalid(s, ELIGIBLE, t), undefined, JSON.stringify(s));
      assert.equal(s.tileIc, 1);
      assert.equal(s.tileRows, 1);
      assert.ok(scheduleFeatures(ELIGIBLE, s).parallelChunks >= 36, 'the 36 GEMMs are at least 36 chunks');
    }
    const stride2 = conv(64, 28, 64, { stride: 2 });
    const s = parallelHeavy(stride2, t);
    assert.match(whyInvalid({ ...s, algo: 'winograd' }, stride2, t) ?? '', /winograd/);
    assert.equal(repair({ ...s, algo: 'winograd' }, stride2, t).algo, undefined, 'repair turns an ineligible Winograd schedule direct');
    assert.ok(!isValid({ ...repair({ ...s, algo: 'winograd' }, ELIGIBLE, t), tileIc: 2 }, ELIGIBLE, t), 'tileIc is pinned');
  }
});

test('the Winograd default exists exactly for eligible convs, is valid, and generates code on every ISA', () => {
  for (const t of TARGETS) {
    assert.equal(winogradDefault(conv(64, 28, 64, { stride: 2 }), t), undefined);
    assert.equal(winogradDefault(conv(3, 28, 64), t), undefined);
    for (const w of [ELIGIBLE, conv(20, 9, 37), conv(512, 7, 512)]) {
      const s = winogradDefault(w, t, 2)!;
      assert.ok(s && isValid(s, w, t) && s.algo === 'winograd' && s.threads === 2, JSON.stringify(s));
      assert.ok(scheduleFeatures(w, s).footprintBytes.l2 <= t.caches.l2 / 2 || (s.tileOc === 1 && s.tileCols === 1));
      const src = generateKernel(makeCandidate(w, s, t)).source;
      assert.match(src, /_pack_weight\(const float\* src, float\* dst\)/);
      assert.match(src, new RegExp(`vt${s.vec}_fma`));
    }
  }
});

test('mutation reaches the Winograd form only on eligible convs', () => {
  const t = TARGETS[1]!;
  const rng = seededRng(11);
  let s: Schedule = parallelHeavy(ELIGIBLE, t);
  let reached = false;
  for (let i = 0; i < 200 && !reached; i++) {
    s = mutate(s, ELIGIBLE, t, rng);
    assert.ok(isValid(s, ELIGIBLE, t));
    reached = s.algo === 'winograd';
  }
  assert.ok(reached);
  const stride2 = conv(64, 28, 64, { stride: 2 });
  let d: Schedule = parallelHeavy(stride2, t);
  for (let i = 0; i < 200; i++) {
    d = mutate(d, stride2, t, rng);
    assert.equal(d.algo, undefined);
  }
});

test('the search seeds the Winograd default at each thread count, for eligible convs only', () => {
  const t = TARGETS[0]!;
  const opts = { levels: [0], threads: [1, 4], levelsFor: () => [0], seed: 1, randomSeeds: 0 };
  const seeds = createTaskSearch({ ...ELIGIBLE, key: 'conv2d-0000000000000001' }, t, opts).propose(20);
  const wino = seeds.filter((s) => s.algo === 'winograd');
  assert.deepEqual(
    wino.map((s) => s.threads),
    [1, 4],
  );
  const stride2 = conv(64, 28, 64, { stride: 2 });
  const direct = createTaskSearch({ ...stride2, key: 'conv2d-0000000000000002' }, t, opts).propose(20);
  assert.ok(direct.length > 0 && direct.every((s) => s.algo === undefined));
});

test("a Winograd version's output owners follow its output loop (image, oc vector, 4×4 tile)", () => {
  const t = TARGETS[0]!;
  const w = conv(32, 10, 8);
  const s = repair({ ...parallelHeavy(w, t), vec: 8, algo: 'winograd' }, w, t);
  const p = problemOf(w, 8);
  assert.equal(threadSplit(p, s), 'rows', 'one oc vector: threads split the tiles');
  const owner = outputOwner({ problem: p, schedule: s }, 2);
  // 10×10 output: 3×3 tiles; thread 0 gets tiles 0–4, thread 1 tiles 5–8
  assert.equal(owner(0, 0, 0), 0);
  assert.equal(owner(0, 0, 4 * 10 + 4), 0, 'tile 4 (row 1, column 1)');
  assert.equal(owner(0, 0, 4 * 10 + 8), 1, 'tile 5');
  assert.equal(owner(0, 0, 9 * 10 + 9), 1);
});
