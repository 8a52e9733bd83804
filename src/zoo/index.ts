/**
 * The model zoo: real ONNX files of the seven models VELTAIR is evaluated on (ResNet-50,
 * MobileNet-V2, GoogLeNet, EfficientNet-B0, Tiny-YOLOv2, SSD in its heavy ResNet34 and light
 * MobileNet-v1 forms, BERT-Large), architecturally exact with seeded He-initialised weights.
 * Files are built on demand and never committed.
 */
import { dirname } from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import type { ModelSpec } from '../onnx/encode.js';
import { encodeModel } from '../onnx/encode.js';
import { userError } from '../errors.js';
import { bertLarge } from './bert_large.js';
import { efficientnetB0 } from './efficientnet_b0.js';
import { googlenet } from './googlenet.js';
import { mobilenetV2 } from './mobilenet_v2.js';
import { resnet50 } from './resnet50.js';
import { ssdMobilenetV1 } from './ssd_mobilenet_v1.js';
import { ssdResnet34 } from './ssd_resnet34.js';
import { tinyYolov2 } from './tiny_yolov2.js';
import type { ZooModel, ZooOptionValues } from './types.js';

export type { ZooModel, ZooOption, ZooOptionValues } from './types.js';

export const zooModels: readonly ZooModel[] = [
  resnet50,
  mobilenetV2,
  googlenet,
  efficientnetB0,
  tinyYolov2,
  ssdResnet34,
  ssdMobilenetV1,
  bertLarge,
];

export function zooModelNames(): string[] {
  return zooModels.map((m) => m.name);
}

export function findZooModel(name: string): ZooModel {
  const model = zooModels.find((m) => m.name === name);
  if (model === undefined) {
    throw userError(
      'BAD_ARGUMENT',
      `unknown zoo model ${JSON.stringify(name.slice(0, 80))}`,
      `valid names: ${zooModelNames().join(', ')} (see \`veltair zoo list\`)`,
    );
  }
  return model;
}

export function buildZooModel(name: string, opts: ZooOptionValues = {}): ModelSpec {
  return findZooModel(name).build(opts);
}

export interface WrittenZooModel {
  readonly path: string;
  readonly bytes: number;
}

/**
 * Builds `name` and writes it to `outPath` atomically: a temp file in the same folder, then a
 * rename, so a reader never sees half a model and a failed write leaves nothing behind.
 * An existing file at `outPath` is replaced; refusing to overwrite is the caller's policy.
 */
export async function writeZooModel(name: string, outPath: string, opts: ZooOptionValues = {}): Promise<WrittenZooModel> {
  return writeModelSpec(buildZooModel(name, opts), outPath);
}

/** Encodes an already-built spec and writes it the same atomic way as writeZooModel. */
export async function writeModelSpec(spec: ModelSpec, outPath: string): Promise<WrittenZooModel> {
  const bytes = encodeModel(spec);
  await writeFileAtomic(outPath, bytes, (path, e) => {
    const reason = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    if (reason === 'ENOENT') {
      return userError(
        'FILE_NOT_FOUND',
        `cannot write ${path}: folder ${dirname(path)} does not exist`,
        'create the folder first or choose another -o path',
      );
    }
    return userError('BAD_ARGUMENT', `cannot write ${path}: ${reason}`, 'choose an output path in a writable folder');
  });
  return { path: outPath, bytes: bytes.byteLength };
}
