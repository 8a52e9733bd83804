/**
 * The C compiler: found once, from `CC` (which may carry a launcher, e.g. `ccache gcc`: split into
 * an argument array, never handed to a shell) or else `cc`. Every compile in veltair goes through
 * runCompiler, so a missing compiler is one error, NO_COMPILER, wherever it is first needed.
 */
import { getPriority, setPriority } from 'node:os';
import { execa, type Options } from 'execa';
import { userError, VeltairError } from '../errors.js';

export interface Compiler {
  /** The program to execute. */
  readonly command: string;
  /** Arguments before veltair's own (`ccache gcc`: ['gcc']). */
  readonly leadingArgs: readonly string[];
  /** As the user wrote it, for messages. */
  readonly display: string;
}

/** A word of a command named by the environment (CC, NM): a path or a flag, without shell syntax (never given to a shell). */
const COMMAND_WORD = /^[\w./+=,:@%-]+$/;

/** An environment variable's command line split into words, or the first word that is not a plain one. */
export function plainCommand(raw: string): Compiler | { readonly bad: string } {
  const words = raw.split(/\s+/);
  const bad = words.find((w) => !COMMAND_WORD.test(w));
  return bad !== undefined ? { bad } : { command: words[0]!, leadingArgs: words.slice(1), display: raw };
}

export function compiler(env: NodeJS.ProcessEnv = process.env): Compiler {
  const raw = env['CC']?.trim();
  if (!raw) return { command: 'cc', leadingArgs: [], display: 'cc' };
  const c = plainCommand(raw);
  if ('bad' in c) {
    throw userError(
      'NO_COMPILER',
      `CC=${JSON.stringify(raw)} is not a command veltair can run: ${JSON.stringify(c.bad)} is not a plain word`,
      'set CC to a compiler path, optionally after a launcher (e.g. CC="ccache gcc"); quotes and shell syntax are not interpreted',
    );
  }
  return c;
}

export function noCompiler(c: Compiler): VeltairError {
  return userError(
    'NO_COMPILER',
    `C compiler ${JSON.stringify(c.display)} was not found`,
    'install gcc (e.g. `apt-get install gcc`) or point the CC environment variable at a C compiler',
  );
}

/**
 * The compiler's environment (and binutils'): this process's, minus LD_PRELOAD. A sanitizer runtime
 * preloaded into Node (to load a sanitized addon) must not be injected into gcc, which is not our
 * code to check.
 */
export function compilerEnv(): NodeJS.ProcessEnv {
  const { LD_PRELOAD: _preload, ...env } = process.env;
  return env;
}

const isMissing = (e: unknown) => (e as { code?: string }).code === 'ENOENT';

export interface CompilerRunOptions extends Pick<Options, 'cwd'> {
  /**
   * Raise the compiler's nice value to this, best effort (set on the driver as it starts: the
   * passes it forks after inherit it), so what runs beside it at normal priority comes first.
   */
  readonly niceness?: number;
}

/** Run the compiler with `args`; a missing compiler is NO_COMPILER, anything else is rethrown (execa's error, with stderr). */
export async function runCompiler(args: readonly string[], options: CompilerRunOptions = {}, c: Compiler = compiler()): Promise<void> {
  const { niceness, ...execaOptions } = options;
  try {
    const run = execa(c.command, [...c.leadingArgs, ...args], { ...execaOptions, stdin: 'ignore', env: compilerEnv(), extendEnv: false });
    if (niceness !== undefined && run.pid !== undefined) {
      try {
        setPriority(run.pid, Math.max(niceness, getPriority()));
      } catch {
        /* gone already, or not allowed: it only runs at normal priority */
      }
    }
    await run;
  } catch (e) {
    if (isMissing(e)) throw noCompiler(c);
    throw e;
  }
}

/** First lines of a compiler failure, for a one-line message. */
export function compilerStderr(e: unknown, lines = 4): string {
  return String((e as { stderr?: string }).stderr ?? e)
    .split('\n')
    .filter(Boolean)
    .slice(0, lines)
    .join('\n');
}

const versions = new Map<string, Promise<string>>();

/** `cc --version` output, asked once per process and compiler. */
export function compilerVersion(c: Compiler = compiler()): Promise<string> {
  let v = versions.get(c.display);
  if (!v) {
    const run = execa(c.command, [...c.leadingArgs, '--version'], { stdin: 'ignore', env: compilerEnv(), extendEnv: false });
    v = run.then(
      (r) => r.stdout.trim(),
      (e: unknown) => {
        versions.delete(c.display);
        if (isMissing(e)) throw noCompiler(c);
        throw e;
      },
    );
    versions.set(c.display, v);
  }
  return v;
}

const targetHelp = new Map<string, Promise<string | undefined>>();

/** gcc's `-march=… -Q --help=target` (the -m options that march enables); undefined for a compiler that cannot say. */
export function compilerTargetHelp(march: string, c: Compiler = compiler()): Promise<string | undefined> {
  let v = targetHelp.get(`${c.display}\0${march}`);
  if (!v) {
    v = execa(c.command, [...c.leadingArgs, march, '-Q', '--help=target'], { stdin: 'ignore', reject: false }).then(
      (r) => (r.exitCode === 0 && /\[enabled\]/.test(r.stdout) ? r.stdout : undefined),
      () => undefined,
    );
    targetHelp.set(`${c.display}\0${march}`, v);
  }
  return v;
}
