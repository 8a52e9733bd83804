/**
 * Tiny-YOLOv2 for PASCAL VOC (darknet `yolov2-tiny-voc.cfg`), 416×416: nine 3×3/1×1 convs with
 * BN + LeakyReLU(0.1), five 2×2/2 max-pools and one 2×2/1 max-pool that keeps 13×13, then a
 * linear 1×1 conv to 5 anchors × (5 + 20 classes) = 125 channels. Convs and pools use
 * auto_pad SAME_UPPER: darknet pads the 2×2/1 pool at the bottom/right only, which is exactly
 * SAME_UPPER, and it keeps the front end's auto_pad path exercised. Output is the raw region
 * tensor, before any box decoding.
 */
import { type Value } from './builder.js';
import { conv, convBnAct, maxPool } from './layers.js';
import { defineZooModel, imageInput } from './define.js';

const WIDTHS = [16, 32, 64, 128, 256, 512] as const;

export const tinyYolov2 = defineZooModel({
  name: 'tiny_yolov2',
  description: 'Tiny-YOLOv2 (VOC, 9 convs, LeakyReLU 0.1), 416×416, raw [1,125,13,13] region output',
  reference: 'Redmon & Farhadi 2017, darknet yolov2-tiny-voc.cfg; darknet reports 6.97 BFLOPs (= 3.49 GMACs)',
  inputs: () => imageInput(416, 'image'),
  graph: (b, [image]) => {
    const unit = (i: number, x: Value, out: number): Value =>
      convBnAct(b, { conv: `conv${i}`, bn: `bn${i}`, act: `leaky${i}` }, x, { out, kernel: 3, padding: 'SAME_UPPER', act: 'leaky0.1' });
    let x: Value = image;
    WIDTHS.forEach((width, i) => {
      x = unit(i + 1, x, width);
      // the sixth pool is the stride-1 one: it keeps 13×13 so the last convs see the full grid
      x = maxPool(b, `pool${i + 1}`, x, { kernel: 2, stride: i === 5 ? 1 : 2, padding: 'SAME_UPPER' });
    });
    x = unit(7, x, 1024);
    x = unit(8, x, 1024);
    const region = conv(b, 'conv9', x, { out: 125, kernel: 1, bias: true });
    b.output(region, 'grid');
  },
});
