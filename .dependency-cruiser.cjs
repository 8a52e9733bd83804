/**
 * The rooms of src/ and what each may import: the borders the README's architecture section
 * describes, checked by test/architecture.test.ts (and `npx depcruise src --config
 * .dependency-cruiser.cjs`). A room may always import itself and the shared modules at the top of
 * src/ (errors, version, random, stats, csv). Edges not listed here are forbidden; the test also fails
 * on any cycle between rooms.
 */
const ROOMS = {
  terminal: [],
  toolchain: [],
  onnx: [],
  zoo: ['onnx'],
  ir: ['onnx'],
  space: ['ir', 'toolchain'],
  codegen: ['space', 'ir', 'toolchain'],
  interference: ['toolchain'],
  measure: ['codegen', 'space', 'ir', 'toolchain', 'interference'],
  db: ['codegen', 'ir', 'space', 'toolchain', 'measure'],
  tune: ['measure', 'db', 'space', 'codegen', 'ir', 'toolchain', 'interference'],
  bundle: ['tune', 'db', 'measure', 'codegen', 'space', 'ir', 'onnx', 'toolchain', 'interference'],
  // runtime -> sparse: a bundle's sparse output layer runs on the sparse addon's hashing and head kernels (src/runtime/sparse-head.ts).
  runtime: ['bundle', 'ir', 'onnx', 'toolchain', 'interference', 'sparse'],
  // plot -> sparse: the recall-latency frontier of a bundle's sparse head is read from its sparse/head.json.
  plot: ['bundle', 'runtime', 'tune', 'measure', 'sparse'],
  schedule: [],
  sparse: ['onnx', 'toolchain'],
  profile: ['schedule', 'runtime', 'bundle', 'interference', 'toolchain'],
  simulate: ['schedule', 'plot'],
  // compile: the compile library (compileModel, the one CompileOptions) and what a compile does after tuning — a bundle's sparse family,
  // the interference proxy fitted on this machine (stored through bundle/), a model's seeded feeds. The CLI and bench call it.
  compile: ['bundle', 'runtime', 'tune', 'db', 'measure', 'codegen', 'space', 'ir', 'onnx', 'sparse', 'toolchain', 'interference'],
  // api: the library's front door for serve, simulate and train (src/index.ts re-exports it with compileModel and loadBundle); no room imports it.
  api: ['serve', 'simulate', 'schedule', 'sparse', 'bundle', 'toolchain'],
  serve: ['schedule', 'profile', 'runtime', 'bundle', 'onnx', 'interference', 'toolchain'],
  bench: ['compile', 'sparse', 'serve', 'simulate', 'profile', 'schedule', 'runtime', 'bundle', 'tune', 'db', 'measure', 'codegen', 'space', 'ir', 'onnx', 'zoo', 'toolchain', 'interference', 'terminal'],
  cli: ['compile', 'sparse', 'bench', 'serve', 'simulate', 'profile', 'schedule', 'plot', 'runtime', 'bundle', 'tune', 'db', 'measure', 'codegen', 'space', 'ir', 'onnx', 'zoo', 'toolchain',
    'interference', 'terminal'],
};

/** The shared modules directly under src/ (index.ts, the package's public API, may import any room). */
const SHARED = '^src/(errors|version|random|stats|csv|atomic-file)\\.ts$';

const roomRules = Object.entries(ROOMS).map(([room, allowed]) => ({
  name: `room-${room}`,
  comment: `${room}/ may import only ${allowed.length > 0 ? allowed.join(', ') : 'nothing but the shared modules'}`,
  severity: 'error',
  from: { path: `^src/${room}/` },
  to: { path: '^src/', pathNot: [`^src/(${[room, ...allowed].join('|')})/`, SHARED] },
}));

module.exports = {
  ROOMS,
  forbidden: [
    ...roomRules,
    {
      name: 'shared-modules-import-no-room',
      comment: 'errors, version, random, stats and csv sit below every room',
      severity: 'error',
      from: { path: SHARED },
      to: { path: '^src/', pathNot: SHARED },
    },
    {
      name: 'runtime-loads-only-the-proxy-decision-path',
      comment: 'the serving library links the interference proxy\'s features and model, never the generator, bank, calibration or fit',
      severity: 'error',
      from: { path: '^src/runtime/' },
      to: { path: '^src/interference/', pathNot: '^src/interference/proxy-(features|model)\\.ts$' },
    },
    {
      name: 'onnxruntime-only-in-bench',
      comment: 'ONNX Runtime is a development dependency: only the benchmark room may import it',
      severity: 'error',
      from: { pathNot: '^src/bench/' },
      to: { path: 'onnxruntime-node' },
    },
    {
      name: 'bench-loaded-lazily',
      comment: 'the CLI reaches the benchmark room only through the lazy loader, so other commands run without ONNX Runtime',
      severity: 'error',
      from: { path: '^src/cli/', pathNot: '^src/cli/bench-room\\.ts$' },
      to: { path: '^src/bench/', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
