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
  // sparse-head: the sparse output layer as inference runs it (its file format, the native head, building and loading the sparse add-ons).
  'sparse-head': ['toolchain'],
  runtime: ['bundle', 'ir', 'onnx', 'toolchain', 'interference', 'sparse-head'],
  // plot -> sparse-head: the recall-latency frontier of a bundle's sparse head is read from its sparse/head.json.
  plot: ['bundle', 'runtime', 'tune', 'measure', 'sparse-head'],
  schedule: [],
  // sparse: BOLT training; it writes what sparse-head reads.
  sparse: ['onnx', 'toolchain', 'sparse-head'],
  profile: ['schedule', 'runtime', 'bundle', 'interference', 'toolchain'],
  simulate: ['schedule', 'plot'],
  // load: the load client (open-loop load, sweeps, the serving calibration, late-request attribution); it reads the server's timeline,
  // fits the simulator's calibration, and formats the attribution table that both the CLI and the bench print.
  load: ['serve', 'simulate', 'toolchain', 'terminal'],
  // compile: the compile library (compileModel, the one CompileOptions) and what a compile does after tuning — a bundle's sparse family,
  // the interference proxy fitted on this machine (stored through bundle/), a model's seeded feeds. The CLI and bench call it.
  compile: [
    'bundle',
    'runtime',
    'tune',
    'db',
    'measure',
    'codegen',
    'space',
    'ir',
    'onnx',
    'sparse',
    'sparse-head',
    'toolchain',
    'interference',
  ],
  // api: the library's front door for serve, simulate and train (src/index.ts re-exports it with compileModel and loadBundle); no room imports it.
  api: ['serve', 'simulate', 'schedule', 'sparse', 'bundle', 'toolchain'],
  serve: ['schedule', 'profile', 'runtime', 'bundle', 'onnx', 'interference', 'toolchain'],
  // ort: ONNX Runtime, the reference and the baseline (sessions in pinned children, the serving backend); the only product room that imports it.
  ort: ['serve', 'runtime', 'bundle', 'compile', 'ir', 'onnx', 'toolchain'],
  // quantize: `veltair quantize` (calibration runs the float model in ONNX Runtime, loaded lazily) and the integer reference of quantized layers.
  quantize: ['ort', 'runtime', 'ir', 'onnx'],
  // compare: `veltair bench` and `bench-layers`, veltair's latency beside ONNX Runtime's.
  compare: ['ort', 'compile', 'runtime', 'bundle', 'measure', 'space', 'ir', 'onnx', 'toolchain', 'interference', 'terminal'],
  // bench: what produces bench/RESULTS.md; no room imports it.
  bench: [
    'compare',
    'ort',
    'load',
    'compile',
    'sparse',
    'sparse-head',
    'serve',
    'simulate',
    'profile',
    'schedule',
    'runtime',
    'bundle',
    'tune',
    'db',
    'measure',
    'codegen',
    'space',
    'ir',
    'onnx',
    'zoo',
    'toolchain',
    'interference',
    'terminal',
  ],
  cli: [
    'quantize',
    'compare',
    'ort',
    'load',
    'compile',
    'sparse',
    'sparse-head',
    'serve',
    'simulate',
    'profile',
    'schedule',
    'plot',
    'runtime',
    'bundle',
    'tune',
    'db',
    'measure',
    'codegen',
    'space',
    'ir',
    'onnx',
    'zoo',
    'toolchain',
    'interference',
    'terminal',
  ],
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
      comment: "the serving library links the interference proxy's features and model, never the generator, bank, calibration or fit",
      severity: 'error',
      from: { path: '^src/runtime/' },
      to: { path: '^src/interference/', pathNot: '^src/interference/proxy-(features|model)\\.ts$' },
    },
    {
      name: 'onnxruntime-only-in-ort',
      comment: 'ONNX Runtime is an optional peer: only its own room (and the benchmark harness) may import it',
      severity: 'error',
      from: { pathNot: '^src/(ort|bench)/' },
      to: { path: 'onnxruntime-node' },
    },
    {
      name: 'ort-rooms-loaded-lazily',
      comment: 'the CLI reaches the rooms that use ONNX Runtime only through the lazy loader, so other commands run without it',
      severity: 'error',
      from: { path: '^src/cli/', pathNot: '^src/cli/ort-room\\.ts$' },
      to: { path: '^src/(compare|ort)/', pathNot: '^src/ort/available\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'nothing-imports-the-harness',
      comment: 'src/bench/ produces bench/RESULTS.md; no veltair command or library room may need it',
      severity: 'error',
      from: { pathNot: '^src/bench/' },
      to: { path: '^src/bench/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
