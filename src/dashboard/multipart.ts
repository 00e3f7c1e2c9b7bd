import { badRequest } from '../internal/errors.ts';

/**
 * A small `multipart/form-data` reader for the dashboard's one upload form (Settings › Brand's
 * logo): no dependency, whole body in memory (fastify caps its size before this runs). Text
 * fields become strings, as the urlencoded parser gives them (so the router's `_csrf` check is the
 * same); a file field becomes an {@link UploadedFile}. Anything malformed is a 400.
 */

/** A file part of a form. */
export interface UploadedFile {
  filename: string;
  /** The type the browser declared (from the file's extension, so never trusted alone). */
  contentType: string;
  bytes: Buffer;
}

/** Parts one form may carry: the upload form has three; more is not a browser's form. */
const MAX_PARTS = 20;

/** The boundary of a `multipart/form-data; boundary=…` content type. */
export function boundaryOf(contentType: string | undefined): string {
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType ?? '');
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary) throw badRequest('this upload has no multipart boundary; send it from the form');
  return boundary;
}

function headerParam(header: string, name: string): string | undefined {
  const match = new RegExp(`;\\s*${name}="([^"]*)"`, 'i').exec(header);
  return match?.[1];
}

/** Reads a multipart body into fields (strings) and files, in an object without a prototype (a field named __proto__ is just a field). */
export function parseMultipart(body: Buffer, contentType: string | undefined): Record<string, string | UploadedFile> {
  const delimiter = Buffer.from(`--${boundaryOf(contentType)}`);
  const fields: Record<string, string | UploadedFile> = Object.create(null);
  let at = body.indexOf(delimiter);
  if (at < 0) throw badRequest('this upload is not a multipart form');
  for (let parts = 0; ; parts++) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString('latin1') === '--') return fields;
    if (parts >= MAX_PARTS) throw badRequest('this upload has too many parts');
    if (body.subarray(at, at + 2).toString('latin1') !== '\r\n') throw badRequest('this upload is not a well-formed multipart form');
    const headEnd = body.indexOf('\r\n\r\n', at + 2);
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), at);
    if (headEnd < 0 || next < 0 || headEnd > next) throw badRequest('this upload is not a well-formed multipart form');
    const headers = body.toString('utf8', at + 2, headEnd).split('\r\n');
    const disposition = headers.find((line) => /^content-disposition:/i.test(line)) ?? '';
    const type = headers.find((line) => /^content-type:/i.test(line))?.replace(/^content-type:\s*/i, '') ?? '';
    const name = headerParam(disposition, 'name');
    if (!name) throw badRequest('a part of this upload has no field name');
    const content = body.subarray(headEnd + 4, next);
    const filename = headerParam(disposition, 'filename');
    fields[name] = filename === undefined ? content.toString('utf8') : { filename, contentType: type.trim().toLowerCase(), bytes: Buffer.from(content) };
    at = next + 2;
  }
}
