#!/usr/bin/env bash
# The whole-model benchmark of bench/RESULTS.md ("Whole model: torchvision exports and the zoo").
#
#   bench/torchvision/suite.sh models  WORK         export the torchvision set (export.py) and build the zoo models
#   bench/torchvision/suite.sh compile WORK [NAME…] veltair compile each model (under flock -s: a long CPU job)
#   bench/torchvision/suite.sh bench   WORK [NAME…] veltair bench --noise 0 at 1 and 2 threads (under flock -x: timing)
#   bench/torchvision/suite.sh profile WORK [NAME…] per-step profile at 1 and 2 threads (PROFILE_RUNS, default 100): the time outside tuned kernels
#   node dist/src/bench/suite-table.js WORK          the table (per-model ratios, geomeans, non-kernel share)
#
# WORK/models/NAME.onnx, WORK/db (the tuning records all compiles share), WORK/bundles/NAME.bundle,
# WORK/results/NAME.tT.json, WORK/results/NAME.profile.tT.json. TRIALS (default 2) trials per workload and thread count, LEVELS (default 0):
# the budget this 2-core machine affords for ~25 models; raise both for a real deployment.
# Each command takes the benchmark lock (BENCH_LOCK) itself: never wrap it in `flock -x` of the same
# lock, which deadlocks (the inner flock waits for the outer one forever).
set -euo pipefail
cmd=${1:?usage: suite.sh models|compile|bench|profile WORK [NAME...]}
work=${2:?usage: suite.sh models|compile|bench|profile WORK [NAME...]}
shift 2
here=$(cd "$(dirname "$0")/../.." && pwd)
# VELTAIR_BIN: run another build (e.g. a snapshot of dist/, so rebuilding the tree cannot change a long run).
veltair=("$(command -v node)" "${VELTAIR_BIN:-$here/bin/veltair}")
lock=${BENCH_LOCK:-${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/veltair-bench.lock}
trials=${TRIALS:-2}
levels=${LEVELS:-0}
zoo=(resnet50 mobilenet_v2 googlenet efficientnet_b0 tiny_yolov2 ssd_mobilenet_v1)
mkdir -p "$work/models" "$work/db" "$work/bundles" "$work/results"

names() {
  if [ "$#" -gt 0 ]; then printf '%s\n' "$@"; else ls "$work/models" | sed -n 's/\.onnx$//p'; fi
}

case "$cmd" in
  models)
    flock -s "$lock" /usr/bin/python3 "$here/bench/torchvision/export.py" "$work/models"
    for z in "${zoo[@]}"; do "${veltair[@]}" zoo build "$z" -o "$work/models/zoo_$z.onnx"; done
    ;;
  compile)
    for m in $(names "$@"); do
      [ -f "$work/bundles/$m.bundle/manifest.json" ] && [ -z "${FORCE:-}" ] && continue
      echo "== compile $m ($(date -u +%H:%M:%S))" >&2
      flock -s "$lock" "${veltair[@]}" compile "$work/models/$m.onnx" -o "$work/bundles/$m.bundle" --db "$work/db" \
        --trials "$trials" --levels "$levels" --force --json > "$work/results/$m.compile.json" \
        || echo "compile $m failed" >&2
    done
    ;;
  bench)
    for m in $(names "$@"); do
      [ -f "$work/bundles/$m.bundle/manifest.json" ] || { echo "no bundle for $m" >&2; continue; }
      for t in 1 2; do
        echo "== bench $m, $t thread(s) ($(date -u +%H:%M:%S))" >&2
        flock -x "$lock" "${veltair[@]}" bench "$work/bundles/$m.bundle" --model "$work/models/$m.onnx" --threads "$t" --noise 0 \
          --rounds "${ROUNDS:-5}" --runs "${RUNS:-3}" --json > "$work/results/$m.t$t.json" || echo "bench $m at $t threads failed" >&2
      done
    done
    ;;
  profile)
    for m in $(names "$@"); do
      [ -f "$work/bundles/$m.bundle/manifest.json" ] || { echo "no bundle for $m" >&2; continue; }
      for t in 1 2; do
        flock -x "$lock" "$(command -v node)" "$here/dist/src/bench/step-times.js" "$work/bundles/$m.bundle" --threads "$t" --runs "${PROFILE_RUNS:-100}" --json \
          > "$work/results/$m.profile.t$t.json" || echo "profile $m at $t threads failed" >&2
      done
    done
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
