#!/usr/bin/env bash
# The sparse family under overload (bench/RESULTS.md, "Sparse inference"): a 500k-class model
# served with its sparse family against the same model with its dense version only, both at one QoS.
#
#   bench/sparse/overload.sh WORK [QOS_MS]     (under the benchmark lock: flock -x "$BENCH_LOCK" …)
#
# 1. sparse-head-bench.js builds the generated model and its family into WORK (and times them);
# 2. the same model compiled with --sparsities 1 (the same top-k head, dense only);
#    (steps 1 and 2 are skipped when WORK already holds both bundles);
# 3. both served on this machine's cores (ports 8101, 8102), QoS QOS_MS (default 100);
# 4. veltair load --find-max over both, 2 rounds; WORK/load.json, WORK/metrics-*.txt.
set -euo pipefail
work=${1:?usage: bench/sparse/overload.sh WORK [QOS_MS]}
qos=${2:-100}
here=$(cd "$(dirname "$0")/../.." && pwd)
veltair=("$(command -v node)" "$here/bin/veltair")
mkdir -p "$work/dense"
cd "$here"
if [[ -d "$work/generated.bundle" && -d "$work/dense/generated.bundle" ]]; then
  echo "reusing the bundles in $work (delete them to build and time them again)" >&2
else
  node dist/src/bench/sparse-head-bench.js --only generated --classes 500000 --rounds 5 --tables 64 --keep "$work" > "$work/bench.md"
  "${veltair[@]}" compile "$work/generated.onnx" -o "$work/dense/generated.bundle" --trials 2 --levels 0 --threads 1 --profile-threads none \
    --db "$work/db" --force --calibration "$work/generated-calibration.txt" --sparsities 1 --sparse-tables 64 --json > "$work/dense.compile.json"
fi
printf '{"models": {"generated": {"bundle": "%s", "qosMs": %s}}}\n' "$work/generated.bundle" "$qos" > "$work/sparse.json"
printf '{"models": {"generated": {"bundle": "%s", "qosMs": %s}}}\n' "$work/dense/generated.bundle" "$qos" > "$work/dense.json"
"${veltair[@]}" serve --config "$work/sparse.json" --port 8101 --json > "$work/serve-sparse.json" 2> "$work/serve-sparse.err" & s1=$!
"${veltair[@]}" serve --config "$work/dense.json" --port 8102 --json > "$work/serve-dense.json" 2> "$work/serve-dense.err" & s2=$!
trap 'kill $s1 $s2 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf http://127.0.0.1:8101/v2/health/ready >/dev/null && curl -sf http://127.0.0.1:8102/v2/health/ready >/dev/null && break
  sleep 1
done
"${veltair[@]}" load http://127.0.0.1:8101 http://127.0.0.1:8102 --models generated --find-max --duration 4 --rounds 2 \
  --qos "generated=$qos" --json > "$work/load.json"
curl -s http://127.0.0.1:8101/metrics | grep '^veltair_sparse' > "$work/metrics-sparse.txt" || true
curl -s http://127.0.0.1:8102/metrics | grep '^veltair_sparse' > "$work/metrics-dense.txt" || true
cat "$work/load.json"
