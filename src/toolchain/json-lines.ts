/**
 * The protocol every veltair tool speaks: one JSON object per stdout line (the noise generator,
 * the probe, the peak loop). A reader collects the events and lets a caller wait for one.
 */
import { VeltairError } from '../errors.js';

/** One JSON object per stdout line: the protocol every veltair tool speaks. */
export type ToolEvent = Record<string, unknown>;

export interface JsonLineReader {
  /** Every parsed line so far, in order. */
  readonly events: readonly ToolEvent[];
  /** The last stderr output (bounded), for error messages. */
  stderrTail(): string;
  /**
   * The first event at or after index `from` matching `match`; rejects with `onEnd()` if the
   * process exits first and with a timeout error after `timeoutMs`.
   */
  waitFor(match: (e: ToolEvent) => boolean, options: { from?: number; timeoutMs: number; what: string }): Promise<ToolEvent>;
}

interface ToolChild {
  readonly stdout: NodeJS.ReadableStream | null;
  readonly stderr: NodeJS.ReadableStream | null;
  then<T>(onExit: (r: unknown) => T): Promise<T>;
}

export function readJsonLines(child: ToolChild, toolName: string): JsonLineReader {
  const events: ToolEvent[] = [];
  const wake: Array<() => void> = [];
  let pending = '';
  let stderr = '';
  let exited = false;
  const notify = () => wake.splice(0).forEach((w) => w());
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        events.push(JSON.parse(line) as ToolEvent);
      } catch {
        /* not protocol output */
      }
    }
    notify();
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-2000);
  });
  void child.then(() => {
    exited = true;
    notify();
  });
  return {
    events,
    stderrTail: () => stderr.trim(),
    waitFor(match, { from = 0, timeoutMs, what }) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new VeltairError(
                'INTERNAL',
                `veltair's ${toolName} tool did not report ${what} within ${timeoutMs} ms`,
                'the machine may be overloaded or short of memory',
                2,
              ),
            ),
          timeoutMs,
        );
        const check = () => {
          const found = events.slice(from).find((e) => match(e) || typeof e['error'] === 'string' || e['event'] === 'error');
          if (found && !(typeof found['error'] === 'string' || found['event'] === 'error')) {
            clearTimeout(timer);
            resolve(found);
          } else if (found || exited) {
            clearTimeout(timer);
            const message = found ? String(found['message'] ?? found['error']) : `exited before ${what}: ${stderr.trim() || 'no output'}`;
            reject(
              Object.assign(
                new VeltairError(
                  'INTERNAL',
                  `veltair's ${toolName} tool failed: ${message}`,
                  'the machine may be short of memory; try smaller settings',
                  2,
                ),
                { toolMessage: message },
              ),
            );
          } else {
            wake.push(check);
          }
        };
        check();
      });
    },
  };
}
