#!/usr/bin/env bash
# Set up l4slab on this machine and run a scenario (by default the 20 Mbit/s Reno
# example), printing its summary and writing an HTML report. Safe to run again and again.
# Usage: ./run.sh [SCENARIO] [l4slab run options, e.g. --seed 7 --set duration=10s]
set -euo pipefail
cd "$(dirname "$0")"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

for tool in python3 cargo; do
    command -v "$tool" >/dev/null || { echo "error: $tool is required but not installed" >&2; exit 1; }
done

echo "==> installing l4slab (builds the Rust simulator in release mode; the first build takes a few minutes)"
python3 -m pip install --quiet -e '.[test,dev]'

if [ "$#" -eq 0 ] || [[ "$1" == -* ]]; then
    set -- scenarios/examples/reno-20mbit.toml "$@"
fi
# The main job ends in a report a person can look at (report.html + figures/).
case " $* " in *" --report "*) ;; *) set -- "$@" --report ;; esac
echo "==> l4slab run $*"
exec python3 -m l4slab run "$@"
