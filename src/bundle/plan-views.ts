/**
 * Zero-copy placement: values that may live inside another value's bytes.
 *  - concat along channels: each input is written by its producer straight into its slice of the
 *    concat's buffer. An input that already lives in another buffer (DenseNet: every layer's
 *    concat is a prefix of the next one's) moves with that whole buffer, which becomes a prefix
 *    or slice of the new one, when nothing else claims those bytes.
 *  - split / slice along channels: the outputs are slices of the input.
 * A slice is contiguous only when everything before the channel axis is one element (batch 1),
 * and, blocked, when it starts at a multiple of V channels and (but for the last) spans a multiple
 * of V. What cannot be placed is copied by the step as before, so a partly placed concat copies
 * only the inputs that are not in place. Pure bookkeeping over plan values; the arena (plan.ts)
 * then gives each storage root one range for the lifetime of all its views.
 */
import { parseLayout, type Layout } from './layout.js';

export interface ViewRef {
  readonly value: number;
  readonly byteOffset: number;
}

interface ValueInfo {
  readonly id: number;
  readonly shape: readonly number[];
  readonly layout: Layout;
  readonly bytes: number;
  readonly elementBytes: number;
}

/** Byte offset of channel `c0` of a [.., C, ..] value split along axis 1, or undefined when the slice is not contiguous. */
export function channelSliceOffset(v: ValueInfo, c0: number, channels: number, last: boolean): number | undefined {
  const s = v.shape;
  if (s.length < 2 || s[0] !== 1) return undefined;
  const p = parseLayout(v.layout);
  const inner = s.slice(2).reduce((a, b) => a * b, 1);
  if (p.kind === 'natural') return c0 * inner * v.elementBytes;
  if (p.kind !== 'blocked') return undefined;
  if (c0 % p.vec !== 0 || (!last && channels % p.vec !== 0)) return undefined;
  return c0 * inner * v.elementBytes;
}

export class Placement {
  private readonly parent = new Map<number, ViewRef>();
  /** Per value: the byte ranges of its direct children. */
  private readonly children = new Map<number, { start: number; end: number; id: number }[]>();

  constructor(private readonly info: (id: number) => ValueInfo) {}

  viewOf(id: number): ViewRef | undefined {
    return this.parent.get(id);
  }

  /** The storage root of `id` and the byte offset of `id` inside it. */
  rootOf(id: number): { root: number; offset: number } {
    let r = id,
      off = 0;
    for (let p = this.parent.get(r); p !== undefined; p = this.parent.get(r)) {
      off += p.byteOffset;
      r = p.value;
    }
    return { root: r, offset: off };
  }

  /** Record that `id` is a view at byte `offset` of `of` (both roots' bookkeeping). */
  attach(id: number, of: number, offset: number): void {
    this.parent.set(id, { value: of, byteOffset: offset });
    const list = this.children.get(of) ?? [];
    list.push({ start: offset, end: offset + this.info(id).bytes, id });
    this.children.set(of, list);
  }

  private free(of: number, start: number, end: number): boolean {
    return (this.children.get(of) ?? []).every((c) => c.end <= start || end <= c.start);
  }

  /**
   * Place the inputs of a concat whose output is `out` at their slices (byte offsets); each input
   * either moves (alone, or with the buffer it already lives in) or stays to be copied. `movable`
   * says whether a value may become a view at all (not a graph input, not an in-place alias).
   * Returns, per input, whether it now lives at its slice.
   */
  placeConcat(out: number, inputs: readonly { id: number; offset: number | undefined }[], movable: (id: number) => boolean): boolean[] {
    const outBytes = this.info(out).bytes;
    const placedAt = (id: number, offset: number) => {
      const r = this.rootOf(id);
      return r.root === out && r.offset === offset;
    };
    const seen = new Set<number>();
    return inputs.map((x, i) => {
      if (x.offset === undefined || seen.has(x.id)) return false;
      seen.add(x.id);
      if (placedAt(x.id, x.offset)) return true;
      const { root, offset: inRoot } = this.rootOf(x.id);
      const at = x.offset - inRoot;
      const size = this.info(root).bytes;
      if (root === out || !movable(root) || at < 0 || at + size > outBytes || !this.free(out, at, at + size)) return false;
      // Every other input whose slice overlaps the moved buffer must already sit there at its own slice.
      const consistent = inputs.every((y, j) => {
        if (j === i || y.offset === undefined) return true;
        const yEnd = y.offset + this.info(y.id).bytes;
        if (yEnd <= at || at + size <= y.offset) return true;
        const r = this.rootOf(y.id);
        return r.root === root && r.offset === y.offset - at;
      });
      if (!consistent) return false;
      this.attach(root, out, at);
      return true;
    });
  }
}
