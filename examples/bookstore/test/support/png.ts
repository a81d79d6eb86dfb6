import { inflateSync } from 'node:zlib';

/** A decoded 8-bit PNG: `channels` bytes per pixel, rows top to bottom. */
export interface Png {
  readonly width: number;
  readonly height: number;
  readonly channels: number;
  readonly data: Uint8Array;
}

const SIGNATURE = '89504e470d0a1a0a';
const CHANNELS: Readonly<Record<number, number>> = { 0: 1, 2: 3, 4: 2, 6: 4 };

/**
 * Decode a non-interlaced 8-bit grey, grey+alpha, RGB or RGBA PNG (what Chromium's screenshots
 * are): concatenate the IDAT chunks, inflate, and undo each scanline's filter (PNG spec, 9).
 */
export function decodePng(file: Uint8Array): Png {
  const bytes = Buffer.from(file);
  if (bytes.subarray(0, 8).toString('hex') !== SIGNATURE) throw new Error('not a PNG file');
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (let offset = 8; offset < bytes.length; ) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    const body = bytes.subarray(offset + 8, offset + 8 + length);
    offset += 12 + length;
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colour, , , interlace] = [body[8], body[9], body[10], body[11], body[12]];
      channels = CHANNELS[colour ?? -1] ?? 0;
      if (depth !== 8 || channels === 0 || interlace !== 0) {
        throw new Error(
          `unsupported PNG: depth ${depth}, colour type ${colour}, interlace ${interlace}`,
        );
      }
    } else if (type === 'IDAT') {
      idat.push(body);
    } else if (type === 'IEND') {
      break;
    }
  }
  if (width === 0) throw new Error('PNG without IHDR');
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  if (raw.length !== height * (stride + 1)) throw new Error('PNG data has the wrong length');
  const data = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = y * stride;
    for (let i = 0; i < stride; i++) {
      const left = i >= channels ? data[out + i - channels]! : 0;
      const up = y > 0 ? data[out - stride + i]! : 0;
      const upLeft = y > 0 && i >= channels ? data[out - stride + i - channels]! : 0;
      const value = line[i]!;
      let predicted: number;
      switch (filter) {
        case 0:
          predicted = 0;
          break;
        case 1:
          predicted = left;
          break;
        case 2:
          predicted = up;
          break;
        case 3:
          predicted = (left + up) >> 1;
          break;
        case 4:
          predicted = paeth(left, up, upLeft);
          break;
        default:
          throw new Error(`bad PNG filter ${filter} on row ${y}`);
      }
      data[out + i] = (value + predicted) & 0xff;
    }
  }
  return { width, height, channels, data };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

/** RGB of one pixel (grey images repeat the grey value). */
export function rgbAt(png: Png, x: number, y: number): [number, number, number] {
  const i = (y * png.width + x) * png.channels;
  const d = png.data;
  return png.channels >= 3 ? [d[i]!, d[i + 1]!, d[i + 2]!] : [d[i]!, d[i]!, d[i]!];
}
