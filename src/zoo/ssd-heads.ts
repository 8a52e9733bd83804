/**
 * SSD's per-feature-map box and class predictors, and the reshape/concat that turns them into
 * one box tensor and one score tensor over all default boxes. Two layouts, one per source:
 * - `channels-first` (MLPerf's PyTorch SSD-ResNet34): conv → Reshape [1, C, -1] → Concat on
 *   axis 2, giving [1, 4, N] and [1, classes, N];
 * - `anchors-last` (TF object-detection API, SSD-MobileNet): conv → Transpose to NHWC →
 *   Reshape [1, -1, C] → Concat on axis 1, giving [1, N, 4] and [1, N, classes].
 */
import { type GraphBuilder, type Value, concat, reshape, transpose } from './builder.js';
import { conv } from './layers.js';

export type HeadLayout = 'channels-first' | 'anchors-last';

export interface SsdHeadOptions {
  /** Default boxes per location, one entry per feature map. */
  readonly anchors: readonly number[];
  readonly classes: number;
  readonly kernel: number;
  readonly stride: number;
  readonly layout: HeadLayout;
  readonly boxName: (map: number) => string;
  readonly className: (map: number) => string;
}

function flattenPrediction(b: GraphBuilder, x: Value, perBox: number, layout: HeadLayout): Value {
  if (layout === 'channels-first') return reshape(b, `${x.name}.view`, x, [1, perBox, -1]);
  const nhwc = transpose(b, `${x.name}.nhwc`, x, [0, 2, 3, 1]);
  return reshape(b, `${x.name}.view`, nhwc, [1, -1, perBox]);
}

export function ssdHeads(b: GraphBuilder, features: readonly Value[], o: SsdHeadOptions): { boxes: Value; scores: Value } {
  const boxes: Value[] = [];
  const scores: Value[] = [];
  features.forEach((f, i) => {
    const anchors = o.anchors[i] ?? 0;
    const padding = (o.kernel - 1) / 2;
    const box = conv(b, o.boxName(i), f, { out: anchors * 4, kernel: o.kernel, stride: o.stride, padding, bias: true });
    const cls = conv(b, o.className(i), f, { out: anchors * o.classes, kernel: o.kernel, stride: o.stride, padding, bias: true });
    boxes.push(flattenPrediction(b, box, 4, o.layout));
    scores.push(flattenPrediction(b, cls, o.classes, o.layout));
  });
  const axis = o.layout === 'channels-first' ? 2 : 1;
  return { boxes: concat(b, 'boxes.concat', boxes, axis), scores: concat(b, 'scores.concat', scores, axis) };
}
