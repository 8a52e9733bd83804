/** The INT8 schedule space: the balanced first pick and the two task orders. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import type { Int8Problem } from '../src/space/int8-problem.js';
import { INT8_SCHEDULE_SCHEMA } from '../src/bundle/schema.js';
import { int8BalancedSchedule, int8Space, int8TileCounts, repairInt8 } from '../src/space/int8-knobs.js';

const conv3x3 = (c: number, hw: number): Int8Problem => ({
  op: 'qconv2d',
  n: 1,
  h: hw,
  w: hw,
  cin: c,
  cout: c,
  groups: 1,
  depthwise: false,
  kh: 3,
  kw: 3,
  sh: 1,
  sw: 1,
  dh: 1,
  dw: 1,
  pads: [1, 1, 1, 1],
  oh: hw,
  ow: hw,
  xZero: 0,
  requant: true,
  yZero: 0,
  outDtype: 'uint8',
  clamp: [0, 255],
});

test('the balanced pick runs no partial column block on a row whose width a block can divide', () => {
  for (const hw of [7, 14, 28, 56])
    for (const path of ['avx512vnni', 'avx2'] as const) {
      const s = int8BalancedSchedule(conv3x3(64, hw), path);
      assert.equal(hw % s.regCols, 0, `${path} ${hw} wide: ${JSON.stringify(s)}`);
    }
});

test('oc tiles go outermost where the weights outweigh the input, and rows where the input does', () => {
  // 512 channels at 7×7: 2.4 MB of weights against 41 kB of padded input
  assert.equal(int8BalancedSchedule(conv3x3(512, 7), 'avx512vnni').ocOuter, true);
  // 64 channels at 56×56: 37 kB of weights against 215 kB of input
  assert.equal(int8BalancedSchedule(conv3x3(64, 56), 'avx512vnni').ocOuter, undefined);
});

test('the task order is a knob only where there are several oc tiles, and the space holds both', () => {
  const p = conv3x3(256, 14);
  const one = repairInt8(p, { path: 'avx512vnni', regOc: 4, regCols: 7, tileOc: 1 << 20, tileCols: 1, ocOuter: true });
  assert.equal(int8TileCounts(p, one).ocTiles, 1);
  assert.equal(one.ocOuter, undefined);
  const space = int8Space(p, 'avx512vnni');
  assert.ok(space.some((s) => s.ocOuter === true));
  assert.ok(space.some((s) => s.ocOuter === undefined && int8TileCounts(p, s).ocTiles > 1));
});

test("every schedule of the space is one a bundle's manifest may carry", () => {
  const valid = new Ajv({ allErrors: true }).compile(INT8_SCHEDULE_SCHEMA);
  for (const path of ['avx512vnni', 'avx2'] as const)
    for (const s of [...int8Space(conv3x3(256, 14), path), int8BalancedSchedule(conv3x3(512, 7), path)])
      assert.ok(valid(s), `${JSON.stringify(s)}: ${JSON.stringify(valid.errors)}`);
});
