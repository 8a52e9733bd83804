/** EfficientNet-B0 (torchvision `efficientnet_b0`), 224×224, ImageNet-1k classifier. */
import { classifier, convBnAct } from './layers.js';
import { defineZooModel, imageInput } from './define.js';
import { mbConv } from './mbconv.js';

/** (expand ratio, kernel, first stride, output channels, repeats), Tan & Le 2019, Table 1. */
const STAGES: readonly (readonly [number, number, number, number, number])[] = [
  [1, 3, 1, 16, 1],
  [6, 3, 2, 24, 2],
  [6, 5, 2, 40, 2],
  [6, 3, 2, 80, 3],
  [6, 5, 1, 112, 3],
  [6, 5, 2, 192, 4],
  [6, 3, 1, 320, 1],
];

export const efficientnetB0 = defineZooModel({
  name: 'efficientnet_b0',
  description: 'EfficientNet-B0 (MBConv + squeeze-excite, SiLU as x·Sigmoid(x)), 224×224, 1000 classes',
  reference: 'Tan & Le 2019 + torchvision efficientnet_b0; torchvision lists 0.39 GFLOPS (multiply-adds)',
  inputs: () => imageInput(224),
  graph: (b, [image]) => {
    let x = convBnAct(b, { conv: 'features.0.conv', bn: 'features.0.bn', act: 'features.0.act' }, image, {
      out: 32,
      kernel: 3,
      stride: 2,
      padding: 1,
      act: 'silu',
    });
    STAGES.forEach(([expandRatio, kernel, stride, out, repeats], stage) => {
      for (let i = 0; i < repeats; i++) {
        x = mbConv(b, `features.${stage + 1}.${i}`, x, {
          expandRatio,
          kernel,
          stride: i === 0 ? stride : 1,
          out,
          act: 'silu',
          seRatio: 0.25,
        });
      }
    });
    x = convBnAct(b, { conv: 'features.8.conv', bn: 'features.8.bn', act: 'features.8.act' }, x, { out: 1280, kernel: 1, act: 'silu' });
    b.output(classifier(b, x, 1000, 'classifier.1'), 'logits');
  },
});
