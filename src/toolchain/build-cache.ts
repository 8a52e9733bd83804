/**
 * Content-addressed native builds. An artifact's cache name carries the sha256 of everything that
 * decides its bytes — its sources and headers, flags, `cc --version` and (because -march=native is
 * in the flags) this CPU's identity — so a source edit, another compiler or another CPU never
 * reuses a stale binary. Every entry is built under a temp name and renamed into place, so
 * concurrent builders never see half a file; the last rename wins and both wrote the same bytes.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { tempNameFor } from '../atomic-file.js';
import { VeltairError } from '../errors.js';
import { compiler, compilerStderr, compilerVersion, runCompiler } from './compiler.js';
import { cpuIdentity } from './cpu.js';
import { flagsFor, libsFor, type Artifact } from './flags.js';
import { headerSnapshot, writeSources, type SourceFile } from './headers.js';
import { cacheDir } from './paths.js';

/** sha256 over the parts that decide a build's bytes (hex). */
export function buildKey(parts: readonly string[], flags: readonly string[], ccVersion: string): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.update(flags.join(' ')).update('\0').update(ccVersion).update('\0').update(cpuIdentity()).digest('hex');
}

/** `path` if it exists, else what `produce(temp)` writes, renamed to `path`. */
export async function installOnce(path: string, produce: (temp: string) => Promise<void>): Promise<string> {
  if (existsSync(path)) return path;
  await mkdir(dirname(path), { recursive: true });
  const temp = tempNameFor(path);
  try {
    await produce(temp);
    await rename(temp, path);
  } catch (e) {
    await rm(temp, { force: true });
    throw e;
  }
  return path;
}

export interface ProgramSpec {
  /** Cache file stem and the name used in messages ("noise", "harness", "vt-runtime"…). */
  readonly name: string;
  readonly artifact: Artifact;
  /** Sources, by path relative to the build directory (e.g. 'runtime/executor.c'); .c files are compiled. */
  readonly sources: readonly SourceFile[];
  /** Extra -I directories (absolute), e.g. Node's headers for an addon. */
  readonly includeDirs?: readonly string[];
  /** Extra bytes that decide the build without being compiled (e.g. node_api.h). */
  readonly keyExtras?: readonly string[];
  /** File extension of the result ('' for executables, '.node' for an addon). */
  readonly extension?: string;
  readonly cacheDir?: string;
  /** What to tell a user when the compiler rejects the source. */
  readonly hint?: string;
}

const inFlight = new Map<string, Promise<string>>();

/**
 * The compiled program (or shared object), built once per distinct input into
 * `<cache>/tools/<name>-<key>`: sources and the kernel headers are copied into a fresh directory
 * and compiled from there, so what was hashed is exactly what was compiled.
 */
export async function ensureProgram(spec: ProgramSpec): Promise<string> {
  const cc = compiler();
  const flags = flagsFor(spec.artifact);
  const [version, headers] = await Promise.all([compilerVersion(cc), headerSnapshot()]);
  const parts = [spec.name, headers.hash, ...spec.sources.map((s) => `${s.name}\0${s.text}`), ...(spec.keyExtras ?? [])];
  const key = buildKey(parts, [...flags, ...libsFor(spec.artifact)], version).slice(0, 16);
  const path = join(spec.cacheDir ?? cacheDir(), 'tools', `${spec.name}-${key}${spec.extension ?? ''}`);
  if (existsSync(path)) return path;
  let pending = inFlight.get(path);
  if (!pending) {
    pending = installOnce(path, async (temp) => {
      const work = await mkdtemp(join(tmpdir(), `veltair-${spec.name}-`));
      try {
        await Promise.all(spec.sources.map((s) => mkdir(dirname(join(work, s.name)), { recursive: true })));
        await Promise.all([writeSources(work, headers.files), writeSources(work, spec.sources)]);
        const cfiles = spec.sources.filter((s) => s.name.endsWith('.c')).map((s) => join(work, s.name));
        const includes = [work, ...(spec.includeDirs ?? [])].flatMap((d) => ['-I', d]);
        await runCompiler([...flags, ...includes, '-o', temp, ...cfiles, ...libsFor(spec.artifact)], { cwd: work }, cc);
      } catch (e) {
        if (e instanceof VeltairError) throw e;
        throw new VeltairError(
          'COMPILE_FAILED',
          `compiling veltair's ${spec.name} failed: ${compilerStderr(e, 3).replace(/\n/g, ' ')}`,
          spec.hint ?? `check that ${cc.display} supports ${flags.join(' ')}; this is a veltair bug if it does`,
          2,
        );
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    }).finally(() => inFlight.delete(path));
    inFlight.set(path, pending);
  }
  return pending;
}
