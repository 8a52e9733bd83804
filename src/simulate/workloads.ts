/**
 * The paper's workload mixes of the zoo models and each model's QoS bound.
 *
 * QoS: MLPerf's server-scenario latency bounds where MLPerf has the model (ResNet-50 15 ms,
 * MobileNet 10 ms, SSD-ResNet34 100 ms, BERT 130 ms, SSD-MobileNet 10 ms). For the others, the
 * bound of the MLPerf model of the same task and compute class:
 *  - EfficientNet-B0: ImageNet classification at MobileNet's scale (0.39 vs 0.30 GMACs) → 10 ms;
 *  - GoogLeNet: ImageNet classification between MobileNet and ResNet-50 (1.5 GMACs) → ResNet-50's
 *    15 ms (the stricter classification bound that still applies to its compute);
 *  - Tiny-YOLOv2: single-shot detection with ResNet-50's compute (3.5 vs 4.1 GMACs) → 15 ms
 *    (SSD-MobileNet's 10 ms is for a third of that compute).
 * `--qos NAME=MS` overrides any of them; a model with none is refused.
 */
export interface QosBound {
  readonly ms: number;
  readonly why: string;
}

export const QOS: Readonly<Record<string, QosBound>> = {
  resnet50: { ms: 15, why: 'MLPerf server scenario' },
  mobilenet_v2: { ms: 10, why: 'MLPerf server scenario (MobileNet)' },
  ssd_resnet34: { ms: 100, why: 'MLPerf server scenario' },
  bert_large: { ms: 130, why: 'MLPerf server scenario' },
  ssd_mobilenet_v1: { ms: 10, why: 'MLPerf server scenario' },
  efficientnet_b0: { ms: 10, why: "not in MLPerf: MobileNet-class classifier, MobileNet's bound" },
  googlenet: { ms: 15, why: "not in MLPerf: ImageNet classifier below ResNet-50's compute, ResNet-50's bound" },
  tiny_yolov2: { ms: 15, why: "not in MLPerf: detector with ResNet-50's compute, ResNet-50's bound" },
};

export const MIXES: Readonly<Record<string, readonly string[]>> = {
  light: ['efficientnet_b0', 'mobilenet_v2', 'tiny_yolov2'],
  medium: ['resnet50', 'googlenet'],
  heavy: ['ssd_resnet34', 'bert_large'],
  mixed: ['efficientnet_b0', 'mobilenet_v2', 'tiny_yolov2', 'resnet50', 'googlenet', 'ssd_resnet34', 'bert_large'],
};
