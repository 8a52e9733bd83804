#!/usr/bin/env bash
# The serving pack's entry (bench/serve/pack.sh puts it at veltair-serve/run.sh): on a many-core host
# with no registry, generate the mixes' zoo models from their seeds, compile each into a bundle with a
# short search (one candidate per workload at level 0, from the shipped records where this host type has
# them; the .onnx stays beside its bundle for the ONNX Runtime arms), then run bench/serve/16core.sh. The bundles are tuned less than a
# default compile: the tables compare scheduling on the same kernels, and say how the bundles were made.
#
#   veltair-serve/run.sh [--budget 600] [--compile-budget 240] [--plan] [16core.sh options…] [MIX…]
#
# Needs the system C compiler (cc) on the host; nothing from the network. Output: serve-16core/ (16core.sh's).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$here/node/bin:$PATH"
budget=600 compile_budget=240 plan_only=0
pass=() mixes=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --compile-budget) compile_budget=$2; shift 2 ;;
    --plan) plan_only=1; pass+=(--plan); shift ;;
    --cores|--rounds|--out|--arms|--calibration) pass+=("$1" "$2"); shift 2 ;;
    --timeline) pass+=("$1"); shift ;;
    --*) echo "unknown option $1" >&2; exit 2 ;;
    *) mixes+=("$1"); shift ;;
  esac
done
[ "${#mixes[@]}" -gt 0 ] || mixes=(het1 het2 het3)
models=()
for mix in "${mixes[@]}"; do
  case "$mix" in
    het1) models+=(resnet50 mobilenet_v2) ;;
    het2) models+=(bert_large efficientnet_b0) ;;
    het3) models+=(googlenet tiny_yolov2 mobilenet_v2) ;;
    *) echo "run.sh: the pack builds the preset mixes het1, het2, het3; not $mix" >&2; exit 2 ;;
  esac
done
mapfile -t models < <(printf '%s\n' "${models[@]}" | sort -u)
bundles=$here/bundles
echo "run.sh: node $(node --version), $(nproc) CPUs; models: ${models[*]}; compile budget ${compile_budget} s, serving budget ${budget} s" >&2
if [ "$plan_only" = 0 ]; then
  mkdir -p "$bundles"
  start=$SECONDS
  for m in "${models[@]}"; do
    [ -f "$bundles/$m.bundle/manifest.json" ] && continue
    node "$here/bin/veltair" zoo build "$m" -o "$bundles/$m.onnx"
    left=$((compile_budget - (SECONDS - start)))
    [ "$left" -gt 10 ] || { echo "run.sh: the compile budget ran out before $m" >&2; exit 1; }
    timeout "$left" node "$here/bin/veltair" compile "$bundles/$m.onnx" -o "$bundles/$m.bundle" \
      --trials 1 --transfer-trials 1 --levels 0 --profile-threads none
  done
fi
exec "$here/bench/serve/16core.sh" --bundle-dir "$bundles" --budget "$budget" "${pass[@]}" "${mixes[@]}"
