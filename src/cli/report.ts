/**
 * `veltair report BUNDLE -o report.html [--force] [--json]`: one self-contained HTML page with the
 * bundle's model, target, tuning cost, versions per layer, layer table and every layer's figure.
 * The output is checked before anything is rendered and written atomically.
 */
import { hasSparseHead } from '../runtime/sparse-head.js';
import { readHeadMeta } from '../sparse-head/format.js';
import type { Command } from 'commander';
import { userError } from '../errors.js';
import { commitFiles, planOutput, stageFile } from '../plot/output-file.js';
import { printJson, printLine, progressBar } from '../terminal/output.js';

interface ReportFlags {
  output?: string;
  force?: boolean;
  json?: boolean;
}

export interface ReportSummary {
  readonly output: string;
  readonly layers: number;
  readonly figures: number;
  readonly bytes: number;
}

async function reportAction(bundleDir: string, f: ReportFlags): Promise<void> {
  if (!f.output)
    throw userError(
      'BAD_ARGUMENT',
      'veltair report needs -o FILE.html (the report to write)',
      'e.g. veltair report model.bundle -o report.html',
    );
  const force = f.force === true;
  const out = planOutput('-o', f.output, ['html', 'htm'], force, 'veltair report').path;
  // vega, vega-lite and resvg take ~0.7 s to load: only this command pays for them.
  const { buildReport, readReportBundle } = await import('../plot/report.js');
  const { bundle, profiles } = await readReportBundle(bundleDir);
  const bar = progressBar(f.json === true);
  let started = false;
  let report;
  try {
    const sparse = hasSparseHead(bundle.manifest.files) ? await readHeadMeta(bundle.paths.dir) : undefined;
    report = await buildReport(
      bundle.manifest,
      profiles,
      (done, total) => {
        if (!started) {
          bar.start(total, 'rendering layer figures');
          started = true;
        }
        bar.update(done);
      },
      sparse,
    );
  } finally {
    bar.stop();
  }
  commitFiles([stageFile(out, report.html)]);
  const bytes = Buffer.byteLength(report.html);
  const summary: ReportSummary = { output: out, layers: report.layers, figures: report.figures, bytes };
  if (f.json) printJson(summary);
  else printLine(`report  ${out} (${(bytes / 1024).toFixed(0)} KiB): ${report.layers} layers, ${report.figures} figures`);
}

export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description('write one self-contained HTML report of a bundle: model, target, tuning cost, layer table and every Pareto figure')
    .argument('<bundle>', 'bundle directory written by veltair compile')
    .option('-o, --output <file.html>', 'HTML file to write')
    .option('--force', 'replace an existing file at -o')
    .option('--json', 'machine-readable summary on stdout ({output, layers, figures, bytes}), nothing else there')
    .action(reportAction);
}
