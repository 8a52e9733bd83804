import test from 'node:test';
import assert from 'node:assert/strict';
import { renderPng, renderSvg } from '../src/plot/render.js';
import { attainmentFigure, p99Figure, type ServingArm } from '../src/plot/serving.js';

const arms: ServingArm[] = ['ort-pinned', 'veltair'].map((label, a) => ({
  label,
  points: [10, 20, 30].flatMap((q, i) =>
    ['resnet50', 'mobilenet_v2'].map((model) => ({
      offeredQps: q,
      model,
      attainment: Math.max(0, 1 - i * 0.2 - a * 0.1),
      p99Ms: model === 'resnet50' ? 60 + 20 * i : 8 + 4 * i + a,
      qosMs: model === 'resnet50' ? 150 : 27,
    })),
  ),
}));

test('serving figures: attainment and p99 against offered load, a curve per arm and a panel per model, as SVG and PNG', async () => {
  for (const spec of [attainmentFigure(arms, 'het1'), p99Figure(arms, 'het1')]) {
    const svg = await renderSvg(spec);
    assert.match(svg, /^<svg/);
    for (const text of ['ort-pinned', 'veltair', 'resnet50', 'mobilenet_v2', 'offered load']) assert.ok(svg.includes(text), text);
    const png = renderPng(svg, 1);
    assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  }
});

test('p99 leaves out steps with no answered request (no p99)', async () => {
  const withGap: ServingArm[] = [
    {
      label: 'ort',
      points: [
        { offeredQps: 50, model: 'm', attainment: 0, p99Ms: null, qosMs: 10 },
        { offeredQps: 10, model: 'm', attainment: 1, p99Ms: 4, qosMs: 10 },
      ],
    },
  ];
  const spec = p99Figure(withGap, 'x') as { data: { values: unknown[] } };
  assert.equal(spec.data.values.length, 1);
  assert.match(await renderSvg(p99Figure(withGap, 'x')), /^<svg/);
});
