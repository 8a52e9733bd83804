/**
 * The core pool: concrete core ids 0..N-1, each owned by at most one grant. `grant` takes the
 * preferred ids first (a request's previous block's cores: warm caches, and no claim when the set
 * is unchanged), then the lowest free ids; `release` gives a grant back. Granting more than is
 * free, releasing a core that is not held by that owner, or granting a core twice is a bug in the
 * caller and throws — the invariant "no core is ever granted twice" is enforced here, not hoped
 * for. O(N) per call.
 */
import { internalError } from '../errors.js';

const FREE = -1;

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

  grant(owner: number, count: number, preferred: readonly number[] = []): number[] {
    if (!Number.isInteger(count) || count < 1 || count > this.freeCount) {
      throw internalError(`grant of ${count} cores with ${this.freeCount} free`);
    }
    const out: number[] = [];
    for (const c of preferred) {
      if (out.length === count) break;
      if (c >= 0 && c < this.size && this.owner[c] === FREE) {
        this.owner[c] = owner;
        out.push(c);
      }
    }
    for (let c = 0; c < this.size && out.length < count; c++) {
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
