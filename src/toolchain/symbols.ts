/**
 * The global symbols an object file defines, listed by binutils' `nm` (the builder aliases a
 * kernel's names to those of the object it shares, see measure/build.ts). nm is found like the
 * compiler: `NM` (split into words, never handed to a shell), else the compiler's own
 * (`cc -print-prog-name=nm`, the binutils it was built with), else `nm` on the PATH. A missing nm is
 * one error, MISSING_DEPENDENCY.
 */
import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { execa } from 'execa';
import { userError, type VeltairError } from '../errors.js';
import { compiler, compilerEnv, plainCommand, type Compiler } from './compiler.js';

export interface SymbolLister {
  readonly command: string;
  readonly leadingArgs: readonly string[];
  /** As the user wrote it (or as it was found), for messages. */
  readonly display: string;
}

function noNm(display: string): VeltairError {
  return userError(
    'MISSING_DEPENDENCY',
    `nm ${JSON.stringify(display)} was not found: veltair lists each kernel object's symbols with it`,
    'install binutils (e.g. `apt-get install binutils`; gcc needs it anyway) or point the NM environment variable at an nm',
  );
}

const found = new Map<string, Promise<SymbolLister>>();

async function locate(raw: string | undefined, cc: Compiler): Promise<SymbolLister> {
  if (raw) {
    const nm = plainCommand(raw);
    if ('bad' in nm) {
      throw userError(
        'MISSING_DEPENDENCY',
        `NM=${JSON.stringify(raw)} is not a command veltair can run: ${JSON.stringify(nm.bad)} is not a plain word`,
        'set NM to an nm path; quotes and shell syntax are not interpreted',
      );
    }
    return nm;
  }
  const asked = await execa(cc.command, [...cc.leadingArgs, '-print-prog-name=nm'], {
    stdin: 'ignore',
    env: compilerEnv(),
    extendEnv: false,
    reject: false,
  }).then(
    (r) => (r.exitCode === 0 ? r.stdout.trim() : ''),
    () => '',
  );
  const path = isAbsolute(asked) && existsSync(asked) ? asked : 'nm';
  return { command: path, leadingArgs: [], display: path };
}

/** The nm to run, found once per process for each NM and compiler. */
export function symbolLister(env: NodeJS.ProcessEnv = process.env, cc: Compiler = compiler(env)): Promise<SymbolLister> {
  const raw = env['NM']?.trim() || undefined;
  const key = `${raw ?? ''}\0${cc.display}`;
  let v = found.get(key);
  if (!v) {
    v = locate(raw, cc);
    v.catch(() => found.delete(key));
    found.set(key, v);
  }
  return v;
}

/** Names of the global symbols `objectPath` defines (functions and data), in nm's order. */
export async function definedGlobals(objectPath: string, nm?: SymbolLister): Promise<string[]> {
  return (await definedGlobalsOfEach([objectPath], nm)).get(objectPath) ?? [];
}

/**
 * definedGlobals of several objects in one nm call (a process per object cost ~20 ms each here,
 * more than listing them). Paths as given, resolved against `cwd`; none may contain ": ".
 */
export async function definedGlobalsOfEach(
  objectPaths: readonly string[],
  nm?: SymbolLister,
  cwd?: string,
): Promise<Map<string, string[]>> {
  const out = new Map(objectPaths.map((p) => [p, [] as string[]]));
  if (objectPaths.length === 0) return out;
  const tool = nm ?? (await symbolLister());
  let stdout: string;
  try {
    ({ stdout } = await execa(tool.command, [...tool.leadingArgs, '-A', '-g', '--defined-only', '-P', ...objectPaths], {
      stdin: 'ignore',
      env: compilerEnv(),
      extendEnv: false,
      ...(cwd ? { cwd } : {}),
    }));
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') throw noNm(tool.display);
    throw e;
  }
  // -A -P: one "file: name type value size" line per symbol.
  for (const line of stdout.split('\n')) {
    const at = line.indexOf(': ');
    const names = at < 0 ? undefined : out.get(line.slice(0, at));
    const name =
      at < 0
        ? ''
        : (line
            .slice(at + 2)
            .trim()
            .split(/\s+/)[0] ?? '');
    if (names && name.length > 0) names.push(name);
  }
  return out;
}
