/** A binary min-heap ordered by `less` (stable ordering is the caller's: put a sequence number in the key). */
export class Heap<T> {
  private readonly items: T[] = [];
  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }
  peek(): T | undefined {
    return this.items[0];
  }

  push(x: T): void {
    const a = this.items;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  pop(): T | undefined {
    const a = this.items;
    if (a.length === 0) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1,
          r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l]!, a[m]!)) m = l;
        if (r < a.length && this.less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }

  /** Remove every item matching `drop` (O(n); for rare cancellations). */
  remove(drop: (x: T) => boolean): number {
    const kept = this.items.filter((x) => !drop(x));
    const removed = this.items.length - kept.length;
    if (removed > 0) {
      this.items.length = 0;
      for (const x of kept) this.push(x);
    }
    return removed;
  }

  /** The items in no particular order (read-only view for scans). */
  values(): readonly T[] {
    return this.items;
  }
}
