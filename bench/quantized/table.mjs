#!/usr/bin/env node
// The INT8 table of bench/RESULTS.md from bench/quantized/suite.sh's results: per model and thread count,
// veltair INT8 / ORT INT8 (median of paired per-round ratios, and their spread), veltair FP32 / veltair
// INT8 (two consecutive runs: medians), and where the INT8 time goes (step-roofline.ts at 1 thread).
//   node bench/quantized/table.mjs WORK [NAME…]
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INT8_SET } from './models.mjs';

const [work, ...only] = process.argv.slice(2);
if (!work) {
  console.error('usage: node bench/quantized/table.mjs WORK [NAME...]');
  process.exit(2);
}

const names = only.length > 0 ? only : INT8_SET;
const read = (f) => (existsSync(join(work, 'results', f)) ? JSON.parse(readFileSync(join(work, 'results', f), 'utf8')) : undefined);
const quiet = (r) => r?.results?.find((c) => c.noise === 0);
const geomean = (xs) => (xs.length ? Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length) : NaN);
const f3 = (x) => (Number.isFinite(x) ? x.toFixed(3) : '–');
const fms = (x) => (x >= 10 ? x.toFixed(1) : x.toFixed(2));

/** Per-round ratios of arm a over arm b (each round's median of its runs), for the spread. */
function roundRatios(report, c, a, b) {
  const n = report.runsPerTurn;
  const med = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const out = [];
  for (let i = 0; i + n <= c.samples[a].length; i += n) out.push(med(c.samples[a].slice(i, i + n)) / med(c.samples[b].slice(i, i + n)));
  return out;
}

const pct = (x) => `${Math.round(100 * x)}%`;
const BOUND = { fma: 'FMA', int8: 'INT8 peak', memory: 'memory' };

/** The roofline's three largest groups, and the time outside INT8 kernels. */
function where(r) {
  if (!r) return '';
  const outside = r.steps.filter((s) => !s.int8).reduce((a, s) => a + s.ms, 0) / r.totalMs;
  const groups = r.groups.slice(0, 3).map((g) => `${g.group} ${pct(g.share)} at ${pct(g.fraction)} of ${BOUND[g.bound]}`);
  return `${groups.join('; ')}; ${pct(outside)} outside INT8 kernels (whole run at ${pct(r.fraction)} of its limit)`;
}

const rows = [];
const ratios = { 1: [], 2: [] };
const overFp32 = { 1: [], 2: [] };
const peaks = [];
for (const m of names) {
  const cells = [m];
  const secs = read(`${m}.int8.compile-seconds.json`)?.seconds;
  const int8 = read(`${m}.int8.compile.json`)?.int8;
  cells.push(int8 ? `${int8.layers} / ${secs ?? '?'} s` : 'failed');
  for (const t of [1, 2]) {
    const q = read(`${m}.int8.t${t}.json`);
    const f = read(`${m}.fp32.t${t}.json`);
    const cq = quiet(q);
    const cf = quiet(f);
    if (!cq) {
      cells.push('–', '–');
      continue;
    }
    const rr = roundRatios(q, cq, 'veltair', 'ort');
    ratios[t].push(cq.ratioVsOrt);
    cells.push(`${f3(cq.ratioVsOrt)} [${f3(Math.min(...rr))}–${f3(Math.max(...rr))}] (${fms(cq.veltairMs)} / ${fms(cq.ortMs)})`);
    if (cf) {
      const x = cf.veltairMs / cq.veltairMs;
      overFp32[t].push(x);
      cells.push(`${x.toFixed(2)}× (${fms(cf.veltairMs)}; ORT FP32 ${fms(cf.ortMs)})`);
    } else cells.push('–');
  }
  const p1 = read(`${m}.int8.profile.t1.json`);
  if (p1) peaks.push(`${m}: FMA ${p1.peakGflops.toFixed(0)} GFLOP/s, INT8 ${p1.int8PeakGops?.toFixed(0) ?? '–'} GOP/s`);
  cells.push(where(p1));
  rows.push(`| ${cells.join(' | ')} |`);
}
console.log(
  '| model | INT8 layers / compile | INT8 / ORT INT8, 1 thread [round spread] (ms / ms) | FP32 / INT8, 1 thread (veltair FP32 ms) | INT8 / ORT INT8, 2 threads | FP32 / INT8, 2 threads | where the INT8 time goes, 1 thread |',
);
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
console.log('');
for (const t of [1, 2])
  console.log(
    `${t} thread(s): geomean INT8 / ORT INT8 ${f3(geomean(ratios[t]))} over ${ratios[t].length} models (worst ${f3(Math.max(...ratios[t]))}); ` +
      `geomean FP32 / INT8 ${geomean(overFp32[t]).toFixed(2)}× (least ${Math.min(...overFp32[t]).toFixed(2)}×)`,
  );
if (peaks.length) console.log(`\nPeaks measured with each 1-thread profile: ${peaks.join('; ')}`);

// Accuracy, where bench/quantized/agreement.mjs ran: top-1 against veltair FP32, outputs against ORT INT8.
const accuracy = names.map((m) => [m, read(`${m}.agreement.json`)]).filter(([, a]) => a !== undefined);
if (accuracy.length) {
  const share = (a, b) => (b === 0 ? '–' : `${((100 * a) / b).toFixed(2)}%`);
  console.log(
    '\n| model | top-1 INT8 = FP32 | FP32: classes picked, median top-1 margin (INT8 output steps) | veltair INT8 vs ORT INT8: outputs within one step / equal |',
  );
  console.log('|---|---|---|---|');
  for (const [m, a] of accuracy)
    console.log(
      `| ${m} | ${a.top1Agree} / ${a.inputs} (${share(a.top1Agree, a.inputs)}) | ${a.fp32Classes ?? '–'}, ${a.fp32MarginSteps?.toFixed(2) ?? '–'} | ` +
        `${share(a.ortWithinStep, a.ortOutputs)} / ${share(a.ortEqual, a.ortOutputs)} of ${a.ortOutputs} (${a.ortInputs} inputs) |`,
    );
}
