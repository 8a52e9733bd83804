/**
 * The inverted-residual block (MobileNet-V2) and its squeeze-excite descendant MBConv
 * (EfficientNet): 1×1 expand → k×k depthwise → [squeeze-excite] → 1×1 linear projection, with a
 * residual Add when the block keeps resolution and width.
 */
import { type GraphBuilder, type Value, binary, unary } from './builder.js';
import { type Activation, activation, conv, convBnAct, globalAvgPool } from './layers.js';

export interface MbConvOptions {
  readonly expandRatio: number;
  readonly kernel: number;
  readonly stride: number;
  readonly out: number;
  readonly act: Activation;
  /** Squeeze-excite width as a fraction of the block's *input* channels (EfficientNet: 0.25). */
  readonly seRatio?: number;
}

/** GlobalAveragePool → 1×1 conv reduce → act → 1×1 conv expand → Sigmoid → Mul, as torchvision. */
function squeezeExcite(b: GraphBuilder, p: string, x: Value, squeezed: number, act: Activation): Value {
  const channels = x.shape[1];
  const pooled = globalAvgPool(b, `${p}.avgpool`, x);
  const reduced = activation(b, act, `${p}.act`, conv(b, `${p}.fc1`, pooled, { out: squeezed, kernel: 1, bias: true }));
  const expanded = conv(b, `${p}.fc2`, reduced, { out: channels, kernel: 1, bias: true });
  const gate = unary(b, 'Sigmoid', `${p}.gate`, expanded);
  return binary(b, 'Mul', `${p}.scale`, x, gate);
}

export function mbConv(b: GraphBuilder, p: string, x: Value, o: MbConvOptions): Value {
  const cin = x.shape[1];
  const hidden = cin * o.expandRatio;
  let y = x;
  if (o.expandRatio !== 1) {
    y = convBnAct(b, { conv: `${p}.expand`, bn: `${p}.expand_bn`, act: `${p}.expand_act` }, y, { out: hidden, kernel: 1, act: o.act });
  }
  y = convBnAct(b, { conv: `${p}.dw`, bn: `${p}.dw_bn`, act: `${p}.dw_act` }, y, {
    out: hidden,
    kernel: o.kernel,
    stride: o.stride,
    padding: (o.kernel - 1) / 2,
    groups: hidden,
    act: o.act,
  });
  if (o.seRatio !== undefined) y = squeezeExcite(b, `${p}.se`, y, Math.max(1, Math.floor(cin * o.seRatio)), o.act);
  y = convBnAct(b, { conv: `${p}.project`, bn: `${p}.project_bn` }, y, { out: o.out, kernel: 1, act: 'none' });
  return o.stride === 1 && cin === o.out ? binary(b, 'Add', `${p}.add`, y, x) : y;
}
