/**
 * A kernel's exported run function around its work-sharing body. The body holds only orphaned
 * `#pragma omp for` loops, which bind to whatever team calls it: called from outside any parallel
 * region (the harness, a one-step run) the entry opens its own team of `nthreads`; called from
 * inside the executor's team (native-kernels/runtime/executor.c, run_team: several steps in one
 * parallel region, separated by the loops' implicit barriers instead of a fork and join each) it
 * shares its loops over that team. Either way each thread gets the same static range of tiles, so
 * the results are bit-identical and a tuning record's measurement of `<sym>_run` stays valid.
 */

/** The C parameter list every kernel entry takes, with `input` naming the first pointer. */
export function kernelParams(input: string): string {
  return `const float* ${input}, const float* w, const float* bias, const float* res, const float* gate, const float* prm, float* out, void* workspace`;
}

/** The arguments to pass on, in the order of kernelParams. */
export function kernelArgs(input: string): string {
  return `${input}, w, bias, res, gate, prm, out, workspace`;
}

/**
 * `<sym>_team_entry`: present when the kernel's entries work-share over a calling team, which the
 * executor checks before running the kernel inside one (a kernel built before could not: it would
 * open its own region, nested and so one thread each, and every team thread would run all of it).
 */
export function emitTeamMarker(sym: string): string {
  return `const int ${sym}_team_entry = 1;`;
}

/** `void <name>(…, int nthreads)`: runs `body` (same parameters, no nthreads) in the caller's team, or in a new one. */
export function emitTeamEntry(name: string, body: string, input: string): string {
  return [
    `void ${name}(${kernelParams(input)}, int nthreads) {`,
    `  if (omp_in_parallel()) { ${body}(${kernelArgs(input)}); return; }`,
    '  #pragma omp parallel num_threads(nthreads)',
    `  ${body}(${kernelArgs(input)});`,
    '}',
  ].join('\n');
}
