/**
 * C source for one candidate: a self-contained translation unit exporting the ABI of
 * native-kernels/veltair_kernel.h under a symbol derived from the content (workload, schedule,
 * codegen version) — never from anything a model named.
 */
import { createHash } from 'node:crypto';
import { canonicalForm, type WorkloadShape } from '../ir/workload.js';
import { internalError } from '../errors.js';
import type { Candidate } from '../space/candidate.js';
import { problemOf, type Problem } from '../space/problem.js';
import { isWinograd, type Schedule } from '../space/knobs.js';
import { winogradEligible } from '../space/winograd.js';
import { emitDepthwise } from './depthwise.js';
import { emitDirect } from './direct.js';
import { emitEpilogue } from './epilogue.js';
import { emitDescriptor, emitLayout, workspaceBytesOf } from './layout.js';
import { emitTeamMarker } from './team-entry.js';
import { emitWinograd } from './winograd.js';

/**
 * Bump when generated code changes meaning: it is part of every symbol (stale objects never match)
 * and of every tuning record's id (records of other versions are never used as measurements).
 * 3: kernel ABI 2 (workspace from the caller; batch_matmul B^T panels packed once per run).
 */
export const CODEGEN_VERSION = 3;

export interface KernelSource {
  readonly symbol: string;
  readonly source: string;
}

export function kernelSymbol(w: WorkloadShape, s: Schedule): string {
  // an explicit algo 'direct' names the same code as no algo: hash the schedule without it
  const { algo, ...direct } = s;
  const h = createHash('sha256')
    .update(`${CODEGEN_VERSION}\0${canonicalForm(w)}\0${JSON.stringify(algo === 'direct' ? direct : s)}`)
    .digest('hex');
  return `vt_k${h.slice(0, 16)}`;
}

/** vt_desc.workspace_bytes of the candidate (workload, schedule): what a caller must provide to <sym>_run. */
export function kernelWorkspaceBytes(w: WorkloadShape, s: Schedule): number {
  return workspaceBytesOf(w, problemOf(w, s.vec), s);
}

function emitBody(symbol: string, w: WorkloadShape, p: Problem, s: Schedule, epilogue: string): string {
  if (isWinograd(s)) {
    if (!winogradEligible(w)) throw internalError('a winograd schedule for a workload that cannot take it');
    return emitWinograd(symbol, w, s, w.epilogue, epilogue);
  }
  return p.kind === 'depthwise' ? emitDepthwise(symbol, p, s, w.epilogue, epilogue) : emitDirect(symbol, p, s, w.epilogue, epilogue);
}

export function generateKernel(c: Candidate): KernelSource {
  const { workload: w, schedule: s } = c;
  const symbol = kernelSymbol(w, s);
  if (!/^vt_k[0-9a-f]{16}$/.test(symbol)) throw internalError(`bad kernel symbol ${symbol}`);
  const p = problemOf(w, s.vec);
  const epilogue = `${symbol}_epi`;
  const body = emitBody(symbol, w, p, s, epilogue);
  const source = [
    `/* veltair candidate ${symbol}: generated, do not edit. schedule ${JSON.stringify(s)} */`,
    '#include <omp.h>',
    '#include "veltair_kernel.h"',
    '#include "vt_simd.h"',
    '',
    emitEpilogue(epilogue, s.vec, w.epilogue),
    '',
    body,
    emitTeamMarker(symbol),
    '',
    emitLayout(symbol, w, p, s),
    '',
    emitDescriptor(symbol, w, p, s),
    '',
  ].join('\n');
  return { symbol, source };
}
