#!/bin/bash
# The paper's scheduling figures, one command each (bench/RESULTS.md, "Scheduling"). Simulated,
# 64 cores. Profiles: bench/schedule/profiles/ (measured by profile-zoo.sh on the 2-core EPYC, 1-core
# figures used, the scaling model for the rest) and, for ResNet-50, the VELTAIR artifact's 3990X CSV.
# Usage (repository root): [CALIBRATION=FILE] bench/schedule/figures.sh OUTDIR [ARTIFACT_CSV]
# CALIBRATION: a serving calibration (veltair calibrate-serving) every run charges: the front end
# per request, the dispatch per block, the event loop's share, as measured live on the calibrating machine.
# Decision times are real-time measurements: run it under the exclusive benchmark lock.
set -eu
OUT=${1:?usage: figures.sh OUTDIR [ARTIFACT_CSV]}
ART=${2:-../shared/reference/veltair-3990x-resnet50-profile.csv}
P=${PROFILES:-bench/schedule/profiles}
V="node bin/veltair simulate${CALIBRATION:+ --calibration $CALIBRATION}"
# 1-core figures only (2-core ones held out: on this shared 2-vCPU VM a 2-thread run competes with the other tenants;
# they validate the scaling model instead). Claim/release: 23.4 µs at 2 threads, the median of the nine claim measurements
# of the profiling runs of 1 Dec 2026 (0–123 µs), for every model (the artifact has none).
M="--use-cores 1 --claim-us 23.4"
A="--claim-us 23.4"
# BERT-large: the 3 profiled encoder layers run 8× (24 layers). SSD-ResNet34 was profiled at 400×400: HEAVY keeps that size
# (under MLPerf's 100 ms, which is for 1200×1200); HEAVY1200 scales it by the MAC ratio 216.42/24.12 = 8.973 (modelled).
HEAVY="--repeat bert_large=8"
HEAVY1200="--scale ssd_resnet34=8.973 --repeat bert_large=8"
ALL="fcfs,prema,layerwise,static:4,veltair,veltair-sched,veltair-compile"
mkdir -p "$OUT"
run() { local name=$1; shift; echo "== $name: veltair simulate $*" | tee "$OUT/$name.txt"; $V "$@" >> "$OUT/$name.txt" 2>&1; }
# 1. model-wise waste at 75% load (and layer-wise vs model-wise conflicts: figure 3, same runs)
run waste-conflicts-medium --profiles $P --mix medium $M --policy fcfs,layerwise,veltair --load 0.25,0.5,0.75
run waste-conflicts-mixed --profiles $P --mix mixed $M $HEAVY --policy fcfs,layerwise,veltair --load 0.25,0.5,0.75
run waste-conflicts-artifact --profiles "resnet50@3990x=$ART" --models resnet50@3990x $A --policy fcfs,layerwise,veltair --load 0.25,0.5,0.75
# QoS satisfaction vs load per policy (plot), medium mix
run qos-vs-load-medium --profiles $P --mix medium $M --policy $ALL --load 0.1,0.2,0.3,0.4,0.5,0.6,0.7 --plot "$OUT/plots-medium"
# 2. best static block size at two loads (and the plots of block size vs load)
run best-k-resnet50 --profiles $P --models resnet50 $M --policy static:1-20,fcfs,veltair --load 0.1,0.2,0.3,0.4,0.5,0.6 --plot "$OUT/plots-resnet50"
run best-k-artifact --profiles "resnet50@3990x=$ART" --models resnet50@3990x $A --policy static:1-20,fcfs,veltair --load 0.1,0.2,0.3,0.4,0.5,0.6 --plot "$OUT/plots-artifact"
# 4–6. requests served at the same QoS vs FCFS (light / medium / heavy), mean latency at FCFS's max QPS, decision time
run max-qps-light --profiles $P --mix light $M --policy $ALL --find-max
run max-qps-medium --profiles $P --mix medium $M --policy $ALL --find-max
run max-qps-heavy --profiles $P --mix heavy $M $HEAVY --policy $ALL --find-max
run max-qps-heavy-1200 --profiles $P --mix heavy $M $HEAVY1200 --policy fcfs,veltair --find-max
run max-qps-mixed --profiles $P --mix mixed $M $HEAVY --policy $ALL --find-max
run max-qps-artifact --profiles "resnet50@3990x=$ART" --models resnet50@3990x $A --policy $ALL --find-max
# the scaling model's fit and its 2-from-1 validation
run scaling --scaling-report --profiles "$P,resnet50@3990x=$ART" --models resnet50
