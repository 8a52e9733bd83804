/**
 * BERT at Large dimensions (Devlin et al. 2019; HuggingFace BertModel as exported at opset 13):
 * hidden 1024, 16 heads of 64, FFN 4096, sequence 384 (MLPerf's SQuAD length).
 *
 * The full model (24 layers + 30522×1024 word embeddings) is ≈1.3 GB; one encoder layer alone is
 * 50.4 MB of weights and the word embeddings 125 MB. So by default the model is the encoder stack
 * only, 3 layers (≈151 MB, under 200 MB), starting from `hidden_states` [1, S, 1024] plus an
 * additive float `attention_mask` [1, 1, 1, S] (0 = attend, −10000 = masked). `embeddings: true`
 * adds what precedes it in BertModel: int64 `input_ids`, `token_type_ids`, `attention_mask`
 * [1, S], word + position + token-type Gathers summed and LayerNorm'd, and the extended-mask
 * arithmetic (Unsqueeze → Cast → 1 − m → × −10000). The output is `last_hidden_state`.
 */
import { type GraphBuilder, type Value, binary, matmul, reshape, transpose, unary, unsqueeze } from './builder.js';
import type { ValueSpec } from '../onnx/encode.js';
import { defineZooModel } from './define.js';
import { normalArray } from './rng.js';
import { geluErf, layerNorm, linear } from './transformer.js';
import { type ZooOptionValues, boolOption, intOption } from './types.js';

export const BERT_LARGE = {
  hidden: 1024,
  heads: 16,
  headDim: 64,
  ffn: 4096,
  vocab: 30522,
  maxPositions: 512,
  typeVocab: 2,
  layers: 24,
} as const;
const LN_EPSILON = 1e-12;
/** BERT's own initialiser for embedding tables. */
const EMBEDDING_STD = 0.02;

function inputs(opts: ZooOptionValues): ValueSpec[] {
  const s = intOption(opts, 'sequence');
  if (boolOption(opts, 'embeddings')) {
    return ['input_ids', 'token_type_ids', 'attention_mask'].map((name) => ({ name, dtype: 'int64' as const, shape: [1, s] }));
  }
  return [
    { name: 'hidden_states', dtype: 'float32', shape: [1, s, BERT_LARGE.hidden] },
    { name: 'attention_mask', dtype: 'float32', shape: [1, 1, 1, s] },
  ];
}

function embedding(b: GraphBuilder, name: string, rows: number, ids: Value): Value {
  const table = b.floats(`${name}.weight`, [rows, BERT_LARGE.hidden], normalArray(b.rng, rows * BERT_LARGE.hidden, EMBEDDING_STD));
  return b.node('Gather', name, [table, ids], [...ids.shape, BERT_LARGE.hidden], { axis: 0 }, 'float32');
}

function embeddings(b: GraphBuilder, inputIds: Value, tokenTypeIds: Value): Value {
  const s = inputIds.shape[1];
  const positionIds = b.initializer('embeddings.position_ids', {
    dtype: 'int64',
    dims: [1, s],
    data: Float64Array.from({ length: s }, (_, i) => i),
  });
  const words = embedding(b, 'embeddings.word_embeddings', BERT_LARGE.vocab, inputIds);
  const positions = embedding(b, 'embeddings.position_embeddings', BERT_LARGE.maxPositions, positionIds);
  const types = embedding(b, 'embeddings.token_type_embeddings', BERT_LARGE.typeVocab, tokenTypeIds);
  const sum = binary(b, 'Add', 'embeddings.add2', binary(b, 'Add', 'embeddings.add1', words, types), positions);
  return layerNorm(b, 'embeddings.LayerNorm', sum, LN_EPSILON);
}

/** HF's get_extended_attention_mask: [1, S] of 1/0 → [1, 1, 1, S] of 0/−10000. */
function extendedMask(b: GraphBuilder, mask: Value): Value {
  const expanded = unsqueeze(b, 'mask.unsqueeze', mask, [1, 2]);
  const asFloat = b.node('Cast', 'mask.cast', [expanded], expanded.shape, { to: 1 }, 'float32');
  const inverted = binary(b, 'Sub', 'mask.invert', b.scalar('const.one', 1), asFloat);
  return binary(b, 'Mul', 'mask.additive', inverted, b.scalar('const.mask_min', -10000));
}

/** [1, S, H] → [1, heads, S, d] (or [1, heads, d, S] for keys, the Transpose PyTorch folds in). */
function splitHeads(b: GraphBuilder, name: string, x: Value, keys: boolean): Value {
  const s = x.shape[1];
  const split = reshape(b, `${name}.view`, x, [1, s, BERT_LARGE.heads, BERT_LARGE.headDim]);
  return transpose(b, `${name}.heads`, split, keys ? [0, 2, 3, 1] : [0, 2, 1, 3]);
}

function selfAttention(b: GraphBuilder, p: string, x: Value, mask: Value): Value {
  const s = x.shape[1];
  const q = splitHeads(b, `${p}.query`, linear(b, `${p}.query`, x, BERT_LARGE.hidden), false);
  const kT = splitHeads(b, `${p}.key`, linear(b, `${p}.key`, x, BERT_LARGE.hidden), true);
  const v = splitHeads(b, `${p}.value`, linear(b, `${p}.value`, x, BERT_LARGE.hidden), false);
  const scores = binary(
    b,
    'Div',
    `${p}.scores`,
    matmul(b, `${p}.qk`, q, kT),
    b.scalar('const.sqrt_head_dim', Math.sqrt(BERT_LARGE.headDim)),
  );
  const masked = binary(b, 'Add', `${p}.masked`, scores, mask);
  const probs = unary(b, 'Softmax', `${p}.softmax`, masked, { axis: -1 });
  const context = transpose(b, `${p}.context.merge`, matmul(b, `${p}.context`, probs, v), [0, 2, 1, 3]);
  return reshape(b, `${p}.context.view`, context, [1, s, BERT_LARGE.hidden]);
}

function encoderLayer(b: GraphBuilder, i: number, x: Value, mask: Value): Value {
  const p = `encoder.layer.${i}`;
  const context = selfAttention(b, `${p}.attention.self`, x, mask);
  const projected = linear(b, `${p}.attention.output.dense`, context, BERT_LARGE.hidden);
  const attended = layerNorm(
    b,
    `${p}.attention.output.LayerNorm`,
    binary(b, 'Add', `${p}.attention.output.residual`, projected, x),
    LN_EPSILON,
  );
  const inner = geluErf(b, `${p}.intermediate.gelu`, linear(b, `${p}.intermediate.dense`, attended, BERT_LARGE.ffn));
  const out = linear(b, `${p}.output.dense`, inner, BERT_LARGE.hidden);
  return layerNorm(b, `${p}.output.LayerNorm`, binary(b, 'Add', `${p}.output.residual`, out, attended), LN_EPSILON);
}

export const bertLarge = defineZooModel({
  name: 'bert_large',
  description: 'BERT-Large encoder (hidden 1024, 16 heads, FFN 4096), sequence 384, 3 layers by default',
  reference: 'Devlin et al. 2019 (BERT-Large: L=24, H=1024, A=16); per layer at S=384: 384·(4·1024² + 2·1024·4096) + 2·16·384²·64 MACs',
  options: [
    {
      name: 'layers',
      kind: 'integer',
      default: 3,
      min: 1,
      max: BERT_LARGE.layers,
      description: 'encoder layers (BERT-Large has 24; each adds 50.4 MB of weights)',
    },
    {
      name: 'embeddings',
      kind: 'boolean',
      default: false,
      description: 'start from int64 input_ids/token_type_ids/attention_mask with the embedding tables (+127 MB)',
    },
    {
      name: 'sequence',
      kind: 'integer',
      default: 384,
      min: 1,
      max: BERT_LARGE.maxPositions,
      description: 'sequence length (MLPerf SQuAD uses 384)',
    },
  ],
  inputs,
  graph: (b, given, opts) => {
    const [first, second, third] = given;
    let x: Value;
    let mask: Value;
    if (boolOption(opts, 'embeddings')) {
      x = embeddings(b, first, second);
      mask = extendedMask(b, third);
    } else {
      [x, mask] = [first, second];
    }
    for (let i = 0; i < intOption(opts, 'layers'); i++) x = encoderLayer(b, i, x, mask);
    b.output(x, 'last_hidden_state');
  },
});
