/**
 * Veltair's own small C programs (noise generator, calibration probe, FMA peak loop) are compiled
 * once per machine into a content-addressed cache: the binary's name carries the sha256 of its
 * source, flags, compiler version and — because -march=native is in the flags — the CPU's
 * identity, so a source edit, a new compiler or another CPU never reuses a stale binary.
 * Binaries are written to a temp name and renamed into place: concurrent callers never see half a file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { VeltairError, userError } from '../errors.js';

export type NativeToolName = 'noise' | 'peak' | 'probe';

/** Flags every tool is built with. -march=native: the tools measure this machine, nothing else. */
export const TOOL_FLAGS: readonly string[] = ['-O2', '-march=native', '-pthread', '-std=gnu11'];

/** `VELTAIR_CACHE_DIR`, else `$XDG_CACHE_HOME/veltair`, else `~/.cache/veltair`. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env['VELTAIR_CACHE_DIR']) return env['VELTAIR_CACHE_DIR'];
  if (env['XDG_CACHE_HOME']) return join(env['XDG_CACHE_HOME'], 'veltair');
  return join(homedir(), '.cache', 'veltair');
}

/** The repository root: the nearest folder above this file holding package.json (works from src/ and dist/). */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new VeltairError('INTERNAL', 'cannot find the veltair package root', 'reinstall veltair', 2);
    dir = up;
  }
  return dir;
}

export function toolSourcePath(name: NativeToolName): string {
  return join(repoRoot(), 'native-kernels', `${name}.c`);
}

function compilerName(env: NodeJS.ProcessEnv = process.env): string {
  return env['CC'] && /^[\w./+-]+$/.test(env['CC']) ? env['CC'] : 'cc';
}

function noCompiler(cc: string): VeltairError {
  return userError('NO_COMPILER', `C compiler ${JSON.stringify(cc)} was not found`,
    'install gcc or clang (e.g. `apt-get install gcc`) or point the CC environment variable at one');
}

const versionCache = new Map<string, Promise<string>>();

/** `cc --version` output, asked once per process. */
export function compilerVersion(cc = compilerName()): Promise<string> {
  let v = versionCache.get(cc);
  if (!v) {
    v = execa(cc, ['--version']).then((r) => r.stdout.trim(), (e: unknown) => {
      versionCache.delete(cc);
      if ((e as { code?: string }).code === 'ENOENT') throw noCompiler(cc);
      throw e;
    });
    versionCache.set(cc, v);
  }
  return v;
}

/** What -march=native means here: the CPU model and its flags. */
function cpuIdentity(): string {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const first = (key: string) => info.split('\n').find((l) => l.startsWith(key)) ?? '';
    return `${first('model name')}\n${first('flags')}`;
  } catch {
    return process.arch;
  }
}

export function toolHash(source: string, flags: readonly string[], ccVersion: string): string {
  return createHash('sha256').update(source).update('\0').update(flags.join(' ')).update('\0')
    .update(ccVersion).update('\0').update(cpuIdentity()).digest('hex');
}

/** Path of the compiled tool, compiling it first when the cache does not hold this exact build. */
export async function ensureTool(name: NativeToolName, options: { cacheDir?: string } = {}): Promise<string> {
  const cc = compilerName();
  const sourcePath = toolSourcePath(name);
  const [source, version] = await Promise.all([readFile(sourcePath, 'utf8'), compilerVersion(cc)]);
  const dir = join(options.cacheDir ?? cacheDir(), 'tools');
  const target = join(dir, `${name}-${toolHash(source, TOOL_FLAGS, version).slice(0, 16)}`);
  if (existsSync(target)) return target;
  await mkdir(dir, { recursive: true });
  const temp = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await execa(cc, [...TOOL_FLAGS, '-o', temp, sourcePath]);
    await rename(temp, target);
  } catch (e) {
    await rm(temp, { force: true });
    if ((e as { code?: string }).code === 'ENOENT') throw noCompiler(cc);
    const stderr = (e as { stderr?: string }).stderr ?? String(e);
    throw new VeltairError('COMPILE_FAILED', `compiling veltair's ${name} tool failed: ${stderr.split('\n').slice(0, 3).join(' ')}`,
      `check that ${cc} supports ${TOOL_FLAGS.join(' ')}; this is a veltair bug if it does`, 2);
  }
  return target;
}

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
      try { events.push(JSON.parse(line) as ToolEvent); } catch { /* not protocol output */ }
    }
    notify();
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-2000); });
  void child.then(() => { exited = true; notify(); });
  return {
    events,
    stderrTail: () => stderr.trim(),
    waitFor(match, { from = 0, timeoutMs, what }) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new VeltairError('INTERNAL', `veltair's ${toolName} tool did not report ${what} within ${timeoutMs} ms`,
          'the machine may be overloaded or short of memory', 2)), timeoutMs);
        const check = () => {
          const found = events.slice(from).find((e) => match(e) || typeof e['error'] === 'string' || e['event'] === 'error');
          if (found && !(typeof found['error'] === 'string' || found['event'] === 'error')) {
            clearTimeout(timer);
            resolve(found);
          } else if (found || exited) {
            clearTimeout(timer);
            const message = found ? String(found['message'] ?? found['error']) : `exited before ${what}: ${stderr.trim() || 'no output'}`;
            reject(Object.assign(new VeltairError('INTERNAL', `veltair's ${toolName} tool failed: ${message}`,
              'the machine may be short of memory; try smaller settings', 2), { toolMessage: message }));
          } else {
            wake.push(check);
          }
        };
        check();
      });
    },
  };
}
