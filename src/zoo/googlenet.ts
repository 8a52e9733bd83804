/**
 * GoogLeNet / Inception-v1 as torchvision builds it (`googlenet`, no auxiliary heads at inference):
 * every conv is BasicConv2d = Conv(no bias) → BN(eps 1e-3) → ReLU, and the "5×5" branch uses a 3×3
 * kernel — torchvision's long-standing deviation from the paper, kept because its pretrained
 * weights and its published 1.50 GFLOPS figure are for it. `branch5x5: true` builds the paper's
 * 5×5 kernels instead.
 */
import { type GraphBuilder, type Value, concat } from './builder.js';
import { classifier, convBnAct, maxPool } from './layers.js';
import { defineZooModel, imageInput } from './define.js';
import { boolOption } from './types.js';

function basicConv(b: GraphBuilder, p: string, x: Value, out: number, kernel: number, stride = 1): Value {
  return convBnAct(b, { conv: `${p}.conv`, bn: `${p}.bn`, act: `${p}.relu` }, x, {
    out,
    kernel,
    stride,
    padding: (kernel - 1) / 2,
    act: 'relu',
    bnEpsilon: 1e-3,
  });
}

/** Channel plan of one Inception module: 1×1 | 1×1→3×3 | 1×1→"5×5" | pool→1×1. */
type InceptionPlan = readonly [ch1x1: number, ch3x3red: number, ch3x3: number, ch5x5red: number, ch5x5: number, poolProj: number];

function inception(b: GraphBuilder, p: string, x: Value, plan: InceptionPlan, k5: number): Value {
  const [c1, c3r, c3, c5r, c5, cp] = plan;
  const branch1 = basicConv(b, `${p}.branch1`, x, c1, 1);
  const branch2 = basicConv(b, `${p}.branch2.1`, basicConv(b, `${p}.branch2.0`, x, c3r, 1), c3, 3);
  const branch3 = basicConv(b, `${p}.branch3.1`, basicConv(b, `${p}.branch3.0`, x, c5r, 1), c5, k5);
  const pooled = maxPool(b, `${p}.branch4.0`, x, { kernel: 3, stride: 1, padding: 1, ceil: true });
  const branch4 = basicConv(b, `${p}.branch4.1`, pooled, cp, 1);
  return concat(b, `${p}.concat`, [branch1, branch2, branch3, branch4], 1);
}

const PLANS: Readonly<Record<string, InceptionPlan>> = {
  inception3a: [64, 96, 128, 16, 32, 32],
  inception3b: [128, 128, 192, 32, 96, 64],
  inception4a: [192, 96, 208, 16, 48, 64],
  inception4b: [160, 112, 224, 24, 64, 64],
  inception4c: [128, 128, 256, 24, 64, 64],
  inception4d: [112, 144, 288, 32, 64, 64],
  inception4e: [256, 160, 320, 32, 128, 128],
  inception5a: [256, 160, 320, 32, 128, 128],
  inception5b: [384, 192, 384, 48, 128, 128],
};

export const googlenet = defineZooModel({
  name: 'googlenet',
  description: 'GoogLeNet / Inception-v1 (torchvision layout, BN, no aux heads), 224×224, 1000 classes',
  reference: 'Szegedy et al. 2015 + torchvision googlenet; torchvision lists 1.50 GFLOPS (multiply-adds)',
  options: [
    {
      name: 'branch5x5',
      kind: 'boolean',
      default: false,
      description: "use the paper's 5×5 kernel in each Inception module's third branch (torchvision, the default, uses 3×3)",
    },
  ],
  inputs: () => imageInput(224),
  graph: (b, [image], opts) => {
    const k5 = boolOption(opts, 'branch5x5') ? 5 : 3;
    const stage = (x: Value, names: readonly string[]): Value =>
      names.reduce((y, name) => inception(b, name, y, PLANS[name] as InceptionPlan, k5), x);
    let x = basicConv(b, 'conv1', image, 64, 7, 2);
    x = maxPool(b, 'maxpool1', x, { kernel: 3, stride: 2, ceil: true });
    x = basicConv(b, 'conv3', basicConv(b, 'conv2', x, 64, 1), 192, 3);
    x = maxPool(b, 'maxpool2', x, { kernel: 3, stride: 2, ceil: true });
    x = stage(x, ['inception3a', 'inception3b']);
    x = maxPool(b, 'maxpool3', x, { kernel: 3, stride: 2, ceil: true });
    x = stage(x, ['inception4a', 'inception4b', 'inception4c', 'inception4d', 'inception4e']);
    x = maxPool(b, 'maxpool4', x, { kernel: 2, stride: 2, ceil: true });
    x = stage(x, ['inception5a', 'inception5b']);
    b.output(classifier(b, x, 1000), 'logits');
  },
});
