/**
 * A verified bundle (src/bundle/read.ts: schema, hashes, paths, ISA already checked) → a native
 * executor: read each blob once, hand the layers to the translator, load kernels.so. Every
 * kernel step starts on its first in-plan version; the runtime's version picker changes them.
 */
import type { Manifest } from '../bundle/manifest.js';
import type { LoadedBundle } from '../bundle/read.js';
import { blobReader } from './blob-reader.js';
import { createExecutor, type Executor, type LoadOptions } from './native-bridge.js';
import { fromManifest } from './runtime-layer.js';
import { translatePlan, type TranslatedPlan, type TranslateOptions } from './translate.js';
import { bestVersionAt } from './version-picker.js';

export interface BundleExecutor {
  readonly executor: Executor;
  readonly translated: TranslatedPlan;
}

export async function executorForBundle(bundle: LoadedBundle, options: TranslateOptions & LoadOptions = {}): Promise<BundleExecutor> {
  const blobs = blobReader(bundle.paths.dir);
  let translated: TranslatedPlan;
  try {
    translated = translatePlan(bundle.manifest.graphPlan, fromManifest(bundle.manifest, blobs.read), {
      runningVersion: levelZeroVersion(bundle.manifest, options.threads ?? 1),
      ...options,
    });
  } finally {
    blobs.close();
  }
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
