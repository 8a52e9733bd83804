/**
 * Activation arena: one buffer for every value of the graph plan. Each storage group (a value and
 * the in-place views of it) lives from the step that writes it to the last step that reads it;
 * groups whose lifetimes do not overlap may share bytes. Greedy best-known heuristic: place the
 * largest groups first, each at the lowest 64-byte-aligned offset that collides with no placed
 * group alive at the same time. Deterministic (ties broken by group id).
 */
export const ARENA_ALIGN = 64;

export interface StorageGroup {
  readonly id: number;
  readonly bytes: number;
  /** First step writing it (-1: a graph input, written before step 0). */
  readonly first: number;
  /** Last step reading it (steps.length: a graph output, read after the last step). */
  readonly last: number;
}

const align = (x: number) => Math.ceil(x / ARENA_ALIGN) * ARENA_ALIGN;
const overlaps = (a: StorageGroup, b: StorageGroup) => a.first <= b.last && b.first <= a.last;

/** Offsets by group id, and the arena size. */
export function assignArena(groups: readonly StorageGroup[]): { offsets: Map<number, number>; bytes: number } {
  const order = [...groups].sort((a, b) => b.bytes - a.bytes || a.id - b.id);
  const placed: { g: StorageGroup; offset: number }[] = [];
  const offsets = new Map<number, number>();
  let total = 0;
  for (const g of order) {
    const busy = placed.filter((p) => overlaps(p.g, g)).sort((a, b) => a.offset - b.offset);
    let offset = 0;
    for (const p of busy) {
      if (offset + g.bytes <= p.offset) break;
      offset = Math.max(offset, align(p.offset + p.g.bytes));
    }
    placed.push({ g, offset });
    offsets.set(g.id, offset);
    total = Math.max(total, align(offset + g.bytes));
  }
  return { offsets, bytes: total };
}
