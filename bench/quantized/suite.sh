#!/usr/bin/env bash
# INT8 against ONNX Runtime's INT8 and veltair's own FP32, on ten torchvision models (bench/RESULTS.md,
# "INT8 families").
#
#   bench/quantized/suite.sh models   WORK [NAME…]  export the ten (bench/torchvision/export.py), then veltair quantize each
#   bench/quantized/suite.sh compile  WORK [NAME…]  veltair compile the INT8 model and the float model (one budget for both)
#   bench/quantized/suite.sh bench    WORK [NAME…]  veltair bench --noise 0 at 1 and 2 threads: the INT8 bundle against
#                                                  ORT on the same QDQ model, then the float bundle against ORT float
#   bench/quantized/suite.sh profile  WORK [NAME…]  the INT8 bundle's steps against the INT8 dot-product peak, the FMA
#                                                  peak and memcpy, measured right after them (src/bench/step-roofline.ts)
#   bench/quantized/suite.sh accuracy WORK [NAME…]  top-1 of the INT8 bundle against the FP32 bundle on INPUTS (default
#                                                  1000) generated inputs, and its outputs against ORT INT8 on the first
#                                                  ORT_INPUTS (default 20) of them (bench/quantized/agreement.mjs)
#   node bench/quantized/table.mjs WORK             the tables (ratios, geomeans, where the INT8 time goes, accuracy)
#
# WORK/models/NAME.onnx and NAME.int8.onnx, WORK/db (one tuning database), WORK/bundles/NAME{,.int8}.bundle,
# WORK/results/*.json. TRIALS (default 2) trials per workload and LEVELS (default 0) for both compiles;
# CALIBRATE (default 8) generated calibration inputs. Timing takes the benchmark lock (BENCH_LOCK) exclusively.
set -euo pipefail
cmd=${1:?usage: suite.sh models|compile|bench|profile|accuracy WORK [NAME...]}
work=${2:?usage: suite.sh models|compile|bench|profile|accuracy WORK [NAME...]}
shift 2
here=$(cd "$(dirname "$0")/../.." && pwd)
veltair=("$(command -v node)" "${VELTAIR_BIN:-$here/bin/veltair}")
lock=${BENCH_LOCK:-${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/veltair-bench.lock}
trials=${TRIALS:-2}
levels=${LEVELS:-0}
set_default=(resnet50 mobilenet_v2 efficientnet_b0 regnet_x_400mf resnext50_32x4d googlenet vgg16 squeezenet1_1 shufflenet_v2_x1_0 densenet121)
mkdir -p "$work/models" "$work/db" "$work/bundles" "$work/results"
if [ "$#" -gt 0 ]; then names=("$@"); else names=("${set_default[@]}"); fi

case "$cmd" in
  models)
    flock -s "$lock" /usr/bin/python3 "$here/bench/torchvision/export.py" "$work/models" "${names[@]}"
    for m in "${names[@]}"; do
      "${veltair[@]}" quantize "$work/models/$m.onnx" -o "$work/models/$m.int8.onnx" --generated "${CALIBRATE:-8}" --force
    done
    ;;
  compile)
    for m in "${names[@]}"; do
      for kind in int8 fp32; do
        src="$work/models/$m.onnx" out="$work/bundles/$m.bundle"
        [ "$kind" = int8 ] && src="$work/models/$m.int8.onnx" out="$work/bundles/$m.int8.bundle"
        [ -f "$out/manifest.json" ] && [ -z "${FORCE:-}" ] && continue
        echo "== compile $m $kind ($(date -u +%H:%M:%S))" >&2
        start=$(date +%s)
        flock -s "$lock" "${veltair[@]}" compile "$src" -o "$out" --db "$work/db" --trials "$trials" --levels "$levels" \
          --force --json > "$work/results/$m.$kind.compile.json" || echo "compile $m $kind failed" >&2
        echo "{\"seconds\": $(( $(date +%s) - start ))}" > "$work/results/$m.$kind.compile-seconds.json"
      done
    done
    ;;
  bench)
    for m in "${names[@]}"; do
      for t in 1 2; do
        for kind in int8 fp32; do
          model="$work/models/$m.onnx" bundle="$work/bundles/$m.bundle"
          [ "$kind" = int8 ] && model="$work/models/$m.int8.onnx" bundle="$work/bundles/$m.int8.bundle"
          [ -f "$bundle/manifest.json" ] || { echo "no $kind bundle for $m" >&2; continue; }
          echo "== bench $m $kind, $t thread(s) ($(date -u +%H:%M:%S))" >&2
          flock -x "$lock" "${veltair[@]}" bench "$bundle" --model "$model" --threads "$t" --noise 0 \
            --rounds "${ROUNDS:-5}" --runs "${RUNS:-3}" --json > "$work/results/$m.$kind.t$t.json" \
            || echo "bench $m $kind at $t threads failed" >&2
        done
      done
    done
    ;;
  profile)
    for m in "${names[@]}"; do
      [ -f "$work/bundles/$m.int8.bundle/manifest.json" ] || { echo "no INT8 bundle for $m" >&2; continue; }
      for t in 1 2; do
        flock -x "$lock" "$(command -v node)" "$here/dist/src/bench/step-roofline.js" "$work/bundles/$m.int8.bundle" --threads "$t" \
          --runs "${PROFILE_RUNS:-30}" --json > "$work/results/$m.int8.profile.t$t.json" || echo "profile $m at $t threads failed" >&2
      done
    done
    ;;
  accuracy)
    # top-1 against FP32 on INPUTS generated inputs, and outputs against ORT INT8 on the first ORT_INPUTS of them
    flock -x "$lock" "$(command -v node)" "$here/bench/quantized/agreement.mjs" "$work" --inputs "${INPUTS:-1000}" \
      --ort "${ORT_INPUTS:-20}" "${names[@]}"
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
