/**
 * C source for one candidate: a self-contained translation unit exporting the ABI of
 * native-kernels/veltair_kernel.h under a symbol derived from the content (workload, schedule,
 * codegen version) — never from anything a model named.
 */
import { createHash } from 'node:crypto';
import { canonicalForm, type WorkloadShape } from '../ir/workload.js';
import { internalError } from '../errors.js';
import type { Candidate } from '../space/candidate.js';
import { problemOf } from '../space/problem.js';
import type { Schedule } from '../space/knobs.js';
import { emitDepthwise } from './depthwise.js';
import { emitDirect } from './direct.js';
import { emitEpilogue } from './epilogue.js';
import { emitDescriptor, emitLayout, workspaceBytesOf } from './layout.js';
import { emitTeamMarker } from './team-entry.js';

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
  const h = createHash('sha256')
    .update(`${CODEGEN_VERSION}\0${canonicalForm(w)}\0${JSON.stringify(s)}`)
    .digest('hex');
  return `vt_k${h.slice(0, 16)}`;
}

/** vt_desc.workspace_bytes of the candidate (workload, schedule): what a caller must provide to <sym>_run. */
export function kernelWorkspaceBytes(w: WorkloadShape, s: Schedule): number {
  return workspaceBytesOf(problemOf(w, s.vec), s);
}

export function generateKernel(c: Candidate): KernelSource {
  const { workload: w, schedule: s } = c;
  const symbol = kernelSymbol(w, s);
  if (!/^vt_k[0-9a-f]{16}$/.test(symbol)) throw internalError(`bad kernel symbol ${symbol}`);
  const p = problemOf(w, s.vec);
  const epilogue = `${symbol}_epi`;
  const body = p.kind === 'depthwise' ? emitDepthwise(symbol, p, s, w.epilogue, epilogue) : emitDirect(symbol, p, s, w.epilogue, epilogue);
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
