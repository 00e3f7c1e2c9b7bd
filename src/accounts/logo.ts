import { createHash } from 'node:crypto';
import type { Sql } from '../store/index.ts';
import { badRequest } from '../internal/errors.ts';

/**
 * The merchant's logo: PNG, JPEG or WebP only, recognised by their magic bytes (a declared type
 * that the bytes contradict is refused), never SVG (an SVG is a document that can carry script),
 * at most {@link MAX_LOGO_BYTES} and {@link MAX_LOGO_SIDE} pixels a side. Stored in Postgres
 * (`merchant_logos`), served from the gateway's own origin (the checkout's CSP allows images from
 * itself only).
 */

/** 256 KiB: a crisp logo at checkout size is a few KiB; the cap keeps rows and responses small. */
export const MAX_LOGO_BYTES = 256 * 1024;
/** 2048 px a side: far above any display size, below decompression-bomb sizes (4 Mpx at most). */
export const MAX_LOGO_SIDE = 2048;

export const LOGO_TYPES = ['image/png', 'image/jpeg', 'image/webp'] as const;
export type LogoType = (typeof LOGO_TYPES)[number];

/** A logo as stored. */
export interface MerchantLogo {
  contentType: LogoType;
  bytes: Buffer;
  width: number;
  height: number;
  sha256: string;
  updatedAt: Date;
}

/** What the bytes are, by their signature, with their pixel size; undefined for anything else. */
export function sniffImage(bytes: Buffer): { contentType: LogoType; width: number; height: number } | undefined {
  if (bytes.length >= 24 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    if (bytes.toString('latin1', 12, 16) !== 'IHDR') return undefined;
    return { contentType: 'image/png', width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  }
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return jpegSize(bytes);
  if (bytes.length >= 30 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') return webpSize(bytes);
  return undefined;
}

/** The frame size from a JPEG's first start-of-frame marker (SOF0..SOF15 but DHT, JPG, DAC). */
function jpegSize(bytes: Buffer): { contentType: 'image/jpeg'; width: number; height: number } | undefined {
  let at = 2;
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) return undefined;
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at += 1;
      continue;
    }
    const length = bytes.readUInt16BE(at + 2);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { contentType: 'image/jpeg', height: bytes.readUInt16BE(at + 5), width: bytes.readUInt16BE(at + 7) };
    }
    if (length < 2) return undefined;
    at += 2 + length;
  }
  return undefined;
}

/** The canvas size of a WebP: lossy (VP8), lossless (VP8L) or extended (VP8X). */
function webpSize(bytes: Buffer): { contentType: 'image/webp'; width: number; height: number } | undefined {
  const chunk = bytes.toString('latin1', 12, 16);
  if (chunk === 'VP8 ' && bytes[23] === 0x9d && bytes[24] === 0x01 && bytes[25] === 0x2a) {
    return { contentType: 'image/webp', width: bytes.readUInt16LE(26) & 0x3fff, height: bytes.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L' && bytes[20] === 0x2f) {
    const bits = bytes.readUInt32LE(21);
    return { contentType: 'image/webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') {
    return { contentType: 'image/webp', width: bytes.readUIntLE(24, 3) + 1, height: bytes.readUIntLE(27, 3) + 1 };
  }
  return undefined;
}

/**
 * Checks an uploaded logo: size, signature (and the declared type when one is given), pixel size.
 * Every refusal is a 400 that says why.
 */
export function checkLogo(bytes: Buffer, declaredType?: string): { contentType: LogoType; width: number; height: number } {
  if (bytes.length === 0) throw badRequest('logo is empty');
  if (bytes.length > MAX_LOGO_BYTES) throw badRequest(`logo is ${bytes.length} bytes; at most ${MAX_LOGO_BYTES} (256 KiB) are accepted`);
  const head = bytes.toString('latin1', 0, Math.min(bytes.length, 512)).trimStart().toLowerCase();
  if (declaredType?.toLowerCase().includes('svg') || head.startsWith('<svg') || head.startsWith('<?xml') || head.includes('<svg')) {
    throw badRequest('SVG logos are not accepted (an SVG can carry script); upload a PNG, JPEG or WebP');
  }
  const image = sniffImage(bytes);
  if (!image) throw badRequest('logo is not a PNG, JPEG or WebP image (its first bytes are not one of their signatures)');
  if (declaredType !== undefined && declaredType.toLowerCase() !== image.contentType) {
    throw badRequest(`logo was declared ${declaredType} but its bytes are ${image.contentType}`);
  }
  if (image.width < 1 || image.height < 1) throw badRequest('logo has no pixels');
  if (image.width > MAX_LOGO_SIDE || image.height > MAX_LOGO_SIDE) {
    throw badRequest(`logo is ${image.width}×${image.height} pixels; at most ${MAX_LOGO_SIDE}×${MAX_LOGO_SIDE} are accepted`);
  }
  return image;
}

/** Stores (replaces) a merchant's logo after {@link checkLogo}; returns what was stored, without the bytes. */
export async function setMerchantLogo(
  sql: Sql,
  merchantId: string,
  bytes: Buffer,
  declaredType?: string,
): Promise<Omit<MerchantLogo, 'bytes' | 'updatedAt'> & { size: number }> {
  const image = checkLogo(bytes, declaredType);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  await sql.query(
    `INSERT INTO merchant_logos (merchant_id, content_type, bytes, width, height, sha256) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (merchant_id) DO UPDATE SET content_type = $2, bytes = $3, width = $4, height = $5, sha256 = $6, updated_at = now()`,
    [merchantId, image.contentType, bytes, image.width, image.height, sha256],
  );
  return { ...image, sha256, size: bytes.length };
}

/** Removes a merchant's logo; whether there was one. */
export async function removeMerchantLogo(sql: Sql, merchantId: string): Promise<boolean> {
  const { rowCount } = await sql.query('DELETE FROM merchant_logos WHERE merchant_id = $1', [merchantId]);
  return (rowCount ?? 0) > 0;
}

/** A merchant's logo, or undefined. */
export async function getMerchantLogo(sql: Sql, merchantId: string): Promise<MerchantLogo | undefined> {
  const { rows } = await sql.query<MerchantLogo>(
    `SELECT content_type AS "contentType", bytes, width, height, sha256, updated_at AS "updatedAt" FROM merchant_logos WHERE merchant_id = $1`,
    [merchantId],
  );
  return rows[0];
}
