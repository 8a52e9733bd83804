#!/usr/bin/env bash
# Two builds' channel gathers on one bundle, alternating: per pair, each build's step profile
# (dist/src/bench/step-times.js, level-0 versions, R runs) summed over the gather steps, in all
# and by plane size, with the run's share outside tuned kernels. A timing: takes the benchmark lock
# itself (BENCH_LOCK, default veltair-bench.lock in $XDG_RUNTIME_DIR or the temp dir) for each profile.
#   bench/gathers/ab-builds.sh BEFORE_TREE AFTER_TREE BUNDLE [PAIRS=4] [THREADS=2] [RUNS=200]
# A tree is a built checkout (its dist/ and native-kernels/: the runtime addon is built from its sources).
set -euo pipefail
before=${1:?usage: ab-builds.sh BEFORE_TREE AFTER_TREE BUNDLE [PAIRS] [THREADS] [RUNS]}
after=${2:?usage}; bundle=${3:?usage}; pairs=${4:-4}; threads=${5:-2}; runs=${6:-200}
lock=${BENCH_LOCK:-${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/veltair-bench.lock}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$pairs"); do
  for tree in "$before" "$after"; do
    flock -x "$lock" node "$tree/dist/src/bench/step-times.js" "$bundle" --threads "$threads" --runs "$runs" --json > "$out"
    python3 - "$out" "$bundle/manifest.json" "$([ "$tree" = "$before" ] && echo before || echo after)" <<'PY'
import json, sys
from collections import defaultdict
prof, manifest, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
plan = manifest['graphPlan']
values = {v['id']: v for v in plan['values']}
pixels = {}
for s in plan['steps']:
    if s.get('layer') is not None and manifest['layers'][s['layer']]['op'] == 'channelgather':
        shape = values[s['outputs'][0]]['shape']
        pixels[s['layer']] = shape[2] * shape[3]
by_plane = defaultdict(float)
total = 0.0
for s in prof['steps']:
    if s['kind'] == 'channelgather':
        us = s['medianMs'] * 1000
        total += us
        by_plane[pixels.get(s['layer'], 0)] += us
planes = ', '.join(f'{p} px {us:.1f}' for p, us in sorted(by_plane.items(), reverse=True))
run = (prof['medianKernelMs'] + prof['medianOtherMs']) * 1000
print(f"{name}: gathers {total:.1f} us ({planes}); outside kernels {prof['nonKernelShare'] * 100:.2f}%; run {run:.0f} us")
PY
  done
done
