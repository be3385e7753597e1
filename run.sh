#!/usr/bin/env bash
# Set up l4slab on this machine and run a scenario, printing its summary and writing an
# HTML report. With no arguments: the 20 Mbit/s Reno example, then every published study
# reproduced (`l4slab reproduce all`: published vs measured, a verdict per claim, a report
# per study under results/studies/). Safe to run again and again.
# Usage: ./run.sh [SCENARIO] [l4slab run options, e.g. --seed 7 --set duration=10s]
set -euo pipefail
cd "$(dirname "$0")"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

for tool in python3 cargo; do
    command -v "$tool" >/dev/null || { echo "error: $tool is required but not installed" >&2; exit 1; }
done

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    { echo "error: l4slab needs Python >= 3.11 (python3 is $(python3 -V 2>&1))" >&2; exit 1; }

# l4slab lives in a virtual environment of its own (.venv), never in the system's.
if [ ! -x .venv/bin/python ]; then
    echo "==> creating the virtual environment .venv"
    python3 -m venv .venv
fi
echo "==> installing l4slab into .venv (builds the Rust simulator in release mode; the first build takes a few minutes)"
.venv/bin/python -m pip install --quiet -e .

# With no arguments: the default scenario, then every published study
# reproduced (l4slab reproduce all), each with its HTML report.
reproduce=0
if [ "$#" -eq 0 ]; then
    reproduce=1
fi
if [ "$#" -eq 0 ] || [[ "$1" == -* ]]; then
    set -- scenarios/examples/reno-20mbit.toml "$@"
fi
# The main job ends in a report a person can look at (report.html + figures/).
case " $* " in *" --report "*) ;; *) set -- "$@" --report ;; esac
echo "==> l4slab run $*"
.venv/bin/python -m l4slab run "$@"
if [ "$reproduce" -eq 1 ]; then
    echo
    echo "==> l4slab reproduce all (the published studies: published vs measured, PASS/FAIL per claim, GAP for a declared model gap)"
    exec .venv/bin/python -m l4slab reproduce all
fi
