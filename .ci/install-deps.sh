#!/usr/bin/env bash
# Installs the Debian packages veltair's test suite needs:
#   libonnx-testdata     ONNX's backend node tests (shape inference is checked against them)
#   python3-torch        PyTorch 1.13 for /usr/bin/python3: exports models with torch.onnx; the dense
#                        baseline of the sparse-training benchmark
#   libopenblas0-pthread an optimised BLAS for that PyTorch (Debian's torch calls whatever libblas.so.3
#                        the alternatives select; the reference BLAS is about 8x slower)
#   python3-torchvision  standard vision architectures for those exports
#   chromium             headless browser: the report test opens `veltair report` output in it
#   fonts-dejavu-core    a sans and a mono font, so Chromium and the PNG renderer draw real text
#   wordnet-base         WordNet 3.0's data files, the source of `veltair data wordnet`
# `veltair data debian-packages` reads `apt-cache dumpavail`, which is empty until the package lists
# have been fetched once; so `apt-get update` also runs when no package list is present.
# Idempotent and fast when everything is present: dpkg is asked first, and apt-get (with its
# `update`) only runs for what is missing.
set -euo pipefail

readonly PACKAGES=(libonnx-testdata python3-torch python3-torchvision libopenblas0-pthread chromium fonts-dejavu-core wordnet-base)

is_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

have_lists() {
  [ -n "$(apt-cache dumpavail 2>/dev/null | head -c 1)" ]
}

if [ "${#missing[@]}" -eq 0 ] && have_lists; then
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: apt-get update${missing[*]:+, then installing ${missing[*]}}" >&2
"${sudo_cmd[@]}" apt-get update -qq
if [ "${#missing[@]}" -gt 0 ]; then
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
