/** Markdown of training epochs' profiles (src/sparse/epoch-breakdown.ts): each part's seconds and share, epochs side by side. */
import { PART_LABELS, type EpochPart, type EpochProfile } from '../sparse/epoch-breakdown.js';

export interface LabelledProfile {
  readonly label: string;
  readonly profile: EpochProfile;
}

export function profileMarkdown(title: string, cols: readonly LabelledProfile[]): string {
  if (cols.length === 0) return '';
  const parts = Object.keys(PART_LABELS) as EpochPart[];
  const cell = (p: EpochProfile, k: EpochPart) =>
    `${p.parts[k].toFixed(2)} (${((100 * p.parts[k]) / Math.max(p.seconds, 1e-9)).toFixed(1)}%)`;
  return [
    `##### ${title}`,
    '',
    `| part of the epoch | ${cols.map((c) => `${c.label} s (share)`).join(' | ')} |`,
    `|---|${cols.map(() => '---').join('|')}|`,
    ...parts.map((k) => `| ${PART_LABELS[k]} | ${cols.map((c) => cell(c.profile, k)).join(' | ')} |`),
    `| **epoch** | ${cols.map((c) => `**${c.profile.seconds.toFixed(2)}**`).join(' | ')} |`,
    '',
    "The passes' wall time is shared out to their phases in proportion to the threads' seconds in each (src/sparse/epoch-breakdown.ts).",
    '',
  ].join('\n');
}
