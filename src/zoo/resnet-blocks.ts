/**
 * torchvision's ResNet pieces, shared by ResNet-50 (bottleneck blocks) and SSD-ResNet34's backbone
 * (basic blocks). Stride sits on the 3×3 conv of a bottleneck: that is what makes it "v1.5".
 */
import { type GraphBuilder, type Value, binary } from './builder.js';
import { batchNorm, conv, convBnAct, maxPool, relu } from './layers.js';

export type ResidualBlock = 'basic' | 'bottleneck';

/** Output channels of a bottleneck block over its width. */
const BOTTLENECK_EXPANSION = 4;

/** conv1 7×7/2 → bn1 → relu → maxpool 3×3/2 pad 1: input/4 resolution, 64 channels. */
export function resnetStem(b: GraphBuilder, x: Value): Value {
  const y = convBnAct(b, { conv: 'conv1', bn: 'bn1', act: 'relu' }, x, { out: 64, kernel: 7, stride: 2, padding: 3, act: 'relu' });
  return maxPool(b, 'maxpool', y, { kernel: 3, stride: 2, padding: 1 });
}

function shortcut(b: GraphBuilder, p: string, x: Value, out: number, stride: number): Value {
  if (stride === 1 && x.shape[1] === out) return x;
  const y = conv(b, `${p}.downsample.0`, x, { out, kernel: 1, stride });
  return batchNorm(b, `${p}.downsample.1`, y);
}

function bottleneck(b: GraphBuilder, p: string, x: Value, width: number, stride: number): Value {
  let y = convBnAct(b, { conv: `${p}.conv1`, bn: `${p}.bn1`, act: `${p}.relu1` }, x, { out: width, kernel: 1, act: 'relu' });
  y = convBnAct(b, { conv: `${p}.conv2`, bn: `${p}.bn2`, act: `${p}.relu2` }, y, {
    out: width,
    kernel: 3,
    stride,
    padding: 1,
    act: 'relu',
  });
  y = convBnAct(b, { conv: `${p}.conv3`, bn: `${p}.bn3` }, y, { out: width * BOTTLENECK_EXPANSION, kernel: 1, act: 'none' });
  return relu(b, `${p}.relu`, binary(b, 'Add', `${p}.add`, y, shortcut(b, p, x, width * BOTTLENECK_EXPANSION, stride)));
}

function basic(b: GraphBuilder, p: string, x: Value, width: number, stride: number): Value {
  let y = convBnAct(b, { conv: `${p}.conv1`, bn: `${p}.bn1`, act: `${p}.relu1` }, x, {
    out: width,
    kernel: 3,
    stride,
    padding: 1,
    act: 'relu',
  });
  y = convBnAct(b, { conv: `${p}.conv2`, bn: `${p}.bn2` }, y, { out: width, kernel: 3, padding: 1, act: 'none' });
  return relu(b, `${p}.relu`, binary(b, 'Add', `${p}.add`, y, shortcut(b, p, x, width, stride)));
}

export interface StageOptions {
  readonly name: string;
  readonly block: ResidualBlock;
  readonly blocks: number;
  readonly width: number;
  /** Stride of the stage's first block (torchvision: 1 for layer1, 2 after). */
  readonly stride: number;
}

/** One `layerN` of torchvision's ResNet: `blocks` residual blocks, the first one strided. */
export function resnetStage(b: GraphBuilder, x: Value, s: StageOptions): Value {
  const unit = s.block === 'bottleneck' ? bottleneck : basic;
  let y = x;
  for (let i = 0; i < s.blocks; i++) y = unit(b, `${s.name}.${i}`, y, s.width, i === 0 ? s.stride : 1);
  return y;
}
