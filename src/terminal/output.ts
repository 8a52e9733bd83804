/**
 * What every command shares about talking to the user: machine output on stdout only with --json,
 * human text otherwise, progress on stderr only when stderr is a TTY, one clear line per error.
 */
import cliProgress from 'cli-progress';
import { isVeltairError } from '../errors.js';

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

export function printLine(text = ''): void {
  process.stdout.write(text + '\n');
}

/** Diagnostics that must never pollute --json stdout. */
export function note(text: string): void {
  process.stderr.write(text + '\n');
}

/** Exit code for an error: 1 for bad input, 2 for anything internal. Prints one line + hint. */
export function reportError(e: unknown, verbose: boolean): number {
  if (isVeltairError(e)) {
    process.stderr.write(`error[${e.code}]: ${e.message}\n  hint: ${e.hint}\n`);
    if (verbose && e.stack) process.stderr.write(e.stack + '\n');
    return e.exitCode;
  }
  const message = e instanceof Error ? e.message : String(e);
  process.stderr.write(
    `error[INTERNAL]: ${message.split('\n')[0]}\n  hint: this is a bug in veltair; rerun with --verbose and report the stack\n`,
  );
  if (verbose && e instanceof Error && e.stack) process.stderr.write(e.stack + '\n');
  return 2;
}

export interface Progress {
  start(total: number, label: string): void;
  update(done: number, label?: string): void;
  stop(): void;
}

/** A progress bar on stderr when it is a TTY and output is not --json; silent otherwise. */
export function progressBar(json: boolean): Progress {
  if (json || !process.stderr.isTTY) {
    return { start() {}, update() {}, stop() {} };
  }
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: '{label} [{bar}] {value}/{total} | ETA {eta_formatted}',
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  return {
    start(total, label) {
      bar.start(total, 0, { label });
    },
    update(done, label) {
      bar.update(done, label === undefined ? undefined : { label });
    },
    stop() {
      bar.stop();
    },
  };
}

/** Render rows as an aligned text table (first row = header). */
export function formatTable(rows: readonly (readonly string[])[], rightAlign: ReadonlySet<number> = new Set()): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: readonly string[]) =>
    r
      .map((cell, c) => (rightAlign.has(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}
