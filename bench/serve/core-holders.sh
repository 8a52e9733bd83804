#!/usr/bin/env bash
# Who holds the cores while late requests lose their time (bench/RESULTS.md, "Serving"): veltair serve on the
# given bundles and cores, a 5 s warm-up, then DURATION s (default 60) of `veltair load --attribute` at QPS
# requests/s while `perf sched record` traces every context switch on the machine. Prints the load's late-request
# attribution, then from the trace:
#   - per thread of the server (its event loop, its block threads, its other threads) and of the load generator:
#     CPU time, and the wake-ups that waited over 1 ms for a core (count, sum, worst);
#   - for each wait over 2 ms of the server's event loop or the load generator's main thread: which thread held
#     that core just before it ran (counted by kind).
# Needs perf (Debian: linux-perf) and the right to trace the scheduler (root, or kernel.perf_event_paranoid ≤ -1).
#
#   bench/serve/core-holders.sh [--qps 5] [--duration 60] [--cores 0,1] [--port 8123] [--policy veltair] BUNDLE…
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
qps=5 duration=60 cores=0,1 port=8123 policy=veltair
while [ "$#" -gt 0 ]; do
  case "$1" in
    --qps) qps=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --cores) cores=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --policy) policy=$2; shift 2 ;;
    *) break ;;
  esac
done
[ "$#" -gt 0 ] || { echo "usage: $0 [--qps Q] [--duration S] [--cores LIST] [--port P] [--policy P] BUNDLE…" >&2; exit 2; }
command -v perf > /dev/null || { echo "core-holders: perf is not installed (Debian: apt-get install linux-perf)" >&2; exit 1; }
names=$(for b in "$@"; do basename "$b" .bundle; done | paste -sd, -)
out=$(mktemp -d)
node --single-threaded-gc "$here/bin/veltair" serve "$@" --policy "$policy" --port "$port" --cores "$cores" > "$out/serve.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do curl -sf "localhost:$port/v2/health/ready" > /dev/null 2>&1 && break; sleep 1; done
node --single-threaded-gc "$here/bin/veltair" load "http://127.0.0.1:$port" --models "$names" --qps "$qps" --duration 5 --seed 9 > /dev/null
perf sched record -a -o "$out/perf.data" -- sleep $((duration + 2)) > "$out/perf.log" 2>&1 &
tracer=$!
sleep 1
node --single-threaded-gc "$here/bin/veltair" load "http://127.0.0.1:$port" --models "$names" --qps "$qps" --duration "$duration" \
  --seed 3 --attribute > "$out/load.txt" &
client=$!
wait $client
# Block threads are the server's batch (or idle) threads: vt_background_thread gives them that policy. Read once the
# load is over, so every instance's team has been started.
ps -eLo pid,tid,cls,comm | awk -v p="$server" '$1 == p { print $2, $3 }' > "$out/server-threads"
wait $tracer
cat "$out/load.txt"
perf sched timehist -i "$out/perf.data" 2> /dev/null > "$out/timehist.txt"
awk -v server="$server" -v client="$client" -v threads="$out/server-threads" '
  BEGIN { while ((getline line < threads) > 0) { split(line, f, " "); cls[f[1]] = f[2] } }
  # "node[tid/pid]" or "node[pid]" (a main thread)
  function ids(task,   inside, parts) {
    inside = substr(task, index(task, "[") + 1); sub(/\].*/, "", inside)
    n = split(inside, parts, "/"); tid = parts[1]; pid = (n == 2) ? parts[2] : parts[1]
  }
  function kind(task) {
    ids(task)
    if (pid == server) return tid == server ? "server event loop" : (cls[tid] == "B" || cls[tid] == "IDL") ? "server block thread" : "server other thread"
    if (pid == client) return tid == client ? "load generator main" : "load generator other"
    sub(/\[.*/, "", task); return task
  }
  NR > 3 {
    k = kind($3); run[k] += $6
    if ($5 > 1) { waits[k]++; waited[k] += $5; if ($5 > worst[k]) worst[k] = $5 }
    if ((k == "server event loop" || k == "load generator main") && $5 > 2) held[k " <- " prev[$2]]++
    prev[$2] = k
  }
  END {
    printf "\n%-24s %12s %14s %12s %10s\n", "thread", "CPU ms", "waits > 1 ms", "waited ms", "worst ms"
    for (k in run) if (k != "<idle>" && run[k] >= 10) printf "%-24s %12.1f %14d %12.1f %10.2f\n", k, run[k], waits[k], waited[k], worst[k]
    printf "\nwaits over 2 ms, and the thread that held the core just before:\n"
    for (h in held) printf "  %4d  %s\n", held[h], h
  }' "$out/timehist.txt"
echo "trace and logs: $out"
