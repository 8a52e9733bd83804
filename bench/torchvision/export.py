"""Exports torchvision classification models to ONNX for the whole-model benchmark (bench/RESULTS.md,
"Whole model on torchvision exports").

Usage: /usr/bin/python3 bench/torchvision/export.py OUT_DIR [NAME ...]
       /usr/bin/python3 bench/torchvision/export.py --list        every classification model torchvision has
       /usr/bin/python3 bench/torchvision/export.py --probe OUT_DIR   try every one of them; write probe.json

With no NAME, the benchmark set (BENCH below) is exported. Weights are random (weights=None, seed
0): nothing is downloaded; latency does not depend on weight values. Every model is exported from
eval mode at opset 13 with constant folding (BatchNormalization folded into Conv by the exporter
where PyTorch can), a static 1x3x224x224 float input named `input` and output `output`.
Debian's python3-torch (1.13) and python3-torchvision (0.14) are enough: .ci/install-deps.sh.
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True

import torch  # noqa: E402
import torchvision  # noqa: E402

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


def classification_models():
    names = torchvision.models.list_models(module=torchvision.models)
    return sorted(n for n in names if not n.startswith('quantized'))


def export(name, out_dir):
    torch.manual_seed(SEED)
    model = torchvision.models.get_model(name, weights=None, **KWARGS.get(name, {})).eval()
    path = os.path.join(out_dir, f'{name}.onnx')
    tmp = path + '.tmp'
    with torch.no_grad():
        torch.onnx.export(model, (torch.randn(SHAPE),), tmp, opset_version=OPSET, input_names=['input'],
                          output_names=['output'], do_constant_folding=True)
    os.replace(tmp, path)
    return path


def main(argv):
    if len(argv) >= 2 and argv[1] == '--list':
        print('\n'.join(classification_models()))
        return 0
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
