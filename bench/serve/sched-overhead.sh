#!/usr/bin/env bash
# The live scheduler's real time per request (bench/RESULTS.md, "Serving"): veltair serve with
# --policy POLICY (default veltair) on the given bundles and cores, DURATION s (default 15) of veltair load at QPS
# requests/s, then the server's own histograms from /metrics: per scheduler event
# (veltair_scheduler_decision_seconds), per block from decision to its first kernel
# (veltair_block_dispatch_seconds), and per request, both summed (veltair_request_scheduling_seconds); then, per
# histogram, its mean and the bucket that holds its median.
#
#   bench/serve/sched-overhead.sh [--qps 6] [--duration 15] [--cores 0,1] [--port 8123] [--policy veltair] [--no-chain] BUNDLE…
#
# --no-chain serves block by block (every block back through the event loop), for the before/after pair.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
qps=6 cores=0,1 port=8123 policy=veltair duration=15
chain=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --qps) qps=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --cores) cores=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --policy) policy=$2; shift 2 ;;
    --no-chain) chain=(--no-chain); shift ;;
    *) break ;;
  esac
done
[ "$#" -gt 0 ] || { echo "usage: $0 [--qps Q] [--cores LIST] [--port P] [--policy P] BUNDLE…" >&2; exit 2; }
names=$(for b in "$@"; do basename "$b" .bundle; done | paste -sd, -)
out=$(mktemp -d)
node --single-threaded-gc "$here/bin/veltair" serve "$@" --policy "$policy" --port "$port" --cores "$cores" "${chain[@]}" > "$out/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do curl -sf "localhost:$port/v2/health/ready" > /dev/null 2>&1 && break; sleep 1; done
node --single-threaded-gc "$here/bin/veltair" load "http://127.0.0.1:$port" --models "$names" --qps "$qps" --duration "$duration" --seed 3 --json > "$out/load.json"
curl -s "localhost:$port/metrics" > "$out/metrics.txt"
grep -E '^veltair_(scheduler_decision|block_dispatch|request_scheduling)_seconds_(sum|count)|^veltair_requests_total|^veltair_blocks_total' \
  "$out/metrics.txt"
# Per histogram: its mean, and the bucket that holds its median (a few blocks that wait for a core make the mean).
for h in scheduler_decision block_dispatch request_scheduling; do
  awk -v h="veltair_${h}_seconds" '
    index($0, h "_bucket{") == 1 { match($0, /le="[^"]*"/); le[n] = substr($0, RSTART + 4, RLENGTH - 5); cum[n++] = $2 }
    index($0, h "_sum ") == 1 { sum = $2 }
    index($0, h "_count ") == 1 { count = $2 }
    END {
      if (count == 0) exit
      lo = 0
      for (i = 0; i < n; i++) { if (cum[i] >= count / 2) break; lo = le[i] }
      hi = (le[i] == "+Inf") ? "+Inf" : sprintf("%.0f", le[i] * 1e6)
      printf "%s: mean %.0f us, median in (%.0f, %s] us, %d observed\n", h, 1e6 * sum / count, lo * 1e6, hi, count
    }' "$out/metrics.txt"
done
echo "load report: $out/load.json" >&2
