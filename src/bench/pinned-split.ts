/**
 * `ort-pinned`'s candidate core splits: one ONNX Runtime server per model, each pinned to its own
 * core subset, as Triton instance groups with CPU pinning deploy a mix. With no more models than
 * cores, every split of the cores into contiguous, disjoint, non-empty subsets, one per model;
 * with more models than cores, every map of models onto single cores that uses each core (models
 * on one core share it). Ranked by how evenly they spread the work — each model gets an equal
 * share of the total rate, so its work is ∝ its latency alone, L_i; a subset's load is Σ L_i of
 * its models over its core count, and the smallest worst load comes first. serve-bench probes the
 * first few by measurement and keeps the best; the rank only orders what is tried.
 */
export type Split = readonly (readonly number[])[];

/** All compositions of n into m positive parts. */
function compositions(n: number, m: number): number[][] {
  if (m === 1) return [[n]];
  const out: number[][] = [];
  for (let first = 1; first <= n - (m - 1); first++) for (const rest of compositions(n - first, m - 1)) out.push([first, ...rest]);
  return out;
}

/** Every model→core map using each of the `c` cores at least once. */
function surjections(m: number, c: number): number[][] {
  const out: number[][] = [];
  const walk = (prefix: number[]) => {
    if (prefix.length === m) {
      if (new Set(prefix).size === c) out.push([...prefix]);
      return;
    }
    for (let k = 0; k < c; k++) walk([...prefix, k]);
  };
  walk([]);
  return out;
}

/** The worst subset load of a split (see the file comment). */
export function splitLoad(split: Split, latencyMs: readonly number[]): number {
  const groups = new Map<string, { cores: number; work: number }>();
  split.forEach((cores, i) => {
    const key = cores.join(',');
    const g = groups.get(key) ?? { cores: cores.length, work: 0 };
    g.work += latencyMs[i]!;
    groups.set(key, g);
  });
  return Math.max(...[...groups.values()].map((g) => g.work / g.cores));
}

/** Candidate splits of `cores` over models with these latencies alone, best-balanced first, at most `limit`. */
export function candidateSplits(cores: readonly number[], latencyMs: readonly number[], limit: number): Split[] {
  const m = latencyMs.length,
    c = cores.length;
  if (m === 0 || c === 0) return [];
  let all: Split[];
  if (m <= c) {
    all = compositions(c, m).map((parts) => {
      let at = 0;
      return parts.map((p) => {
        const s = cores.slice(at, at + p);
        at += p;
        return s;
      });
    });
  } else {
    all = surjections(m, c).map((map) => map.map((k) => [cores[k]!]));
  }
  const scored = all.map((s) => ({ s, load: splitLoad(s, latencyMs) }));
  scored.sort((a, b) => a.load - b.load);
  return scored.slice(0, Math.max(1, limit)).map((x) => x.s);
}

export const splitText = (split: Split, names: readonly string[]) => split.map((cores, i) => `${names[i]}@${cores.join('+')}`).join(' ');
