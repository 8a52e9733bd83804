import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { profileText, type Profile } from '../src/schedule/scheduling-profile.js';
import { assertOneClearError, veltair } from './compile-fixture.js';
import { handProfile, JAGGED } from './schedule-fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'veltair-simulate-'));
const small = (name: string): Profile => handProfile(name, JAGGED, 16, 20);
writeFileSync(join(dir, 'resnet50.profile.json'), profileText(small('resnet50')));
writeFileSync(join(dir, 'googlenet.profile.json'), profileText(small('googlenet')));
writeFileSync(join(dir, 'mystery.json'), profileText(small('mystery')));
const common = ['--cores', '16', '--duration', '1', '--warmup', '0.1'];

test('simulate: the same seed prints the same bytes; the JSON says it is simulated and names what was modelled', async () => {
  const args = [
    'simulate',
    '--profiles',
    dir,
    '--mix',
    'medium',
    '--policy',
    'fcfs,layerwise,veltair',
    '--load',
    '0.2,0.4',
    '--seed',
    '9',
    '--json',
    ...common,
  ];
  const a = await veltair(args),
    b = await veltair(args);
  assert.equal(a.exitCode, 0, a.stderr);
  assert.equal(a.stdout, b.stdout);
  const out = JSON.parse(a.stdout);
  assert.equal(out.simulated, true);
  assert.match(out.label, /^simulated: 16 cores/);
  assert.equal(out.points.length, 6);
  assert.deepEqual(
    out.models.map((m: { name: string }) => m.name),
    ['resnet50', 'googlenet'],
  );
  assert.equal(out.models[0].qosMs, 15);
  assert.ok(out.points.every((p: { stop: string }) => p.stop === 'drained'));
  assert.equal(out.timing, undefined, 'real-time measurements stay out of the seeded output');
});

test("simulate --find-max reports each policy's max QPS and the latencies at FCFS's max; decision time goes to stderr", async () => {
  const r = await veltair([
    'simulate',
    '--profiles',
    join(dir, 'resnet50.profile.json'),
    '--models',
    'resnet50',
    '--policy',
    'fcfs,veltair',
    '--find-max',
    ...common,
  ]);
  assert.equal(r.exitCode, 0, r.stderr);
  assert.match(r.stdout, /max QPS with ≥ 99% of every model's requests within QoS: fcfs \d/);
  assert.match(r.stdout, /at fcfs's max QPS/);
  assert.match(r.stderr, /decision time \(measured in real time/);
  assert.doesNotMatch(r.stdout, /decision time/);
});

test('simulate --plot writes the three figures as SVG with their data', async () => {
  const plots = join(dir, 'plots');
  const r = await veltair([
    'simulate',
    '--profiles',
    dir,
    '--models',
    'resnet50',
    '--policy',
    'fcfs,veltair,static:1-3',
    '--load',
    '0.1,0.3',
    '--plot',
    plots,
    ...common,
  ]);
  assert.equal(r.exitCode, 0, r.stderr);
  const files = readdirSync(plots).sort();
  assert.deepEqual(files, [
    'best-block-vs-load.json',
    'best-block-vs-load.svg',
    'blocks-resnet50.json',
    'blocks-resnet50.svg',
    'qos-vs-load.json',
    'qos-vs-load.svg',
  ]);
  for (const f of files.filter((x) => x.endsWith('.svg'))) {
    const svg = readFileSync(join(plots, f), 'utf8');
    assert.match(svg, /^<svg[^>]*>/);
    assert.match(svg, /simulated: 16 cores/);
  }
  const blocks = JSON.parse(readFileSync(join(plots, 'blocks-resnet50.json'), 'utf8'));
  assert.equal(blocks.rows.length, 2 * JAGGED.length, 'one bar per layer at the light and the heavy load');
  // Five satisfaction points per load: fcfs, veltair and the static ones (static ones only in their own figure when alone).
  const qos = JSON.parse(readFileSync(join(plots, 'qos-vs-load.json'), 'utf8'));
  assert.deepEqual([...new Set(qos.rows.map((x: { policy: string }) => x.policy))], ['fcfs', 'veltair']);
});

test('simulate: bad input is one clear error line and exit 1', async () => {
  // A profile taken of another bundle, found beside a bundle directory.
  const bundle = join(dir, 'resnet50.bundle');
  mkdirSync(bundle, { recursive: true });
  writeFileSync(join(bundle, 'manifest.json'), '{"not":"the profiled bundle"}\n');
  assertOneClearError(await veltair(['simulate', '--profiles', bundle, '--models', 'resnet50', ...common]), 'BAD_PROFILE', [
    'was not taken of bundle',
  ]);
  // A model without a QoS bound.
  assertOneClearError(
    await veltair(['simulate', '--profiles', join(dir, 'mystery.json'), '--models', 'mystery', ...common]),
    'BAD_ARGUMENT',
    ['"mystery" has no QoS bound'],
  );
  // A mix naming a model no profile describes.
  assertOneClearError(
    await veltair(['simulate', '--profiles', join(dir, 'resnet50.profile.json'), '--mix', 'medium', ...common]),
    'BAD_ARGUMENT',
    ['"googlenet"'],
  );
  // --cores 0.
  assertOneClearError(await veltair(['simulate', '--profiles', dir, '--mix', 'medium', '--cores', '0']), 'BAD_ARGUMENT', ['--cores "0"']);
  // A load no policy can hold.
  assertOneClearError(await veltair(['simulate', '--profiles', dir, '--mix', 'medium', '--qps', '1000000', ...common]), 'BAD_ARGUMENT', [
    'no policy can hold this load',
  ]);
  // A profile that is not one, naming the field.
  writeFileSync(join(dir, 'broken.json'), JSON.stringify({ ...small('broken'), coreCounts: [0] }));
  assertOneClearError(await veltair(['simulate', '--profiles', join(dir, 'broken.json'), '--models', 'broken', ...common]), 'BAD_PROFILE', [
    '/coreCounts/0',
  ]);
  assertOneClearError(await veltair(['simulate', '--profiles', dir, '--mix', 'medium', '--policy', 'fifo', ...common]), 'BAD_ARGUMENT', [
    '"fifo"',
  ]);
  assertOneClearError(await veltair(['simulate', '--profiles', dir, '--mix', 'enormous', ...common]), 'BAD_ARGUMENT', ['"enormous"']);
});

test('simulate reads the VELTAIR artifact CSV format and labels its figures as taken from the artifact', async () => {
  const rows = [
    '# comment',
    'layer,op,h,w,cin,cout,kh,kw,pad_h,pad_w,stride_h,stride_w,last,us_8,us_16,us_32',
    '0,conv,56,56,64,64,3,3,1,1,1,1,1,400,210,120',
    '1,conv,56,56,64,256,1,1,0,0,1,1,1,200,105,60',
  ];
  writeFileSync(join(dir, 'artifact.csv'), rows.join('\n') + '\n');
  const r = await veltair([
    'simulate',
    '--profiles',
    join(dir, 'artifact.csv'),
    '--models',
    'resnet50',
    '--policy',
    'fcfs',
    '--load',
    '0.2',
    '--json',
    ...common,
  ]);
  assert.equal(r.exitCode, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.models[0].figures.artifact, 2 * 2, 'two layers at 8 and 16 cores, level 0; 32 is beyond the 16-core machine');
  assert.equal(out.models[0].figures.measured, 0);
  assert.match(out.interference, /no interference calibration/);
  writeFileSync(join(dir, 'bad.csv'), rows.slice(0, 2).join('\n') + '\n0,conv,56,56,64,64,3,3,1,1,1,1,1,400,x,120\n');
  assertOneClearError(await veltair(['simulate', '--profiles', join(dir, 'bad.csv'), '--models', 'resnet50', ...common]), 'BAD_PROFILE', [
    'bad.csv:3',
    'us_16',
  ]);
});
