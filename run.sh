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

echo "==> installing l4slab (builds the Rust simulator in release mode; the first build takes a few minutes)"
python3 -m pip install --quiet -e '.[test,dev]'

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
python3 -m l4slab run "$@"
if [ "$reproduce" -eq 1 ]; then
    echo
    echo "==> l4slab reproduce all (the published studies: published vs measured, PASS/FAIL per claim)"
    exec python3 -m l4slab reproduce all
fi
