/**
 * `veltair profile BUNDLE [--cores LIST] [--levels LIST] [--rounds R] [--runs N] [--name NAME]
 *  [-o FILE] [--force] [--json]`: measure the bundle's per-step latency for every version at each
 * core count and interference level this machine can run (src/profile/measure.ts), and write the
 * scheduling profile (src/schedule/scheduling-profile.ts) beside the bundle — `<dir>/../<name>.profile.json`
 * — or to -o. The bundle itself is not touched. Run it alone on the machine (benchmark lock).
 */
import type { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { userError } from '../errors.js';
import { availableCores } from '../profile/co-runners.js';
import { measureProfile } from '../profile/measure.js';
import { commitFiles, planOutput, stageFile } from '../plot/output-file.js';
import { countSources, profileText } from '../schedule/scheduling-profile.js';
import { defaultProfilePath } from '../profile/profile-file.js';
import { note, printJson, printLine } from '../terminal/output.js';
import { parseCount, parseList } from './simulate-args.js';

interface ProfileFlags {
  cores?: string;
  levels?: string;
  rounds?: string;
  runs?: string;
  name?: string;
  output?: string;
  force?: boolean;
  json?: boolean;
}

function parseCoreCounts(text: string, max: number): number[] {
  const counts = parseList('--cores', text).map((t) => parseCount('--cores', t, 1, 4096));
  if (new Set(counts).size !== counts.length)
    throw userError('BAD_ARGUMENT', `--cores ${JSON.stringify(text)} lists a core count twice`, 'e.g. --cores 1,2');
  for (const c of counts) {
    if (c > max)
      throw userError(
        'BAD_ARGUMENT',
        `--cores ${c}: this process may use ${max} core(s)`,
        `profile at counts from 1 to ${max}; the simulator models the others`,
      );
  }
  return counts.sort((a, b) => a - b);
}

function parseLevelList(text: string): number[] {
  const levels = parseList('--levels', text).map((t) => {
    if (!/^[0-4]$/.test(t))
      throw userError(
        'BAD_ARGUMENT',
        `--levels ${JSON.stringify(text)}: ${JSON.stringify(t)} is not an interference level 0 to 4`,
        'e.g. --levels 0,1,2,3,4',
      );
    return Number(t);
  });
  return [...new Set(levels)].sort((a, b) => a - b);
}

async function profileAction(bundleArg: string, f: ProfileFlags): Promise<void> {
  const dir = resolve(bundleArg);
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw userError('FILE_NOT_FOUND', `bundle ${dir} is not a directory`, 'give a bundle written by veltair compile');
  const all = availableCores();
  const cores = parseCoreCounts(f.cores ?? Array.from({ length: all.length }, (_, i) => i + 1).join(','), all.length);
  const levels = parseLevelList(f.levels ?? '0,1,2,3,4');
  const rounds = parseCount('--rounds', f.rounds ?? '3', 1, 1000);
  const runs = parseCount('--runs', f.runs ?? '3', 1, 10_000);
  if (f.name !== undefined && !/^[A-Za-z0-9._-]{1,100}$/.test(f.name))
    throw userError('BAD_ARGUMENT', `--name ${JSON.stringify(f.name)} is not 1–100 of [A-Za-z0-9._-]`, 'e.g. --name resnet50');
  const out = planOutput('-o', f.output ?? defaultProfilePath(dir), ['json'] as const, f.force === true, 'veltair profile');
  const say = !f.json && process.stderr.isTTY ? (m: string) => note(`veltair profile: ${m}`) : undefined;
  const t0 = Date.now();
  const r = await measureProfile({
    bundleDir: dir,
    cores,
    levels,
    rounds,
    runs,
    ...(f.name ? { name: f.name } : {}),
    ...(say ? { onProgress: say } : {}),
  });
  commitFiles([stageFile(out.path, profileText(r.profile))]);
  const seconds = Math.round((Date.now() - t0) / 100) / 10;
  const summary = {
    output: out.path,
    model: r.profile.model.name,
    steps: r.profile.steps.length,
    tunableSteps: r.profile.steps.filter((s) => s.kind === 'tunable').length,
    versions: r.profile.steps.reduce((n, s) => n + s.versions.length, 0),
    coreCounts: r.profile.coreCounts,
    conditions: r.conditions,
    skipped: r.skipped,
    vectors: r.vectors,
    timedRuns: r.timedRuns,
    claimCostUs: r.profile.claimCost?.us ?? null,
    figures: countSources(r.profile),
    seconds,
  };
  if (f.json) {
    printJson(summary);
    return;
  }
  printLine(
    `wrote ${out.path}: ${summary.steps} steps (${summary.tunableSteps} tunable, ${summary.versions} versions), measured at ` +
      `${r.conditions.map((c) => `${c.cores}c/L${c.level}`).join(' ')}`,
  );
  if (r.skipped.length > 0)
    printLine(`not measured (no core left for the co-runner): ${r.skipped.map((c) => `${c.cores}c/L${c.level}`).join(' ')}`);
  printLine(
    `${r.timedRuns} timed runs over ${r.vectors} version vector(s) in ${seconds} s; claim/release ${
      summary.claimCostUs === null ? 'not measured ' + '(one core count)' : `${summary.claimCostUs} µs per thread-team change`
    }`,
  );
}

export function registerProfileCommand(program: Command): void {
  program
    .command('profile')
    .description(
      "measure a bundle's per-step latency for every version at each core count and interference level this machine can run; write the " +
        'scheduling profile',
    )
    .argument('<bundle>', 'bundle directory written by veltair compile')
    .option('--cores <list>', 'core counts to measure at (default 1..all this process may use)')
    .option('--levels <list>', 'interference levels (default 0,1,2,3,4; noisy ones only where a core is left for the co-runner)')
    .option('--rounds <n>', 'interleaved rounds over every condition and version (default 3)')
    .option('--runs <n>', 'timed runs per visit, after one warm-up (default 3)')
    .option('--name <name>', "model name in the profile (default: the bundle's model file name)")
    .option('-o, --output <file>', 'profile file to write (default <bundle>/../<name>.profile.json)')
    .option('--force', 'replace an existing profile file')
    .option('--json', 'machine-readable summary on stdout, nothing else there')
    .action(profileAction);
}
