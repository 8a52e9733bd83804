/** ResNet-50 v1.5 (torchvision `resnet50`), 224×224, ImageNet-1k classifier. */
import { classifier } from './layers.js';
import { defineZooModel, imageInput } from './define.js';
import { resnetStage, resnetStem } from './resnet-blocks.js';

const STAGES = [
  { name: 'layer1', blocks: 3, width: 64, stride: 1 },
  { name: 'layer2', blocks: 4, width: 128, stride: 2 },
  { name: 'layer3', blocks: 6, width: 256, stride: 2 },
  { name: 'layer4', blocks: 3, width: 512, stride: 2 },
] as const;

export const resnet50 = defineZooModel({
  name: 'resnet50',
  description: 'ResNet-50 v1.5 (stride on the 3×3 conv), 224×224, 1000 classes',
  reference: 'He et al. 2016 + torchvision resnet50 (v1.5); torchvision lists 4.09 GFLOPS (multiply-adds)',
  inputs: () => imageInput(224),
  graph: (b, [image]) => {
    let x = resnetStem(b, image);
    for (const stage of STAGES) x = resnetStage(b, x, { ...stage, block: 'bottleneck' });
    b.output(classifier(b, x, 1000), 'logits');
  },
});
