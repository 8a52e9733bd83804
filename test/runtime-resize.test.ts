/**
 * Resize on the native runtime against ONNX Runtime: the bilinear upsampling of torchvision's
 * segmentation heads (F.interpolate exports `linear` with `pytorch_half_pixel` to an odd size, and
 * a 1×1 pooled map spread over the image), `align_corners`, `half_pixel` down- and upscaling by
 * scales, nearest as torch exports it (`asymmetric` + `floor`) and ONNX's default rounding; and a
 * mode the runtime does not have (cubic) refused before anything runs, naming the layer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModelSpec } from '../src/onnx/encode.js';
import { axisTable } from '../src/runtime/lower-resize.js';
import { assertClose, f32, graphOf, runAgainstOrt } from './runtime-harness.js';
import { unsupportedLayers } from '../src/runtime/preflight.js';

type By = { scales: number[] } | { sizes: number[] };

function resizeModel(shape: number[], out: number[], by: By, attrs: Record<string, string | number>): ModelSpec {
  const scales = 'scales' in by ? by.scales : [];
  return {
    inputs: [{ name: 'x', dtype: 'float32', shape }],
    outputs: [{ name: 'y', dtype: 'float32', shape: out }],
    initializers: [
      ['roi', { dtype: 'float32', dims: [0], data: new Float32Array(0) }],
      ['scales', { dtype: 'float32', dims: [scales.length], data: new Float32Array(scales) }],
      ...('sizes' in by ? [['sizes', { dtype: 'int64', dims: [by.sizes.length], data: new Float64Array(by.sizes) }] as const] : []),
    ],
    nodes: [{ op: 'Resize', inputs: ['x', 'roi', 'scales', ...('sizes' in by ? ['sizes'] : [])], outputs: ['y'], attrs }],
  };
}

async function check(shape: number[], out: number[], by: By, attrs: Record<string, string | number>, threads = 2) {
  const { ours, reference } = await runAgainstOrt(resizeModel(shape, out, by, attrs), [f32(shape, 5)], { threads });
  assert.equal(ours[0]!.byteLength, reference[0]!.byteLength, 'output size');
  assertClose(ours[0]!, reference[0]!, `${JSON.stringify(attrs)} ${shape.join('x')} -> ${out.join('x')}`, 1e-5, 1e-5);
}

test('bilinear as torchvision segmentation heads export it: pytorch_half_pixel to an odd size, and a 1x1 map spread', async () => {
  const linear = { mode: 'linear', coordinate_transformation_mode: 'pytorch_half_pixel' };
  await check([1, 3, 7, 9], [1, 3, 15, 20], { sizes: [1, 3, 15, 20] }, linear);
  await check([2, 5, 1, 1], [2, 5, 8, 6], { sizes: [2, 5, 8, 6] }, linear);
  await check([1, 4, 33, 33], [1, 4, 65, 65], { sizes: [1, 4, 65, 65] }, linear, 1);
});

test('linear with align_corners and half_pixel, up and down by scales', async () => {
  await check([1, 2, 6, 5], [1, 2, 12, 10], { scales: [1, 1, 2, 2] }, { mode: 'linear', coordinate_transformation_mode: 'align_corners' });
  await check([1, 2, 6, 5], [1, 2, 12, 10], { scales: [1, 1, 2, 2] }, { mode: 'linear', coordinate_transformation_mode: 'half_pixel' });
  await check([1, 2, 8, 10], [1, 2, 4, 5], { scales: [1, 1, 0.5, 0.5] }, { mode: 'linear', coordinate_transformation_mode: 'half_pixel' });
  await check([1, 3, 5, 7], [1, 3, 8, 10], { scales: [1, 1, 1.7, 1.5] }, { mode: 'linear', coordinate_transformation_mode: 'asymmetric' });
});

test("nearest: torch's asymmetric + floor, and ONNX's default rounding", async () => {
  await check(
    [1, 3, 4, 5],
    [1, 3, 8, 10],
    { scales: [1, 1, 2, 2] },
    { mode: 'nearest', coordinate_transformation_mode: 'asymmetric', nearest_mode: 'floor' },
  );
  await check([1, 3, 4, 5], [1, 3, 9, 11], { sizes: [1, 3, 9, 11] }, { mode: 'nearest' });
  await check([1, 3, 9, 11], [1, 3, 4, 5], { sizes: [1, 3, 4, 5] }, { mode: 'nearest', nearest_mode: 'round_prefer_ceil' });
});

test('the coordinate tables clamp at the borders and give a nearest sample weight 0', () => {
  const t = axisTable(4, 8, 2, 'linear', 'half_pixel', 'round_prefer_floor');
  assert.deepEqual(t.src0.slice(0, 2), [0, 0], 'the first output maps to -0.25: clamped to 0');
  assert.deepEqual(t.weight.slice(0, 2), [0, 0.25]);
  assert.equal(t.src1[7], 3, 'never past the last input');
  const n = axisTable(4, 8, 2, 'nearest', 'asymmetric', 'floor');
  assert.deepEqual(n.src0, [0, 0, 1, 1, 2, 2, 3, 3]);
  assert.ok(n.weight.every((w) => w === 0));
});

test('a mode the runtime lacks is refused before tuning, naming the layer and the mode', () => {
  const { graph } = graphOf(resizeModel([1, 1, 4, 4], [1, 1, 8, 8], { scales: [1, 1, 2, 2] }, { mode: 'cubic' }));
  const found = unsupportedLayers(graph, 16);
  assert.equal(found.length, 1);
  assert.match(found[0]!.message, /resize .*cubic/);
});
