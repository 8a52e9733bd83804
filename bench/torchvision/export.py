"""Exports torchvision classification models to ONNX for the whole-model benchmark (bench/RESULTS.md,
"Whole model on torchvision exports").

Usage: /usr/bin/python3 bench/torchvision/export.py OUT_DIR [NAME ...]
       /usr/bin/python3 bench/torchvision/export.py --list        every model (classification, segmentation, then detection)
       /usr/bin/python3 bench/torchvision/export.py --probe OUT_DIR   try every classification model at 224; write probe.json
       /usr/bin/python3 bench/torchvision/export.py --all OUT_DIR [NAME ...]
           the coverage set: every classification and segmentation model at its default
           resolution, and the two SSD detectors; write exports.json

With no NAME, the benchmark set (BENCH below) is exported. Weights are random (weights=None, seed
0; a layer weight torchvision zeroes, like ViT's head, gets seeded random values): nothing is
downloaded; latency does not depend on weight values. Every model is exported from
eval mode at opset 13 with constant folding (BatchNormalization folded into Conv by the exporter
where PyTorch can), a static batch-1 float input named `input` and output `output`: 1x3x224x224, or
with --all the resolution the model's default weights are evaluated at (their transforms' crop, for
segmentation their resize: 520), read from torchvision's weight metadata, which needs no download.
A segmentation model's output is its `out` map (no auxiliary head). A detector takes a 1x3xHxW image and
outputs its boxes (`output`), `scores` and `labels` after its own post-processing (NMS, TopK).
--all keeps going past a model the exporter refuses (its error goes into exports.json), skips a model
already exported (FORCE=1 redoes it), and writes a model whose weights exceed protobuf's 2 GB limit as
OUT_DIR/NAME/NAME.onnx with its weights in external data files beside it.
Debian's python3-torch (1.13) and python3-torchvision (0.14) are enough: .ci/install-deps.sh.
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True

import torch  # noqa: E402
import torchvision  # noqa: E402
import torchvision.models.segmentation  # noqa: E402

OPSET = 13
SEED = 0
SHAPE = (1, 3, 224, 224)

# The benchmark set: one or two sizes of every torchvision family whose compile fits this
# 2-core machine's budget (see bench/RESULTS.md for what was left out and why).
BENCH = [
    'alexnet', 'resnet18', 'resnet34', 'resnet50', 'resnext50_32x4d', 'densenet121', 'googlenet',
    'mobilenet_v2', 'mobilenet_v3_small', 'mobilenet_v3_large', 'shufflenet_v2_x0_5', 'shufflenet_v2_x1_0',
    'squeezenet1_0', 'squeezenet1_1', 'mnasnet0_5', 'mnasnet1_0', 'efficientnet_b0', 'regnet_x_400mf',
    'regnet_y_400mf',
]

# Constructor arguments that differ from the defaults (no auxiliary heads at inference).
KWARGS = {
    'googlenet': {'aux_logits': False, 'init_weights': True},
    'inception_v3': {'aux_logits': False, 'init_weights': True},
}
# weights_backbone=None: the default would download the ImageNet backbone.
SEGMENTATION_KWARGS = {'aux_loss': False, 'weights_backbone': None}

# protobuf's limit on one message: bigger models keep their weights in external data files.
PROTOBUF_LIMIT = 2 ** 31 - 1


def classification_models():
    names = torchvision.models.list_models(module=torchvision.models)
    return sorted(n for n in names if not n.startswith('quantized'))


def segmentation_models():
    return sorted(torchvision.models.list_models(module=torchvision.models.segmentation))


# The detection stretch : SSDs at the size their names give; the model resizes to it anyway.
DETECTION = {'ssdlite320_mobilenet_v3_large': 320, 'ssd300_vgg16': 300}


def task_of(name):
    return 'detection' if name in DETECTION else 'segmentation' if name in segmentation_models() else 'classification'


def default_resolution(name):
    """The side the model's default weights are evaluated at (metadata only: nothing is downloaded)."""
    if name in DETECTION:
        return DETECTION[name]
    transforms = torchvision.models.get_model_weights(name).DEFAULT.transforms()
    size = getattr(transforms, 'crop_size', None) or getattr(transforms, 'resize_size', None)
    return int(size[0])


class Detections(torch.nn.Module):
    """A detector on one 1x3xHxW image: its boxes, scores and labels (post-processing and NMS included)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        found = self.model([x[0]])[0]
        return found['boxes'], found['scores'], found['labels']


class OutMap(torch.nn.Module):
    """A segmentation model's `out` map: the exporter needs a tensor, not the model's dict."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)['out']


def randomise_zero_weights(model):
    """Give seeded random values to layer weights that torchvision initialises to zero (ViT's classifier head):
    an all-zero output would match any runtime, so the coverage check would prove nothing."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)) and not module.weight.any():
                torch.nn.init.normal_(module.weight, std=0.02)
    return model


def build(name, side):
    kwargs = dict(KWARGS.get(name, {}))
    if name in DETECTION:
        return randomise_zero_weights(Detections(torchvision.models.get_model(name, weights=None, weights_backbone=None))).eval()
    if name in segmentation_models():
        return randomise_zero_weights(OutMap(torchvision.models.get_model(name, weights=None, **SEGMENTATION_KWARGS))).eval()
    if name.startswith('vit_') and side != 224:
        kwargs['image_size'] = side  # ViT's position table is sized for its resolution
    return randomise_zero_weights(torchvision.models.get_model(name, weights=None, **kwargs)).eval()


def weight_bytes(model):
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def uses_multihead_attention(model):
    return any(isinstance(m, torch.nn.MultiheadAttention) for m in model.modules())


def zero_symbolic(g, tensor):
    """aten::zero, which Swin-V2 writes (qkv_bias[k:2k].zero_()) and torch 1.13 has no symbolic for: x - x,
    which constant folding removes along with the slice assignment around it."""
    return g.op('Sub', tensor, tensor)


def export(name, out_dir, side=SHAPE[2]):
    """Export one model; returns (path, input shape, whether its weights are external)."""
    torch.onnx.register_custom_op_symbolic('aten::zero', zero_symbolic, OPSET)
    torch.manual_seed(SEED)
    model = build(name, side)
    shape = (1, 3, side, side)
    external = weight_bytes(model) > PROTOBUF_LIMIT
    if external:
        # Its own folder: the exporter writes one data file per weight beside the graph.
        folder = os.path.join(out_dir, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f'{name}.onnx')
    else:
        path = os.path.join(out_dir, f'{name}.onnx')
    tmp = path + '.tmp'
    # nn.MultiheadAttention's eval fast path (aten::_native_multi_head_attention, ViT) has no ONNX
    # symbolic in torch 1.13; PyTorch takes the exportable path when grad is on for its weights.
    with torch.set_grad_enabled(uses_multihead_attention(model)):
        torch.onnx.export(model, (torch.randn(shape),), tmp, opset_version=OPSET, input_names=['input'],
                          output_names=['output', 'scores', 'labels'] if name in DETECTION else ['output'], do_constant_folding=True)
    os.replace(tmp, path)
    return path, list(shape), external


def export_all(out_dir, wanted):
    """The coverage set: every model at its default resolution, each failure recorded, exports.json rewritten after each."""
    record_path = os.path.join(out_dir, 'exports.json')
    status = {}
    if os.path.exists(record_path):
        with open(record_path) as f:
            status = json.load(f)
    for name in wanted:
        done = status.get(name, {})
        if done.get('status') == 'exported' and os.path.exists(os.path.join(out_dir, done['file'])) and not os.environ.get('FORCE'):
            continue
        started = time.monotonic()
        side = default_resolution(name)
        entry = {'task': task_of(name), 'input': [1, 3, side, side]}
        try:
            path, shape, external = export(name, out_dir, side)
            entry.update(status='exported', file=os.path.relpath(path, out_dir), externalData=external,
                         seconds=round(time.monotonic() - started, 1))
            print(f'{name}: exported at {side}x{side} in {entry["seconds"]} s', file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - the coverage table lists every model the exporter refuses, with its error
            entry.update(status='failed', error=f'{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}')
            print(f'{name}: export failed: {entry["error"]}', file=sys.stderr)
        status[name] = entry
        tmp = record_path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(status, f, indent=1, sort_keys=True)
        os.replace(tmp, record_path)
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == '--list':
        print('\n'.join(classification_models() + segmentation_models() + sorted(DETECTION)))
        return 0
    if len(argv) >= 3 and argv[1] == '--all':
        everything = classification_models() + segmentation_models() + sorted(DETECTION)
        wanted = argv[3:] or everything
        unknown = [n for n in wanted if n not in everything]
        if unknown:
            print(f'unknown model(s): {unknown}; see --list', file=sys.stderr)
            return 2
        os.makedirs(argv[2], exist_ok=True)
        torch.set_num_threads(2)
        return export_all(argv[2], wanted)
    probe = len(argv) >= 2 and argv[1] == '--probe'
    args = argv[2:] if probe else argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, wanted = args[0], args[1:]
    known = set(classification_models())
    names = classification_models() if probe else (wanted or BENCH)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f'unknown model(s): {unknown}; see --list', file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(2)
    status = {}
    for name in names:
        started = time.monotonic()
        try:
            export(name, out_dir)
            status[name] = 'exported'
            print(f'{name}: exported in {time.monotonic() - started:.1f} s', file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - a probe records every failure and goes on
            status[name] = f'failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}'
            print(f'{name}: {status[name]}', file=sys.stderr)
            if not probe:
                return 1
    if probe:
        with open(os.path.join(out_dir, 'probe.json'), 'w') as f:
            json.dump(status, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
