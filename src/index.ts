/**
 * veltair as a library: load a compiled bundle and run it. See README ("Runtime API").
 *
 *   import { loadBundle } from 'veltair';
 *   const session = await loadBundle('resnet50.bundle');
 *   const { output } = await session.run({ input: new Float32Array(1 * 3 * 224 * 224) });
 *   session.close();
 */
export { loadBundle } from './runtime/session.js';
export type { LoadBundleOptions, Session, TunableLayer, Feed, Feeds, TensorInfo, HostTensor, TensorData } from './runtime/session.js';
export { decodeNpy, encodeNpy } from './runtime/io-npy.js';
export { readBundle } from './bundle/read.js';
export type { LoadedBundle, ReadOptions } from './bundle/read.js';
export { readTrustedKey, trustedKeyFrom, verifyManifestSignature, SIGNATURE_FILE } from './bundle/sign.js';
export { decodePb } from './runtime/io-pb.js';
export { VeltairError, isVeltairError } from './errors.js';
export type { ErrorCode } from './errors.js';
export type { Manifest, ManifestVersion } from './bundle/manifest.js';
export type { DType } from './onnx/model.js';
