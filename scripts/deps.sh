#!/usr/bin/env bash
# Installs the Debian packages rpb needs, only those missing; silent when all are there.
set -euo pipefail

PACKAGES=(g++ cmake make pkg-config
  libeigen3-dev libopenblas-dev libhdf5-dev libspdlog-dev doctest-dev libtomlplusplus-dev libcli11-dev hdf5-tools
  nlohmann-json3-dev  # the JSON rpb writes and reads back (results.json, eval records)
  bible-kjv bible-kjv-text
  libsentencepiece-dev  # the text task's sentencepiece tokenizer (train/data/tokenizer_sentencepiece.cpp)
  clang-14 libclang-rt-14-dev  # the libFuzzer targets of tests/fuzz (scripts/test.sh)
  python3-torch python3-h5py  # python/rpb_torch.py and its test (tests/python), bench/torch_models.py
  python3-sentencepiece  # rpb_torch.tokenizer (python/rpb_tokenizer.py): a checkpoint's SentencePiece model in Python
  python3-matplotlib  # python/rpb_plot/: every figure rpb draws (rpb plot, the sweep's, inspect --plot)
  texlive-latex-base texlive-latex-recommended  # pdflatex: results.tex compiles and fits a page (latex.results_fit)
  libopenmpi-dev openmpi-bin)  # data-parallel training and distributed sweeps (train/dist/distributed.h, mpirun)
PACKAGES+=("$@")

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
