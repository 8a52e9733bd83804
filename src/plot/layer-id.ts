/**
 * Which layer `--layer ID` means: its index (as `veltair inspect` prints it) or its exact ONNX node
 * name. Only tunable layers have versions to plot; anything else is a BAD_ARGUMENT that says how
 * many tunable layers there are and names a few valid indices.
 */
import { quoteForMessage, userError } from '../errors.js';
import type { Manifest, ManifestLayer } from '../bundle/manifest.js';

function validHint(m: Manifest): string {
  const tunable = m.layers.filter((l) => l.tunable).map((l) => l.index);
  if (tunable.length === 0) return 'this bundle has no tunable layer; plot the model figure (omit --layer)';
  const few = tunable.length <= 6 ? tunable.join(', ') : `${tunable.slice(0, 5).join(', ')} … ${tunable[tunable.length - 1]}`;
  return `tunable layer indices: ${few}; or omit --layer for the model figure`;
}

const counts = (m: Manifest) => `the bundle has ${m.layers.filter((l) => l.tunable).length} tunable layers of ${m.layers.length}`;

function requireTunable(m: Manifest, l: ManifestLayer, asGiven: string): ManifestLayer {
  if (l.tunable && l.versions.length > 0) return l;
  const why = l.tunable ? 'has no compiled versions' : `is a ${l.op} layer, which veltair does not tune`;
  throw userError(
    'BAD_ARGUMENT',
    `--layer ${asGiven} (layer ${l.index}, ${quoteForMessage(l.name)}) ${why}: it has no versions to plot; ${counts(m)}`,
    validHint(m),
  );
}

/** The tunable layer `id` names (index first, then exact name). */
export function resolveLayer(m: Manifest, id: string): ManifestLayer {
  const asGiven = quoteForMessage(id);
  if (/^\d+$/.test(id.trim())) {
    const byIndex = m.layers.find((l) => l.index === Number(id.trim()));
    if (byIndex) return requireTunable(m, byIndex, asGiven);
  }
  const byName = m.layers.filter((l) => l.name === id);
  if (byName.length > 1) {
    throw userError(
      'BAD_ARGUMENT',
      `--layer ${asGiven} names ${byName.length} layers (${byName.map((l) => l.index).join(', ')}); pass the index instead`,
      validHint(m),
    );
  }
  if (byName.length === 1) return requireTunable(m, byName[0]!, asGiven);
  throw userError(
    'BAD_ARGUMENT',
    `--layer ${asGiven} is neither a layer index nor a layer name of this bundle; ${counts(m)}`,
    validHint(m),
  );
}

/** The tunable layer with manifest index `index` (the data and spec functions take indices). */
export function tunableLayer(m: Manifest, index: number): ManifestLayer {
  const l = m.layers.find((x) => x.index === index);
  if (!l) throw userError('BAD_ARGUMENT', `layer ${index} is not a layer of this bundle; ${counts(m)}`, validHint(m));
  return requireTunable(m, l, String(index));
}
