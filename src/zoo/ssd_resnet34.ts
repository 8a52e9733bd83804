/**
 * MLPerf Inference's "heavy" SSD-ResNet34 (mlcommons/inference, vision/classification_and_detection
 * models/ssd_r34.py + base_model_r34.py), up to the raw box/class heads:
 * - backbone: torchvision ResNet-34 conv1…layer3, layer4 dropped, and layer3 made stride 1 in every
 *   block (MLPerf's `_ModifyBlock`), so at 1200×1200 it outputs 256×150×150;
 * - five extra blocks, Conv(bias) → ReLU pairs (1×1 then 3×3), no BN: 3×3/2 pad 1 ×3, then 3×3/2
 *   pad 0, then 3×3/1 pad 0 → maps of 150, 75, 38, 19, 9, 7 at 1200 px;
 * - on each of the six maps a 3×3 loc and conf conv with **stride 3** (`strides=[3,3,…]`), giving
 *   50², 25², 13², 7², 3², 3² locations × [4,6,6,6,4,4] default boxes = 15130 boxes, 81 classes;
 * - heads reshaped `view(N, 4, -1)` / `view(N, 81, -1)` and concatenated on the box axis exactly
 *   like MLPerf's `bbox_view`: outputs `locs` [1, 4, N] and `confs` [1, 81, N]. Box decoding and
 *   NMS (in MLPerf's exported ONNX) are not part of this model.
 */
import { type GraphBuilder, type Value } from './builder.js';
import { conv, relu } from './layers.js';
import { defineZooModel, imageInput } from './define.js';
import { resnetStage, resnetStem } from './resnet-blocks.js';
import { ssdHeads } from './ssd-heads.js';
import { intOption } from './types.js';

/** Below this the last extra block's unpadded 3×3 conv no longer fits its input. */
export const SSD_RESNET34_MIN_RESOLUTION = 385;

/** (1×1 width, 3×3 output channels, 3×3 stride, 3×3 padding) of the five extra blocks. */
const EXTRAS: readonly (readonly [number, number, number, number])[] = [
  [256, 512, 2, 1],
  [256, 512, 2, 1],
  [128, 256, 2, 1],
  [128, 256, 2, 0],
  [128, 256, 1, 0],
];

function extraBlock(b: GraphBuilder, i: number, x: Value, [mid, out, stride, padding]: readonly [number, number, number, number]): Value {
  const p = `additional_blocks.${i}`;
  const y = relu(b, `${p}.1`, conv(b, `${p}.0`, x, { out: mid, kernel: 1, bias: true }));
  return relu(b, `${p}.3`, conv(b, `${p}.2`, y, { out, kernel: 3, stride, padding, bias: true }));
}

export const ssdResnet34 = defineZooModel({
  name: 'ssd_resnet34',
  description: 'MLPerf SSD-ResNet34 (heavy SSD), 1200×1200 by default, raw locs [1,4,N] / confs [1,81,N]',
  reference: 'MLPerf Inference v0.5 (Reddi et al. 2020, Table 1: 433 GOPs/input at 1200×1200); mlcommons/inference ssd_r34.py',
  options: [
    {
      name: 'resolution',
      kind: 'integer',
      default: 1200,
      min: SSD_RESNET34_MIN_RESOLUTION,
      max: 2400,
      description: 'square input size in pixels (MLPerf uses 1200)',
    },
  ],
  inputs: (opts) => imageInput(intOption(opts, 'resolution'), 'image'),
  graph: (b, [image]) => {
    let x = resnetStem(b, image);
    x = resnetStage(b, x, { name: 'layer1', block: 'basic', blocks: 3, width: 64, stride: 1 });
    x = resnetStage(b, x, { name: 'layer2', block: 'basic', blocks: 4, width: 128, stride: 2 });
    x = resnetStage(b, x, { name: 'layer3', block: 'basic', blocks: 6, width: 256, stride: 1 });
    const features = [x];
    EXTRAS.forEach((plan, i) => features.push(extraBlock(b, i, features[features.length - 1] as Value, plan)));
    const { boxes, scores } = ssdHeads(b, features, {
      anchors: [4, 6, 6, 6, 4, 4],
      classes: 81,
      kernel: 3,
      stride: 3,
      layout: 'channels-first',
      boxName: (i) => `loc.${i}`,
      className: (i) => `conf.${i}`,
    });
    b.output(boxes, 'locs');
    b.output(scores, 'confs');
  },
});
