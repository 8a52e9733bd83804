/**
 * The rooms' borders (README "Architecture"; the table is .dependency-cruiser.cjs): every import in
 * src/ crosses only an allowed border, no two rooms import each other even indirectly, only the
 * ONNX Runtime room (and the benchmark harness) imports ONNX Runtime, nothing outside the
 * harness imports it, and the runtime loads only the interference proxy's decision path.
 * dependency-cruiser parses the imports (type-only and dynamic ones included); a control tree with
 * forbidden imports and one room cycle proves the checks can fail.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { cruise, type ICruiseResult, type IConfiguration } from 'dependency-cruiser';

const config = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as IConfiguration & { ROOMS: Record<string, string[]> };

const roomOf = (path: string): string | undefined => /^src\/([^/]+)\//.exec(path)?.[1];

async function cruiseTree(roots: string[], cwd: string, withTsConfig: boolean): Promise<ICruiseResult> {
  const before = process.cwd();
  process.chdir(cwd);
  try {
    const { forbidden, options } = config;
    const result = await cruise(roots, {
      ...options,
      ...(withTsConfig ? {} : { tsConfig: undefined }),
      validate: true,
      ruleSet: { forbidden },
    } as never);
    return result.output as ICruiseResult;
  } finally {
    process.chdir(before);
  }
}

/** Room → rooms it imports (src/ modules only, a room's own modules left out). */
function roomGraph(r: ICruiseResult): Map<string, Set<string>> {
  const g = new Map<string, Set<string>>();
  for (const m of r.modules) {
    const from = roomOf(m.source);
    if (!from) continue;
    for (const d of m.dependencies) {
      const to = roomOf(d.resolved);
      if (!to || to === from) continue;
      if (!g.has(from)) g.set(from, new Set());
      g.get(from)!.add(to);
    }
  }
  return g;
}

/** One cycle of the graph as a path (first node repeated at the end), or undefined. */
function findCycle(g: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): string[] | undefined => {
    if (state.get(n) === 'done') return undefined;
    if (state.get(n) === 'open') return [...stack.slice(stack.indexOf(n)), n];
    state.set(n, 'open');
    stack.push(n);
    for (const next of g.get(n) ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    stack.pop();
    state.set(n, 'done');
    return undefined;
  };
  for (const n of g.keys()) {
    const found = visit(n);
    if (found) return found;
  }
  return undefined;
}

const violationsText = (r: ICruiseResult) => r.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).join('\n');

test('every import in src/ crosses only an allowed border, and no rooms form a cycle', { timeout: 120_000 }, async () => {
  const r = await cruiseTree(['src'], process.cwd(), true);
  assert.equal(r.summary.violations.length, 0, violationsText(r));
  const cycle = findCycle(roomGraph(r));
  assert.equal(cycle, undefined, `rooms import each other: ${cycle?.join(' -> ')}`);
  const rooms = new Set(r.modules.map((m) => roomOf(m.source)).filter((x): x is string => x !== undefined));
  const unlisted = [...rooms].filter((room) => !(room in config.ROOMS));
  assert.deepEqual(unlisted, [], 'every folder of src/ is a room in .dependency-cruiser.cjs (and the README)');
});

test(
  'control: a forbidden import, ONNX Runtime outside ort/, an import of the harness and a room cycle are all reported',
  { timeout: 60_000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'veltair-arch-'));
    try {
      const file = (rel: string, text: string) => {
        mkdirSync(dirname(join(dir, rel)), { recursive: true });
        writeFileSync(join(dir, rel), text);
      };
      file('src/measure/probe.js', 'export const x = 1;\n');
      file(
        'src/runtime/uses-measure.js',
        "import { x } from '../measure/probe.js';\nimport * as ort from 'onnxruntime-node';\nexport const y = [x, ort];\n",
      );
      file('src/onnx/a.js', "import { b } from '../ir/b.js';\nexport const a = b;\n");
      file('src/bench/tool.js', 'export const t = 1;\n');
      file('src/cli/uses-bench.js', "import { t } from '../bench/tool.js';\nexport const u = t;\n");
      file('src/compare/thing.js', 'export const c = 1;\n');
      file('src/cli/eager.js', "import { c } from '../compare/thing.js';\nexport const e = c;\n");
      file('src/ir/b.js', "export const b = 1;\nexport async function back() { return import('../onnx/a.js'); }\n");
      file('package.json', '{"type":"module"}\n');
      const r = await cruiseTree(['src'], dir, false);
      const names = new Set(r.summary.violations.map((v) => `${v.rule.name} ${v.from}`));
      assert.ok(names.has('room-runtime src/runtime/uses-measure.js'), violationsText(r));
      assert.ok(names.has('onnxruntime-only-in-ort src/runtime/uses-measure.js'), violationsText(r));
      assert.ok(names.has('nothing-imports-the-harness src/cli/uses-bench.js'), violationsText(r));
      assert.ok(names.has('ort-rooms-loaded-lazily src/cli/eager.js'), violationsText(r));
      const cycle = findCycle(roomGraph(r));
      assert.ok(cycle, 'the onnx <-> ir cycle (one edge a dynamic import) is found');
      assert.deepEqual(new Set(cycle), new Set(['onnx', 'ir']));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test('no source line in src/, native-kernels/ or test/ runs over 160 characters', () => {
  const files = ['src', 'native-kernels', 'test']
    .flatMap((d) => readdirSync(d, { recursive: true, encoding: 'utf8' }).map((f) => join(d, f)))
    .filter((f) => /\.(ts|c|h|inc)$/.test(f));
  const long = files
    .flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .map((line, i) => ({ f, i, n: line.length }))
        .filter((l) => l.n > 160),
    )
    .map((l) => `${l.f}:${l.i + 1} (${l.n})`);
  assert.deepEqual(long, [], `lines over 160 characters:\n${long.join('\n')}`);
});
