#!/usr/bin/env bash
# The serving tables on a many-core machine in one go, within a time budget: serve-bench on
# the heterogeneous mixes (het1 resnet50 + mobilenet_v2, het2 BERT + efficientnet_b0, het3
# googlenet + tiny_yolov2 + mobilenet_v2; presets whose bundles are in --bundle-dir) with every
# ONNX Runtime baseline and veltair's fcfs and veltair policies, 3 rounds, arms interleaved; each
# load run's length is what the budget allows (see plan below). Output: the RESULTS tables
# (markdown, serve-bench's format) on stdout and in OUT/serve-tables.md, the raw JSON in
# OUT/serve-bench.json, the plan in OUT/plan.txt.
#
#   bench/serve/16core.sh [--cores 16|LIST] [--budget 600] [--rounds 3] [--bundle-dir DIR] [--out DIR]
#     [--arms LIST] [--calibration FILE] [--timeline] [--plan] MIX…      (MIX: a preset or NAME=A.bundle,B.bundle[@k]; default het1 het2 het3)
#
# --cores N takes the first N CPUs this process may run on; --plan prints the plan and stops.
# Before a run on a lent machine, check its status; the whole run is cut at the budget (timeout).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cores=16 budget=600 rounds=3 bundle_dir=. out=serve-16core arms=ort,ort-pinned,ort-instances,fcfs,veltair plan_only=0
extra=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --cores) cores=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --bundle-dir) bundle_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --arms) arms=$2; shift 2 ;;
    --plan) plan_only=1; shift ;;
    --calibration) extra+=(--calibration "$2"); shift 2 ;;
    --timeline) extra+=(--timeline); shift ;;
    --*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
mixes=("$@")
[ "${#mixes[@]}" -gt 0 ] || mixes=(het1 het2 het3)
[[ "$budget" =~ ^[0-9]+$ ]] && [ "$budget" -ge 10 ] || { echo "--budget must be whole seconds ≥ 10" >&2; exit 2; }
[[ "$rounds" =~ ^[0-9]+$ ]] && [ "$rounds" -ge 1 ] || { echo "--rounds must be a whole number ≥ 1" >&2; exit 2; }
# The CPUs this process may use, in order; --cores N takes the first N of them.
allowed=$(node -e "const {availableCores}=await import('$here/dist/src/toolchain/cpu.js'); console.log(availableCores().join(','))" --input-type=module)
if [[ "$cores" =~ ^[0-9]+$ ]]; then
  list=$(echo "$allowed" | tr ',' '\n' | head -n "$cores" | paste -sd, -)
else
  list=$cores
fi
ncores=$(echo "$list" | tr ',' '\n' | grep -c .)
narms=$(echo "$arms" | tr ',' '\n' | grep -c .)
nmix=${#mixes[@]}
# Budget plan: per mix, a quiet-latency probe (~15 s), 3 ort-pinned probes and rounds × arms searches,
# each search a server start (~4 s assumed) plus up to 8 load runs; 15% kept for the simulator and slack.
read -r duration probe <<<"$(awk -v b="$budget" -v m="$nmix" -v r="$rounds" -v a="$narms" 'BEGIN {
  per = (b * 0.85 / m - 15) / (r * a + 3) - 4; d = per / 8; if (d < 0.2) d = 0.2; p = d / 2; if (p < 0.2) p = 0.2;
  printf "%.2f %.2f\n", d, p }')"
cmd=(node --single-threaded-gc "$here/dist/src/bench/serve-bench.js" --bundle-dir "$bundle_dir" --arms "$arms" --cores "$list" --rounds "$rounds"
  --duration "$duration" --probe-duration "$probe" --max-runs 8 --pinned-probes 3 --tolerance 1.1 --json-out "$out/serve-bench.json")
for m in "${mixes[@]}"; do cmd+=(--mix "$m"); done
cmd+=("${extra[@]}")
plan="plan: ${ncores} cores ($list), budget ${budget} s, ${nmix} mix(es), ${narms} arms, ${rounds} rounds: "
plan+="${duration} s per load run, ${probe} s per ort-pinned probe, ≤ 8 runs per search
command: ${cmd[*]}"
echo "$plan" >&2
[ "$plan_only" = 1 ] && exit 0
mkdir -p "$out"
echo "$plan" > "$out/plan.txt"
set +e
timeout --signal=TERM --kill-after=20 "$budget" "${cmd[@]}" > "$out/serve-tables.md" 2> "$out/serve-bench.log"
rc=$?
set -e
cat "$out/serve-tables.md"
[ "$rc" = 124 ] && echo "16core.sh: cut at the ${budget} s budget; tables above are what finished (see $out/serve-bench.log)" >&2
exit "$rc"
