#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job.
# For now the main job is the engine demo: an MLP trained on two spirals with rpb's autograd.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
exec "${RPB_BUILD_DIR:-build}"/rpb demo "$@"
