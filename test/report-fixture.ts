/**
 * A real bundle for the report tests: the tiny compile model (conv + relu, flatten, gemm) with
 * hostile node names, compiled with a small budget (2 trials, levels 0 and 1) into a temp folder.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeModel } from '../src/onnx/encode.js';
import { compileFixture, tinyModelSpec } from './compile-fixture.js';

/** A node name that is markup, an entity and both quotes: it must reach the page as text. */
export const HOSTILE_NAME = `<script>alert(1)</script>&"'`;
export const HOSTILE_NAME_ESCAPED = '&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;';
/** A second one that tries to leave an attribute. */
export const ATTRIBUTE_NAME = `fc" onmouseover="alert(2)`;

/** Compile the fixture model into `root`/tiny.bundle (own database and cache) and return its path. */
export async function compileReportBundle(root: string): Promise<string> {
  const spec = tinyModelSpec();
  const nodes = spec.nodes.map((n) =>
    n.op === 'Conv' ? { ...n, name: HOSTILE_NAME } : n.op === 'Gemm' ? { ...n, name: ATTRIBUTE_NAME } : n,
  );
  const model = join(root, 'tiny.onnx');
  writeFileSync(model, encodeModel({ ...spec, nodes }));
  const bundle = join(root, 'tiny.bundle');
  await compileFixture(model, { output: bundle, db: join(root, 'db'), trials: 2, levels: [0, 1], maxVersions: 2 }, join(root, 'cache'));
  return bundle;
}
