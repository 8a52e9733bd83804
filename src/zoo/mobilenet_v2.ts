/** MobileNet-V2 (torchvision `mobilenet_v2`, width 1.0), 224×224, ImageNet-1k classifier. */
import { classifier, convBnAct } from './layers.js';
import { defineZooModel, imageInput } from './define.js';
import { mbConv } from './mbconv.js';

/** (expansion t, output channels c, repeats n, first stride s), Sandler et al. 2018, Table 2. */
const SETTINGS: readonly (readonly [number, number, number, number])[] = [
  [1, 16, 1, 1],
  [6, 24, 2, 2],
  [6, 32, 3, 2],
  [6, 64, 4, 2],
  [6, 96, 3, 1],
  [6, 160, 3, 2],
  [6, 320, 1, 1],
];

export const mobilenetV2 = defineZooModel({
  name: 'mobilenet_v2',
  description: 'MobileNet-V2 (width 1.0, ReLU6 as Clip), 224×224, 1000 classes',
  reference: 'Sandler et al. 2018 + torchvision mobilenet_v2; torchvision lists 0.30 GFLOPS (multiply-adds)',
  inputs: () => imageInput(224),
  graph: (b, [image]) => {
    let x = convBnAct(b, { conv: 'features.0.conv', bn: 'features.0.bn', act: 'features.0.act' }, image, {
      out: 32,
      kernel: 3,
      stride: 2,
      padding: 1,
      act: 'relu6',
    });
    let index = 1;
    for (const [t, c, n, s] of SETTINGS) {
      for (let i = 0; i < n; i++, index++) {
        x = mbConv(b, `features.${index}`, x, { expandRatio: t, kernel: 3, stride: i === 0 ? s : 1, out: c, act: 'relu6' });
      }
    }
    x = convBnAct(b, { conv: `features.${index}.conv`, bn: `features.${index}.bn`, act: `features.${index}.act` }, x, {
      out: 1280,
      kernel: 1,
      act: 'relu6',
    });
    b.output(classifier(b, x, 1000, 'classifier.1'), 'logits');
  },
});
