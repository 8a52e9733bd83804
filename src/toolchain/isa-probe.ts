/**
 * Runs native-kernels/isa-probe.c: whether this CPU executes the instructions of some cpuinfo
 * flags (see that file for why cpuinfo is not enough). Synchronous, because the CPU facts it
 * completes are read synchronously everywhere (cpu.ts): a build of a few milliseconds, once per
 * machine and compiler into the cache, then one run per process, and only on CPUs whose cpuinfo
 * leaves a level flag unsettled.
 *
 * The probe is built without -march: its instructions are in assembly, so it runs on any x86-64
 * CPU and never depends on the flags it is asked about.
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { compiler, compilerEnv } from './compiler.js';
import { cacheDir, nativeDir } from './paths.js';

/** A flag → whether the CPU ran its instruction; flags without a probe are left out. */
export type ProbeResult = Readonly<Record<string, boolean>>;

/** What settles unlisted flags: the real probe, or a fixture's answers in tests. */
export type IsaProber = (flags: readonly string[]) => ProbeResult;

/** The probe's output lines (`FLAG 1|0|?`) as a result. */
export function parseProbeOutput(text: string): ProbeResult {
  const out: Record<string, boolean> = {};
  for (const line of text.split('\n')) {
    const m = /^([a-z0-9_]+) ([01])$/.exec(line.trim());
    if (m) out[m[1]!] = m[2] === '1';
  }
  return out;
}

const FLAG_NAME = /^[a-z0-9_]+$/;

function probeBinary(): string {
  const source = readFileSync(join(nativeDir(), 'isa-probe.c'), 'utf8');
  const cc = compiler();
  const env = compilerEnv();
  const version = execFileSync(cc.command, [...cc.leadingArgs, '--version'], { env, encoding: 'utf8' });
  const key = createHash('sha256').update(source).update('\0').update(cc.display).update('\0').update(version).digest('hex').slice(0, 16);
  const path = join(cacheDir(), 'tools', `isa-probe-${key}`);
  if (existsSync(path)) return path;
  mkdirSync(join(cacheDir(), 'tools'), { recursive: true });
  const temp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    execFileSync(cc.command, [...cc.leadingArgs, '-O1', '-std=gnu11', '-x', 'c', '-', '-o', temp], {
      env,
      input: source,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    renameSync(temp, path);
  } finally {
    rmSync(temp, { force: true });
  }
  return path;
}

/**
 * This CPU's answer for each flag (names as cpuinfo spells them). Throws when the probe cannot be
 * built or run; the caller decides what an unsettled flag means.
 */
export function runIsaProbe(flags: readonly string[]): ProbeResult {
  const names = flags.filter((f) => FLAG_NAME.test(f));
  if (names.length === 0) return {};
  const env = compilerEnv();
  return parseProbeOutput(execFileSync(probeBinary(), names, { env, encoding: 'utf8', timeout: 10_000 }));
}
