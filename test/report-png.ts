/**
 * A tiny PNG decoder for the report's screenshot check (8-bit RGB/RGBA, not interlaced — what
 * Chromium writes), and pixel statistics that tell a rendered page from a blank one.
 */
import { inflateSync } from 'node:zlib';

export interface Image {
  readonly width: number;
  readonly height: number;
  /** RGBA, 4 bytes per pixel, row by row. */
  readonly rgba: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c,
    pa = Math.abs(p - a),
    pb = Math.abs(p - b),
    pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Undo the per-row filters (PNG spec §9) in place into `out`. */
function unfilter(data: Buffer, width: number, height: number, bpp: number): Uint8Array {
  const stride = width * bpp;
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = data[y * (stride + 1)]!;
    const src = y * (stride + 1) + 1,
      row = y * stride,
      prev = row - stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[row + x - bpp]! : 0;
      const b = y > 0 ? out[prev + x]! : 0;
      const c = x >= bpp && y > 0 ? out[prev + x - bpp]! : 0;
      const raw = data[src + x]!;
      const predict =
        filter === 0 ? 0 : filter === 1 ? a : filter === 2 ? b : filter === 3 ? (a + b) >> 1 : filter === 4 ? paeth(a, b, c) : NaN;
      if (Number.isNaN(predict)) throw new Error(`PNG row ${y} has unknown filter ${filter}`);
      out[row + x] = (raw + predict) & 0xff;
    }
  }
  return out;
}

export function decodePng(png: Buffer): Image {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG file');
  let width = 0,
    height = 0,
    colorType = -1;
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at),
      type = png.toString('latin1', at + 4, at + 8),
      body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      colorType = body[9]!;
      if (body[8] !== 8 || (colorType !== 2 && colorType !== 6) || body[12] !== 0) {
        throw new Error(`unsupported PNG: bit depth ${body[8]}, colour type ${colorType}, interlace ${body[12]}`);
      }
    } else if (type === 'IDAT') {
      idat.push(body);
    } else if (type === 'IEND') {
      break;
    }
    at += 12 + length;
  }
  const bpp = colorType === 6 ? 4 : 3;
  const pixels = unfilter(inflateSync(Buffer.concat(idat)), width, height, bpp);
  if (bpp === 4) return { width, height, rgba: pixels };
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0, j = 0; i < pixels.length; i += 3, j += 4) {
    rgba[j] = pixels[i]!;
    rgba[j + 1] = pixels[i + 1]!;
    rgba[j + 2] = pixels[i + 2]!;
    rgba[j + 3] = 255;
  }
  return { width, height, rgba };
}

export interface PixelStats {
  /** Share of pixels that are not (near) white. */
  readonly inkFraction: number;
  /** Share of strongly coloured pixels (max − min channel ≥ 80): plot marks, not text or rules. */
  readonly colourFraction: number;
  /** Distinct colours, quantised to 4 bits per channel. */
  readonly distinctColours: number;
}

export function pixelStats(img: Image, rows: readonly [number, number] = [0, img.height]): PixelStats {
  let ink = 0,
    colour = 0;
  const seen = new Set<number>();
  const [from, to] = rows;
  for (let y = from; y < to; y++) {
    for (let x = 0; x < img.width; x++) {
      const i = (y * img.width + x) * 4;
      const r = img.rgba[i]!,
        g = img.rgba[i + 1]!,
        b = img.rgba[i + 2]!;
      if (r < 240 || g < 240 || b < 240) ink++;
      if (Math.max(r, g, b) - Math.min(r, g, b) >= 80) colour++;
      seen.add(((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4));
    }
  }
  const n = Math.max(1, (to - from) * img.width);
  return { inkFraction: ink / n, colourFraction: colour / n, distinctColours: seen.size };
}
