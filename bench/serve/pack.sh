#!/usr/bin/env bash
# Packs what a many-core Linux x64 host with no package registry needs to run the serving tables
# (bench/serve/16core.sh): this node binary, the built dist/, the production modules (ONNX Runtime's
# Linux x64 library only: the other platforms' binaries and typescript are left out), the C sources the
# kernels are built from, the shipped tuning records, and the zoo's recipe (models are generated from
# seeds, so no weights travel). On the host: unpack, then `veltair-serve/run.sh` builds the bundles and
# runs 16core.sh (see run.sh's header).
#
#   bench/serve/pack.sh [--out serve-pack.tar.xz] [--stage DIR] [--xz-level 6]   (npm run build first)
#
# --stage DIR also keeps the laid-out pack in DIR; --xz-level 1 compresses in seconds (the test's choice:
# if the pack fits at level 1 it fits at any higher level; level 0 does not fit).
# The archive must stay ≤ 60 MiB; the script fails if it is larger.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
out=serve-pack.tar.xz stage_only= level=6
while [ "$#" -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --stage) stage_only=$2; shift 2 ;;
    --xz-level) level=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$level" =~ ^[0-9]$ ]] || { echo "--xz-level must be 0 to 9" >&2; exit 2; }
readonly LIMIT_BYTES=$((60 * 1024 * 1024))
[ -f "$here/dist/src/bench/serve-bench.js" ] || { echo "pack.sh: no dist/ (run npm run build first)" >&2; exit 1; }
[ -f "$here/node_modules/onnxruntime-node/package.json" ] || { echo "pack.sh: onnxruntime-node is not installed (npm ci)" >&2; exit 1; }

if [ -n "$stage_only" ]; then
  root=$stage_only
  mkdir -p "$root"
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  root=$tmp
fi
dest=$root/veltair-serve
rm -rf "$dest"
mkdir -p "$dest/node/bin"

cp "$(command -v node)" "$dest/node/bin/node"
cp -r "$here/bin" "$here/native-kernels" "$here/tuning-db" "$here/package.json" "$dest/"
mkdir -p "$dest/dist" "$dest/bench/serve"
cp -r "$here/dist/src" "$dest/dist/"
cp "$here/bench/serve/16core.sh" "$dest/bench/serve/"
cp "$here/bench/serve/pack-run.sh" "$dest/run.sh"

# Production modules as npm resolves them here, without typescript (dist/ is built) and with ONNX Runtime
# (an optional peer, installed here as a dev dependency) for the ort arms.
cd "$here"
{
  npm ls --omit=dev --all --parseable 2>/dev/null | sed "s#^$here/##" | grep '^node_modules/' | grep -v '^node_modules/typescript$'
  printf '%s\n' node_modules/onnxruntime-node node_modules/onnxruntime-common
} | sort -u | while read -r module; do
  # A nested module came with its parent (sorted first); copied again, cp -r would nest a second copy inside it.
  [ -e "$dest/$module" ] && continue
  mkdir -p "$dest/$(dirname "$module")"
  cp -r "$module" "$dest/$module"
done
# Never loaded at run time: protobufjs's .proto compiler CLI (with modules of its own) and type declarations.
find "$dest/node_modules" -type d \( -path '*/protobufjs/cli' -o -path '*/node_modules/@types' \) -prune -exec rm -rf {} +
# Only Linux x64's ONNX Runtime binaries are kept.
find "$dest/node_modules/onnxruntime-node/bin" -mindepth 3 -maxdepth 3 -type d ! -path '*/linux/x64' -exec rm -rf {} +
find "$dest/node_modules/onnxruntime-node/bin" -mindepth 2 -maxdepth 2 -type d ! -name linux -exec rm -rf {} +

du -sb "$dest" | awk '{printf "staged %s (%.1f MiB uncompressed)\n", $2, $1 / 1048576}'
tar -C "$root" -cf - veltair-serve | xz -T0 "-$level" > "$out"
bytes=$(stat -c %s "$out")
printf 'wrote %s (%.1f MiB)\n' "$out" "$(echo "$bytes / 1048576" | bc -l)"
if [ "$bytes" -gt "$LIMIT_BYTES" ]; then
  echo "pack.sh: $out is over the 60 MiB limit" >&2
  exit 1
fi
