#!/bin/bash
# The scheduler's measured inputs: build, compile (small budgets) and profile the zoo models of the
# paper's mixes. Compiles under the shared benchmark lock, profiles under the exclusive one.
# Usage: bench/schedule/profile-zoo.sh WORKDIR [MODEL…]   (from the repository root; writes WORKDIR/<m>.{onnx,bundle,profile.json})
# This is exactly what produced bench/schedule/profiles/ (see bench/RESULTS.md, "Scheduling").
set -eu
WORK=${1:?usage: profile-zoo.sh WORKDIR [MODEL…]}; shift
MODELS=${*:-resnet50 mobilenet_v2 tiny_yolov2 googlenet efficientnet_b0 bert_large ssd_resnet34}
V="node $(pwd)/bin/veltair"
LOCK=${BENCH_LOCK:-${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/veltair-bench.lock}
mkdir -p "$WORK"
for m in $MODELS; do
  trials=3; zoo=()
  case $m in
    googlenet|efficientnet_b0|bert_large) trials=2 ;;
    ssd_resnet34) trials=2; zoo=(--resolution 400) ;;   # 1200x1200 is too slow to tune and profile on 2 cores
  esac
  [ -f "$WORK/$m.onnx" ] || $V zoo build "$m" -o "$WORK/$m.onnx" "${zoo[@]}"
  [ -d "$WORK/$m.bundle" ] || flock -s "$LOCK" $V compile "$WORK/$m.onnx" -o "$WORK/$m.bundle" --db "$WORK/db-$m" --trials $trials --levels 0,1,2,3,4 --json > "$WORK/$m.compile.json"
  flock -x "$LOCK" $V profile "$WORK/$m.bundle" --cores 1,2 --levels 0,1,2,3,4 --rounds 3 --runs 5 --force --json > "$WORK/$m.profile-run.json"
done
