/**
 * A Node script serving JSON-lines requests in its own child process, pinned from birth (taskset)
 * to the given cores and started with glibc's malloc told to keep freed memory. ONNX Runtime
 * baselines (per layer and whole model) run this way: see layer-child.ts for why both matter.
 *
 * Protocol: the parent writes `{...request, id}` per stdin line; the child answers one line per
 * request, `{id, ...reply}` or `{id, error}`. The child runs `node SCRIPT --serve`.
 *
 * Between requests the child is stopped (SIGSTOP; SIGCONT before the next request, and before it
 * is closed or this process exits). ONNX Runtime's intra-op threads keep spin-waiting after Run()
 * returns; on the two cores both arms share, that took a core from the arm timed next (veltair's
 * 2-thread samples of mobilenet_v3_small fell into two modes, 2.4 and 6.5 ms). Stopped, the child
 * cannot run between its turns, and its own runs keep every ORT default, spinning included; each
 * turn starts with an unreported warm-up run.
 */
import { createInterface } from 'node:readline';
import { execa, type ResultPromise } from 'execa';
import { MALLOC_KEEP_TUNABLES } from '../toolchain/malloc-tunables.js';

export interface PinnedChild {
  /** Whether the child was started under taskset on the requested cores. */
  readonly pinned: boolean;
  ask<R extends object>(request: Record<string, unknown>): Promise<R>;
  close(): Promise<void>;
}

async function hasTaskset(): Promise<boolean> {
  try {
    await execa('taskset', ['--version'], { stdin: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `mallocTunables: false` starts the child with glibc's defaults (src/bench/ort-malloc.ts measures the difference). */
export async function startPinnedChild(
  script: string,
  cores: readonly number[],
  o: { mallocTunables?: boolean } = {},
): Promise<PinnedChild> {
  const pinned = await hasTaskset();
  const [cmd, args] = pinned
    ? ['taskset', ['-c', cores.join(','), process.execPath, script, '--serve']]
    : [process.execPath, [script, '--serve']];
  const tunables = [process.env['GLIBC_TUNABLES'], o.mallocTunables === false ? undefined : MALLOC_KEEP_TUNABLES].filter(Boolean).join(':');
  const child: ResultPromise = execa(cmd, args as string[], {
    env: tunables ? { GLIBC_TUNABLES: tunables } : {},
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
  });
  type Reply = { id: number; error?: string };
  const pending = new Map<number, (r: Reply) => void>();
  const stderr: string[] = [];
  const firstStderrLine = () => stderr.join('').split('\n')[0] || 'no output';
  child.stderr?.on('data', (d: Buffer) => {
    if (stderr.length < 20) stderr.push(d.toString());
  });
  createInterface({ input: child.stdout! }).on('line', (text) => {
    let r: Reply;
    try {
      r = JSON.parse(text) as Reply;
    } catch {
      return;
    }
    const settle = pending.get(r.id);
    pending.delete(r.id);
    settle?.(r);
  });
  const exited = child.then(() => {
    for (const [id, resolve] of pending) resolve({ id, error: `ONNX Runtime child exited: ${firstStderrLine()}` });
    pending.clear();
  });
  // A stopped child must not outlive this process stopped: continue it on the way out (execa's
  // cleanup then ends it; a signal sent to a stopped process waits until it continues).
  let stopped = false;
  const signal = (sig: 'SIGSTOP' | 'SIGCONT') => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    try {
      process.kill(child.pid, sig);
      stopped = sig === 'SIGSTOP';
    } catch {
      /* it has just exited */
    }
  };
  const resumeOnExit = () => {
    if (stopped) signal('SIGCONT');
  };
  process.once('exit', resumeOnExit);
  let next = 0;
  return {
    pinned,
    ask<R extends object>(request: Record<string, unknown>) {
      return new Promise<R>((resolve, reject) => {
        const id = next++;
        pending.set(id, (r) => {
          if (pending.size === 0) signal('SIGSTOP');
          if (r.error !== undefined) reject(new Error(r.error));
          else resolve(r as unknown as R);
        });
        if (child.exitCode !== null || !child.stdin?.writable) {
          pending.delete(id);
          reject(new Error(`ONNX Runtime child is not running: ${firstStderrLine()}`));
          return;
        }
        if (stopped) signal('SIGCONT');
        child.stdin.write(JSON.stringify({ ...request, id }) + '\n');
      });
    },
    async close() {
      if (stopped) signal('SIGCONT');
      process.removeListener('exit', resumeOnExit);
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The child side: answer each stdin line with `handle(request)`, errors as one-line messages. */
export async function serveJsonLines(handle: (request: Record<string, unknown>) => Promise<object>): Promise<void> {
  const lines = createInterface({ input: process.stdin });
  for await (const text of lines) {
    let id = -1;
    try {
      const req = JSON.parse(text) as Record<string, unknown> & { id: number };
      id = req.id;
      process.stdout.write(JSON.stringify({ id, ...(await handle(req)) }) + '\n');
    } catch (e) {
      process.stdout.write(JSON.stringify({ id, error: (e instanceof Error ? e.message : String(e)).split('\n')[0] }) + '\n');
    }
  }
}
