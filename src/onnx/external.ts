/**
 * External tensor data (data_location = EXTERNAL): files beside the model, named by a relative
 * `location`. A model is untrusted input, so a location must stay inside the model's folder: no
 * absolute paths, no `..` escapes, no symlinks pointing out.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExternalReader } from './tensor.js';
import { quoteForMessage, userError } from '../errors.js';

const HINT =
  "external data files must sit inside the model's folder and be named by a relative path " +
  '(onnx.save_model(..., save_as_external_data=True) does this)';

export function externalDataReader(modelFile: string): ExternalReader {
  const folder = path.dirname(path.resolve(modelFile));
  const files = new Map<string, Uint8Array>();
  return (tensorName, location, offset, length) => {
    const fail = (why: string): Error =>
      userError(
        'EXTERNAL_DATA',
        `tensor ${quoteForMessage(tensorName)}: external data path ${quoteForMessage(location, 200)} ${why}`,
        HINT,
      );
    if (location.includes('\0')) throw fail('contains a NUL character');
    if (path.isAbsolute(location) || path.win32.isAbsolute(location))
      throw fail('is absolute; only paths relative to the model folder are allowed');
    const resolved = path.resolve(folder, location);
    if (!isInside(folder, resolved)) throw fail(`escapes the model folder ${quoteForMessage(folder, 200)}`);
    let bytes = files.get(resolved);
    if (bytes === undefined) {
      let real: string;
      try {
        real = fs.realpathSync(resolved);
      } catch {
        throw fail(`does not exist (looked for ${quoteForMessage(resolved, 200)})`);
      }
      if (!isInside(fs.realpathSync(folder), real)) throw fail('is a link that leads out of the model folder');
      try {
        bytes = fs.readFileSync(real);
      } catch (e) {
        throw fail(`cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
      }
      files.set(resolved, bytes);
    }
    const end = length === undefined ? bytes.byteLength : offset + length;
    if (end > bytes.byteLength) throw fail(`is ${bytes.byteLength} bytes long; the tensor needs bytes ${offset}..${end}`);
    return bytes.subarray(offset, end);
  };
}

function isInside(folder: string, target: string): boolean {
  const rel = path.relative(folder, target);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}
