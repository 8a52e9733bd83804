/**
 * The commands that compare against ONNX Runtime or serve through it are loaded only when one of
 * them runs: ONNX Runtime is an optional peer, so an install without it runs every other command,
 * and one of these says what to install.
 */
import { isVeltairError } from '../errors.js';
import { isMissingOrt, missingOrt, ortInstalled } from '../ort/available.js';

interface OrtRooms {
  'model-command': typeof import('../compare/model-command.js');
  'layers-command': typeof import('../compare/layers-command.js');
  'serve-backend': typeof import('../ort/serve-backend.js');
}

const loaders: { readonly [K in keyof OrtRooms]: () => Promise<OrtRooms[K]> } = {
  'model-command': () => import('../compare/model-command.js'),
  'layers-command': () => import('../compare/layers-command.js'),
  'serve-backend': () => import('../ort/serve-backend.js'),
};

/**
 * Load a room that uses ONNX Runtime. `needsOrt: false` is for a command that checks for it
 * itself (it can do part of its work without it).
 */
export async function loadOrtRoom<K extends keyof OrtRooms>(name: K, why: string, o: { needsOrt?: boolean } = {}): Promise<OrtRooms[K]> {
  // Some rooms load ONNX Runtime only in a child process: ask for it up front, here.
  if (o.needsOrt !== false && !ortInstalled()) throw missingOrt(why);
  try {
    return await loaders[name]();
  } catch (e) {
    if (!isVeltairError(e) && isMissingOrt(e)) throw missingOrt(why);
    throw e;
  }
}
