/**
 * veltair as a library: the package's whole public surface (package.json `exports` maps `veltair`
 * here and nowhere else). Compile an ONNX model, load the bundle and run it, serve bundles over
 * KServe v2, simulate a multi-tenant machine, train a sparse network.
 *
 * ```ts
 * import { compileModel, loadBundle } from 'veltair';
 * const compiled = await compileModel('model.onnx', { output: 'model.bundle', trials: 8, levels: [0, 4] });
 * const session = await loadBundle(compiled.bundle!);
 * const outputs = await session.run({ input: new Float32Array(1 * 3 * 224 * 224) });
 * session.close();
 * ```
 *
 * Every error veltair raises on bad input is a {@link VeltairError} with a `code` and a `hint`.
 *
 * @packageDocumentation
 */
export { compileModel } from './compile/compile-model.js';
export type { CompileResult } from './compile/compile-model.js';
export { DEFAULT_TRIALS, MAX_VERSIONS_LIMIT } from './compile/options.js';
export type { CompileOptions } from './compile/options.js';
export type { ModelInput } from './compile/model-source.js';
export type { SparseSummary } from './compile/sparse-family.js';
export type { LevelRegret, Shard, TransferSummary, TuneProgress } from './tune/tune-model.js';
export type { IsaLevel } from './toolchain/isa.js';

export { loadBundle } from './runtime/session.js';
export type { LoadBundleOptions, Session, TunableLayer, Feed, Feeds, TensorInfo, HostTensor, TensorData } from './runtime/session.js';
export type { ReadOptions } from './bundle/read.js';
export type { Manifest, ManifestVersion } from './bundle/manifest.js';
export type { DType } from './onnx/model.js';

export { serve } from './api/serve.js';
export type { ServeOptions } from './api/serve.js';
export type { RunningServer } from './serve/start.js';

export { simulate } from './api/simulate.js';
export type { SimulateOptions, SimulateResult } from './api/simulate.js';
export type { LoadSpec, ExperimentResult, PointResult } from './simulate/experiment.js';

export { train } from './api/train.js';
export type { TrainOptions } from './api/train.js';
export type { RunSummary, EpochRecord, EvalMode } from './sparse/run.js';
export type { NetworkSpec } from './sparse/spec.js';
export type { HashFamily } from './sparse/layers.js';

export { VeltairError, isVeltairError } from './errors.js';
export type { ErrorCode } from './errors.js';
