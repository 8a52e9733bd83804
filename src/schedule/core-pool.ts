/**
 * The core pool: concrete core ids 0..N-1, each owned by at most one grant. `grant` takes the
 * preferred ids first (a request's previous block's cores: warm caches, and no claim when the set
 * is unchanged), then the lowest free ids; `release` gives a grant back. Granting more than is
 * free, releasing a core that is not held by that owner, or granting a core twice is a bug in the
 * caller and throws — the invariant "no core is ever granted twice" is enforced here, not hoped
 * for. A grant may be confined to a contiguous range of ids (a model's partition): it then takes
 * only free cores inside it. O(N) per call.
 */
import { internalError } from '../errors.js';

const FREE = -1;

/** Core ids first .. first + count − 1. */
export interface CoreRange {
  readonly first: number;
  readonly count: number;
}

export class CorePool {
  readonly size: number;
  private readonly owner: Int32Array;
  private freeCount: number;

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw internalError(`core pool of ${size} cores`);
    this.size = size;
    this.owner = new Int32Array(size).fill(FREE);
    this.freeCount = size;
  }

  get free(): number {
    return this.freeCount;
  }

  /** Owner of core `c` (−1: free). */
  ownerOf(c: number): number {
    return this.owner[c]!;
  }

  /** Free cores inside `range` (all of them without one). */
  freeIn(range?: CoreRange): number {
    if (!range) return this.freeCount;
    let n = 0;
    for (let c = range.first; c < range.first + range.count; c++) if (this.owner[c] === FREE) n++;
    return n;
  }

  grant(owner: number, count: number, preferred: readonly number[] = [], within?: CoreRange): number[] {
    const lo = within ? within.first : 0;
    const hi = within ? within.first + within.count : this.size;
    if (lo < 0 || hi > this.size || lo >= hi) throw internalError(`grant within cores ${lo}..${hi - 1} of a ${this.size}-core pool`);
    const available = within ? this.freeIn(within) : this.freeCount;
    if (!Number.isInteger(count) || count < 1 || count > available) {
      throw internalError(`grant of ${count} cores with ${available} free${within ? ` in cores ${lo}..${hi - 1}` : ''}`);
    }
    const out: number[] = [];
    for (const c of preferred) {
      if (out.length === count) break;
      if (c >= lo && c < hi && this.owner[c] === FREE) {
        this.owner[c] = owner;
        out.push(c);
      }
    }
    for (let c = lo; c < hi && out.length < count; c++) {
      if (this.owner[c] === FREE) {
        this.owner[c] = owner;
        out.push(c);
      }
    }
    this.freeCount -= out.length;
    if (out.length !== count) throw internalError(`core pool lost track: granted ${out.length} of ${count}`);
    return out.sort((a, b) => a - b);
  }

  release(owner: number, cores: readonly number[]): void {
    for (const c of cores) {
      if (this.owner[c] !== owner) throw internalError(`core ${c} released by ${owner} but held by ${this.owner[c]}`);
      this.owner[c] = FREE;
    }
    this.freeCount += cores.length;
  }
}
