/**
 * SSD-MobileNet-v1 as in the TF object-detection API's `ssd_mobilenet_v1_coco` (MLPerf Inference's
 * light detector), 300×300, up to the raw box/class predictions:
 * - MobileNet-v1 (depth 1.0): 3×3/2 conv then 13 depthwise-separable blocks, Conv → BN → ReLU6,
 *   TF "SAME" padding written out as explicit (asymmetric when stride 2) pads the way tf2onnx does;
 * - feature maps Conv2d_11_pointwise (19×19×512) and Conv2d_13_pointwise (10×10×1024), then four
 *   extra 1×1 → 3×3/2 blocks (256→512, 128→256, 128→256, 64→128) down to 5, 3, 2, 1;
 * - 1×1 box and class predictors with bias, 3 anchors on the first map and 6 on the others
 *   (reduce_boxes_in_lowest_layer) = 1917 boxes, 91 classes (90 + background);
 * - outputs `box_encodings` [1, 1917, 4] and `class_predictions` [1, 1917, 91] in TF's
 *   NHWC-flattened anchor order; anchor decoding and NMS are not part of this model.
 */
import { type GraphBuilder, type Value } from './builder.js';
import { convBnAct, tfSamePadding } from './layers.js';
import { defineZooModel, imageInput } from './define.js';
import { ssdHeads } from './ssd-heads.js';

function convUnit(b: GraphBuilder, p: string, x: Value, out: number, kernel: number, stride: number, groups = 1): Value {
  return convBnAct(b, { conv: p, bn: `${p}/BatchNorm`, act: `${p}/Relu6` }, x, {
    out,
    kernel,
    stride,
    groups,
    padding: tfSamePadding(x, kernel, stride),
    act: 'relu6',
    bnEpsilon: 1e-3,
  });
}

/** (pointwise channels, depthwise stride) of Conv2d_1 … Conv2d_13. */
const SEPARABLE: readonly (readonly [number, number])[] = [
  [64, 1],
  [128, 2],
  [128, 1],
  [256, 2],
  [256, 1],
  [512, 2],
  [512, 1],
  [512, 1],
  [512, 1],
  [512, 1],
  [512, 1],
  [1024, 2],
  [1024, 1],
];

/** (1×1 depth, 3×3/2 depth) of the four extra feature layers. */
const EXTRAS: readonly (readonly [number, number])[] = [
  [256, 512],
  [128, 256],
  [128, 256],
  [64, 128],
];

export const ssdMobilenetV1 = defineZooModel({
  name: 'ssd_mobilenet_v1',
  description: 'SSD-MobileNet-v1 (TF object-detection API, COCO, 91 classes), 300×300, raw box/class predictions',
  reference: 'Liu et al. 2016 + Howard et al. 2017; MLPerf Inference v0.5 (Reddi et al. 2020, Table 1: 2.47 GOPs/input)',
  inputs: () => imageInput(300, 'image'),
  graph: (b, [image]) => {
    const scope = 'FeatureExtractor/MobilenetV1';
    let x = convUnit(b, `${scope}/Conv2d_0`, image, 32, 3, 2);
    const features: Value[] = [];
    SEPARABLE.forEach(([out, stride], i) => {
      const channels = x.shape[1];
      x = convUnit(b, `${scope}/Conv2d_${i + 1}_depthwise`, x, channels, 3, stride, channels);
      x = convUnit(b, `${scope}/Conv2d_${i + 1}_pointwise`, x, out, 1, 1);
      if (i + 1 === 11 || i + 1 === 13) features.push(x);
    });
    EXTRAS.forEach(([mid, out], i) => {
      const p = `${scope}/Conv2d_13_pointwise`;
      const y = convUnit(b, `${p}_1_Conv2d_${i + 2}_1x1_${mid}`, x, mid, 1, 1);
      x = convUnit(b, `${p}_2_Conv2d_${i + 2}_3x3_s2_${out}`, y, out, 3, 2);
      features.push(x);
    });
    const { boxes, scores } = ssdHeads(b, features, {
      anchors: [3, 6, 6, 6, 6, 6],
      classes: 91,
      kernel: 1,
      stride: 1,
      layout: 'anchors-last',
      boxName: (i) => `BoxPredictor_${i}/BoxEncodingPredictor`,
      className: (i) => `BoxPredictor_${i}/ClassPredictor`,
    });
    b.output(boxes, 'box_encodings');
    b.output(scores, 'class_predictions');
  },
});
