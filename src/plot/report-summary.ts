/**
 * The report's summary sections: the model, the target it was tuned for, the interference proxy
 * (when calibrated) and the tuning cost. Each is a pure function of the manifest (and the candidate
 * profiles) to HTML; every model-supplied string goes through report-html's escaping.
 */
import type { Manifest, ManifestLevelModel, ManifestTensorInfo } from '../bundle/manifest.js';
import type { BundleProfiles } from '../bundle/candidates-file.js';
import { el, facts, raw, section, table, type Content, type Html } from './report-html.js';
import { failedTotal, tuningCost, workloadLayers, type WorkloadCost } from './report-cost.js';

export const shapeText = (dims: readonly number[]): string => (dims.length === 0 ? 'scalar' : dims.join('×'));

export function bytesText(b: number): string {
  if (b >= 1024 ** 3) return `${(b / 1024 ** 3).toFixed(1)} GiB`;
  if (b >= 1024 ** 2) return `${(b / 1024 ** 2).toFixed(b % 1024 ** 2 === 0 ? 0 : 1)} MiB`;
  return `${(b / 1024).toFixed(b % 1024 === 0 ? 0 : 1)} KiB`;
}

const code = (s: string) => el('code', {}, s);
const lines = (items: readonly Content[]) => items.flatMap((x, i) => (i === 0 ? [x] : [raw('<br>'), x]));
const tensor = (t: ManifestTensorInfo) => [code(t.name), ` ${t.dtype} [${shapeText(t.shape)}]`];
const list = (xs: readonly (number | string)[]) => (xs.length === 0 ? 'none' : xs.join(', '));

export function modelSection(m: Manifest): Html {
  const tunable = m.layers.filter((l) => l.tunable);
  const workloads = new Set(tunable.map((l) => l.workload));
  const untuned = new Map<string, number>();
  for (const l of m.layers) if (!l.tunable) untuned.set(l.op, (untuned.get(l.op) ?? 0) + 1);
  const untunedText = [...untuned].map(([op, n]) => `${n} ${op}`).join(', ');
  const versions = m.layers.reduce((s, l) => s + l.versions.length, 0);
  const o = m.options;
  return section(
    'model',
    'Model',
    facts([
      ['File', code(m.model.path)],
      ['sha256', code(m.model.sha256)],
      ['ONNX opset', m.model.opset],
      ['Inputs', lines(m.model.inputs.map(tensor))],
      ['Outputs', lines(m.model.outputs.map(tensor))],
      [
        'Layers',
        `${m.layers.length}: ${tunable.length} tunable (${workloads.size} unique workloads)${untunedText ? `, ${untunedText} not tuned` : ''}`,
      ],
      ['Kept versions', `${versions} in all (at most ${o.maxVersions} per layer)`],
      [
        'Compile options',
        `${o.trials} trials per workload; levels ${list(o.levels)}; candidate threads ${list(o.threads)}; ` +
          `profiled at ${list(o.profileThreads)} threads; seed ${o.seed}`,
      ],
      [
        'Bundle',
        `format ${m.formatVersion}, veltair ${m.compilerVersion.veltair} ` +
          `(codegen ${m.compilerVersion.codegen}, kernel ABI ${m.compilerVersion.kernelAbi})`,
      ],
    ]),
  );
}

export function targetSection(m: Manifest): Html {
  const s = m.target.spec;
  const isa = Object.entries(s.isa)
    .filter(([, on]) => on)
    .map(([k]) => k);
  return section(
    'target',
    'Target',
    el('p', { class: 'sub' }, 'The machine the bundle was tuned on; its latencies hold for this machine.'),
    facts([
      ['CPU', s.cpuModel],
      ['ISA', isa.length ? isa.join(', ') : 'scalar only'],
      ['Cores', s.cores],
      ['Caches', `L1d ${bytesText(s.caches.l1d)} and L2 ${bytesText(s.caches.l2)} per core, L3 ${bytesText(s.caches.l3)}`],
      ['Compiler', code(s.cc)],
      ['Flags', code(s.cflags.join(' '))],
      ['Fingerprint', code(m.target.fingerprint)],
      [
        'Required extensions',
        el(
          'details',
          {},
          el('summary', {}, `${m.target.requiredIsa.length} CPU flags the kernels may use`),
          el('span', { class: 'mono' }, m.target.requiredIsa.join(' ')),
        ),
      ],
    ]),
    proxyFacts(m),
  );
}

const fit = (x: ManifestLevelModel) =>
  x.heldOut
    ? `held out (${x.heldOut.folds}-fold by calibration pass): R² ${x.heldOut.r2.toFixed(3)}, RMS error ${x.heldOut.rmsError.toFixed(2)} levels, ` +
      `${(x.heldOut.accuracy * 100).toFixed(0)}% rounded to the true level; in-sample R² ${x.r2.toFixed(3)}`
    : `in-sample only (no held-out estimate): R² ${x.r2.toFixed(3)}, RMS error ${x.rmsError.toFixed(2)} levels, ` +
      `${(x.accuracy * 100).toFixed(0)}% rounded to the true level`;

function proxyFacts(m: Manifest): Html {
  const p = m.interferenceProxy;
  if (!p) {
    return el(
      'p',
      { class: 'muted' },
      'Interference proxy: not calibrated for this bundle (',
      code('veltair bench --calibrate-proxy'),
      ' adds it).',
    );
  }
  return raw(
    el('h3', {}, 'Interference proxy').html +
      facts([
        ['Calibrated levels', list(p.levels)],
        [
          'Calibration',
          `${p.threads} executor threads on ${p.kernelCores} cores, noise on ${p.noiseCores}; ratio window ${p.ratioWindow} runs`,
        ],
        ['System model', fit(p.models.system)],
        ['Tenant model', fit(p.models.tenant)],
      ]).html,
  );
}

const seconds = (s: number) => (s >= 100 ? s.toFixed(0) : s >= 1 ? s.toFixed(2) : s.toFixed(3));
const failedText = (f: Readonly<Record<string, number>>) => {
  const parts = Object.entries(f)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, n]) => `${n} ${k.replace('_', ' ')}`);
  return parts.length ? parts.join(', ') : '0';
};
const layerLinks = (layers: readonly number[]): Content =>
  layers.flatMap((i, k) => [k === 0 ? '' : ', ', el('a', { href: `#layer-${i}` }, i)]);

function costRow(w: WorkloadCost): Content[] {
  return [code(w.workload), layerLinks(w.layers), w.ok, failedText(w.failed), w.kept, w.dominated, w.repeats, seconds(w.timedSeconds)];
}

export function tuningCostSection(m: Manifest, profiles: BundleProfiles | undefined): Html {
  const cost = tuningCost(m, profiles);
  const title = 'Tuning cost';
  if (!cost) {
    const first = [...workloadLayers(m).values()].map((indices) => m.layers.find((l) => l.index === indices[0]));
    const measured = first.reduce((s, l) => s + (l?.family?.candidates ?? 0), 0);
    return section(
      'tuning-cost',
      title,
      el(
        'p',
        {},
        `This bundle has no candidate profiles (profiles/candidates.json), so only the family summaries are known: ` +
          `${measured} candidates considered over ${first.length} tunable workloads, ` +
          `${m.options.trials} trials per workload at levels ${list(m.options.levels)}.`,
      ),
    );
  }
  const failed = failedTotal(cost.failed);
  return section(
    'tuning-cost',
    title,
    el(
      'p',
      { class: 'sub' },
      'What was measured to build the families. The bundle records no wall-clock tuning time (it must be byte-identical ' +
        'across recompiles from the same database); timed kernel seconds are the sum of the recorded repeat latencies, a lower bound on ' +
        'the kernel time spent (builds, verification and warm-up calls are not in it).',
    ),
    facts([
      ['Workloads tuned', cost.workloads.length],
      ['Trials per workload', `${m.options.trials} (compile option; candidates found in the tuning database count too)`],
      ['Measured candidates', `${cost.ok + failed}: ${cost.ok} ok, ${failed} failed${failed ? ` (${failedText(cost.failed)})` : ''}`],
      ['Interference levels', `${list(m.options.levels)}: every candidate timed at each`],
      ['Timed repeats', cost.repeats],
      ['Timed kernel seconds', `${seconds(cost.timedSeconds)} s (lower bound)`],
    ]),
    el(
      'details',
      { open: '' },
      el('summary', {}, `Per workload (${cost.workloads.length})`),
      el(
        'div',
        { class: 'scroll' },
        table(
          [
            { title: 'workload' },
            { title: 'layers' },
            { title: 'ok', numeric: true },
            { title: 'failed', numeric: true },
            { title: 'kept', numeric: true },
            { title: 'dominated', numeric: true },
            { title: 'repeats', numeric: true },
            { title: 'timed s', numeric: true },
          ],
          cost.workloads.map(costRow),
        ),
      ),
    ),
  );
}
