/**
 * The coverage table (bench/RESULTS.md, "Every torchvision model"): one row per model the
 * exporter was asked for, from the per-model records `coverage.ts` writes. Pure: records in, markdown out.
 *
 * A row says how far the model got: the exporter refused it (its error), veltair refused it (the
 * compile's error, which names every layer the runtime cannot run), it compiled but does not match
 * ONNX Runtime, or it compiled and matches, with its bundle size, compile seconds and veltair/ORT
 * latency at 1 and 2 threads (medians of paired rounds, `veltair bench --noise 0`).
 */

/** One model's coverage record (WORK/coverage/NAME.json). */
export interface CoverageRecord {
  readonly model: string;
  readonly task: 'classification' | 'segmentation' | 'detection';
  readonly input: readonly number[];
  /** The export: 'exported', or the exporter's error. */
  readonly export: { readonly ok: boolean; readonly error?: string };
  /** Multiply-accumulates of the tunable layers (from the lowered graph), when it loaded. */
  readonly gmacs?: number;
  readonly compile?: {
    readonly ok: boolean;
    readonly wallSeconds: number;
    readonly tuningSeconds?: number;
    readonly bundleBytes?: number;
    /** The error line veltair printed (code and message) when it refused or failed. */
    readonly error?: string;
    readonly budget: string;
  };
  /** Against ONNX Runtime on one seeded input: max |diff| / max |reference|. */
  readonly match?: { readonly relErr: number; readonly ok: boolean; readonly error?: string };
  /** threads → quiet latency medians and their paired ratio. */
  readonly latency?: Readonly<Record<string, { readonly veltairMs: number; readonly ortMs: number; readonly ratio: number }>>;
  readonly latencyError?: string;
  readonly when: string;
}

/** The largest relative error a model may have against ONNX Runtime and still match. */
export const MATCH_TOLERANCE = 1e-3;

/** What a model's row says in its status column. */
export function statusOf(r: CoverageRecord): string {
  if (!r.export.ok) return 'export refused';
  if (!r.compile) return 'not compiled yet';
  if (!r.compile.ok) return r.compile.error?.includes('UNSUPPORTED') ? 'refused: unsupported layers' : 'compile failed';
  if (!r.match) return 'compiled, not checked yet';
  if (r.match.error) return 'check failed';
  return r.match.ok ? 'matches ORT' : 'MISMATCH';
}

const mb = (bytes: number | undefined) => (bytes === undefined ? '' : (bytes / 2 ** 20).toFixed(1));
const ratioCell = (r: CoverageRecord, t: number) => {
  const l = r.latency?.[String(t)];
  return l ? `${l.ratio.toFixed(3)} (${l.veltairMs.toPrecision(3)} / ${l.ortMs.toPrecision(3)})` : '';
};
/** A table cell: no pipes or newlines, a file's name without its directories (node names keep theirs), bounded. */
const clean = (s: string, max = 220) => {
  const one = s
    .replace(/(?:\/[^\s/:"']+)+\/([^\s/:"']+\.(?:onnx|json|bundle|npy|data))\b/g, '$1')
    .replace(/\|/g, '/')
    .replace(/\s+/g, ' ')
    .trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
};

/** Operators whose output shape depends on the data (detection post-processing), which a static plan cannot hold. */
const DATA_DEPENDENT = new Set(['NonZero', 'NonMaxSuppression', 'If', 'Loop', 'Unique']);

/** The operator types an UNSUPPORTED_OPS refusal lists ("Name (node…" after "unsupported operators:"). */
function refusedOperators(error: string): string[] {
  const listed = error.split('unsupported operators:')[1];
  return listed === undefined ? [] : [...listed.matchAll(/([A-Za-z0-9]+) \(nodes? "/g)].map((m) => m[1]!);
}

/** What running a refused model would take, from the operators its refusal names. */
export function whatItWouldTake(error: string): string {
  const ops = refusedOperators(error);
  const dynamic = ops.filter((op) => DATA_DEPENDENT.has(op));
  if (dynamic.length > 0) {
    const others = ops.filter((o) => !DATA_DEPENDENT.has(o)).join(', ') || 'nothing else';
    return (
      `would take: shapes that depend on the data (${dynamic.join(', ')}; also refused: ${others}): ` +
      'the runtime plans every buffer ahead of time, so the post-processing would need run-time shapes and generic ops beside the compiled backbone'
    );
  }
  return ops.length > 0
    ? `would take: a shape rule and a runtime op for ${ops.join(', ')}`
    : 'would take: a native lowering for the layers named';
}

function note(r: CoverageRecord): string {
  if (!r.export.ok) return clean(r.export.error ?? '');
  const refusal = r.compile && !r.compile.ok && statusOf(r) === 'refused: unsupported layers' ? (r.compile.error ?? '') : undefined;
  if (refusal !== undefined) return clean(`${refusal}; ${whatItWouldTake(refusal)}`, 400);
  if (r.compile && !r.compile.ok) return clean(r.compile.error ?? '');
  if (r.match?.error) return clean(r.match.error);
  if (r.match && !r.match.ok) return `rel err ${r.match.relErr.toExponential(2)}`;
  if (r.latencyError) return clean(`latency: ${r.latencyError}`);
  return r.match ? `rel err ${r.match.relErr.toExponential(1)}` : '';
}

const geomean = (xs: readonly number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);

/** The markdown table and its summary lines. */
export function coverageTable(records: readonly CoverageRecord[]): string {
  const rows = [...records].sort((a, b) => a.task.localeCompare(b.task) || a.model.localeCompare(b.model));
  const lines = [
    '| model | input | GMACs | status | bundle MiB | compile s | veltair/ORT 1 thread (ms / ms) | 2 threads | note |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.model} | ${r.input.slice(2).join('×')} | ${r.gmacs === undefined ? '' : r.gmacs.toFixed(2)} | ${statusOf(r)} | ` +
        `${mb(r.compile?.bundleBytes)} | ${r.compile?.ok ? r.compile.wallSeconds.toFixed(0) : ''} | ${ratioCell(r, 1)} | ${ratioCell(r, 2)} | ${note(r)} |`,
    );
  }
  const count = (s: string) => rows.filter((r) => statusOf(r) === s).length;
  lines.push(
    '',
    `${rows.length} models: ${count('matches ORT')} compile and match ONNX Runtime (rel err ≤ ${MATCH_TOLERANCE}), ` +
      `${count('MISMATCH')} mismatch, ${count('refused: unsupported layers')} refused before tuning, ${count('compile failed')} failed to compile, ` +
      `${count('export refused')} refused by the exporter, ${rows.filter((r) => r.export.ok && !r.compile).length} not compiled yet.`,
  );
  for (const t of [1, 2]) {
    const got = rows.flatMap((r) =>
      r.latency?.[String(t)] && r.match?.ok ? [{ model: r.model, ratio: r.latency[String(t)]!.ratio }] : [],
    );
    if (got.length === 0) continue;
    const worst = got.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    lines.push(
      `${t} thread(s): ${got.length} models timed, geomean veltair/ORT ${geomean(got.map((g) => g.ratio)).toFixed(3)}, ` +
        `worst ${worst.model} ${worst.ratio.toFixed(3)}, above 1.0: ${
          got
            .filter((g) => g.ratio > 1)
            .map((g) => g.model)
            .join(', ') || 'none'
        }`,
    );
  }
  return lines.join('\n');
}

export const TABLE_BEGIN = '<!-- coverage-table:begin (generated by src/bench/coverage.ts --results) -->';
export const TABLE_END = '<!-- coverage-table:end -->';

/** `doc` with the text between the table markers replaced by `table`; null when the markers are missing. */
export function replaceTable(doc: string, table: string, begin = TABLE_BEGIN, end = TABLE_END): string | null {
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  if (a < 0 || b < a) return null;
  return `${doc.slice(0, a + begin.length)}\n${table}\n${doc.slice(b)}`;
}
