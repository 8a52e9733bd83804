// The ten torchvision models of the INT8 run (bench/quantized/suite.sh keeps the same list for bash).
export const INT8_SET = [
  'resnet50',
  'mobilenet_v2',
  'efficientnet_b0',
  'regnet_x_400mf',
  'resnext50_32x4d',
  'googlenet',
  'vgg16',
  'squeezenet1_1',
  'shufflenet_v2_x1_0',
  'densenet121',
];
