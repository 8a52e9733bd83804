/**
 * The late-request attribution table (`veltair load --qps Q --attribute`, serve-bench --attribute): per
 * model, the late requests by cause, and each component's median over on-time and over late requests.
 */
import { COMPONENT_LABELS, COMPONENTS, type AttributionResult, type Cause } from './late-attribution.js';
import { formatTable } from '../terminal/output.js';

const label = (c: Cause): string => (c in COMPONENT_LABELS ? COMPONENT_LABELS[c as keyof typeof COMPONENT_LABELS] : c);

export function attributionTable(r: AttributionResult): string {
  const head = ['model', 'sent', 'late', 'causes of late requests', ...COMPONENTS.map((c) => `${COMPONENT_LABELS[c]} ms`)];
  const rows: string[][] = [];
  for (const m of r.models) {
    const causes = Object.entries(m.causes)
      .sort((a, b) => b[1] - a[1])
      .map(([c, n]) => `${label(c as Cause)} ${n}`)
      .join(', ');
    const cells = (meds: typeof m.onTimeMedians) => COMPONENTS.map((c) => (meds[c] === undefined ? '-' : meds[c].toFixed(2)));
    rows.push([m.name, String(m.sent), String(m.late), causes || '-', ...cells(m.onTimeMedians)]);
    rows.push([`  late (QoS ${m.qosMs} ms)`, '', '', '', ...cells(m.lateMedians)]);
  }
  const title = `${r.totalQps.toFixed(2)} QPS for ${r.durationS} s; component medians, on-time row then late row (client lag is not in a latency)`;
  return `${title}\n${formatTable([head, ...rows], new Set([1, 2, ...COMPONENTS.map((_, i) => i + 4)]))}`;
}
