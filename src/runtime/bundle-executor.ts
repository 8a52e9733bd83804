/**
 * A verified bundle (src/bundle/read.ts: schema, hashes, paths, ISA already checked) → a native
 * executor: read each blob file once, hand the layers to the translator, load kernels.so. Every
 * kernel step starts on its first in-plan version; the runtime's version picker changes them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BlobRef, Manifest } from '../bundle/manifest.js';
import type { LoadedBundle } from '../bundle/read.js';
import { internalError } from '../errors.js';
import { createExecutor, type Executor, type LoadOptions } from './native-bridge.js';
import { fromManifest } from './runtime-layer.js';
import { translatePlan, type TranslatedPlan, type TranslateOptions } from './translate.js';
import { bestVersionAt } from './version-picker.js';

export interface BundleExecutor {
  readonly executor: Executor;
  readonly translated: TranslatedPlan;
}

export async function executorForBundle(bundle: LoadedBundle, options: TranslateOptions & LoadOptions = {}): Promise<BundleExecutor> {
  const files = new Map<string, Buffer>();
  const read = (ref: BlobRef): Uint8Array => {
    // readBundle has already checked that ref.file is listed, stays inside the bundle and holds the range.
    let bytes = files.get(ref.file);
    if (bytes === undefined) { bytes = readFileSync(join(bundle.paths.dir, ref.file)); files.set(ref.file, bytes); }
    if (ref.offset + ref.length > bytes.length) throw internalError(`blob ${ref.file}@${ref.offset} lies outside its file`);
    return bytes.subarray(ref.offset, ref.offset + ref.length);
  };
  const translated = translatePlan(bundle.manifest.graphPlan, fromManifest(bundle.manifest, read),
    { runningVersion: levelZeroVersion(bundle.manifest, options.threads ?? 1), ...options });
  const executor = await createExecutor(translated.plan, bundle.paths.kernels, options);
  return { executor, translated };
}

/** The version each kernel layer runs at level 0 on `threads`, as the version picker chooses it. */
function levelZeroVersion(m: Manifest, threads: number): (layer: number) => string | undefined {
  const inPlan = new Map(m.layers.map((l) => [l.index, l.versions.filter((v) => v.inPlan)]));
  return (layer) => {
    const versions = inPlan.get(layer) ?? [];
    return versions[bestVersionAt(versions, 0, threads)]?.id;
  };
}
