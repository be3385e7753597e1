#!/usr/bin/env bash
# The whole test suite, in virtual environments of its own so that nothing left on
# this machine by earlier installs can hide a missing dependency:
#   1. Debian packages tests need (as root, with apt-get): chromium, iperf3, tshark,
#      dnsmasq, nftables, busybox, tayga, unbound, curl;
#   2. a fresh .venv-test: l4slab with its test and dev tools and the Dask extra (builds
#      the native module in release mode); Rust fmt, clippy and tests; ruff, mypy --strict and
#      stubtest for _native.pyi; the Python suite, including the wheel test (the wheel
#      built here, installed into yet another fresh venv and run outside the tree);
#   3. a fresh .venv-floors with every dependency at its declared floor: the Python
#      suite again.
# Safe to run again and again. Usage: ./test.sh
set -euo pipefail
cd "$(dirname "$0")"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
# The tests that need the simulator (or the wheel) fail, rather than skip, without it.
export L4SLAB_REQUIRE_NATIVE=1 L4SLAB_REQUIRE_WHEEL=1
# The sweep's cluster tests (tests/test_sweep_dask.py) fail, rather than skip, without Dask.
export L4SLAB_REQUIRE_DASK=1
unset PYTHONPATH VIRTUAL_ENV

step() { printf '\n==> %s\n' "$*"; }

for tool in python3 cargo; do
    command -v "$tool" >/dev/null || { echo "error: $tool is required but not installed" >&2; exit 1; }
done
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    { echo "error: l4slab needs Python >= 3.11 (python3 is $(python3 -V 2>&1))" >&2; exit 1; }
for component in fmt clippy; do
    cargo "$component" --version >/dev/null 2>&1 || {
        echo "error: cargo $component is missing; install it with: rustup component add ${component/fmt/rustfmt}" >&2
        exit 1
    }
done

# Debian packages the tests use: chromium renders the HTML reports headless
# (tests/test_report.py), iperf3 checks the emulator against a real tool, tshark
# reads the pcap captures back (tests/test_pcap.py); dnsmasq, nftables, busybox
# (udhcpc), tayga, unbound and curl serve, NAT, translate and play the device for
# l4slab gateway (tests/test_gateway.py); iputils-ping for docs/emulator.md's first
# example (tests/test_docs_commands.py).
packages=(chromium iperf3 tshark dnsmasq nftables busybox tayga unbound curl iputils-ping)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        step "apt-get install ${missing[*]}"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "warning: not installing ${missing[*]} (needs root and apt-get); the tests that use them skip" >&2
    fi
fi

step "cargo fmt --all --check"
cargo fmt --all --check

step "fresh .venv-test: install l4slab with its test and dev tools and Dask (builds the native module)"
python3 -m venv --clear .venv-test
py=.venv-test/bin/python
$py -m pip install --quiet --upgrade pip
$py -m pip install --quiet -e '.[test,dev,dask]'

step "ruff check / ruff format --check (python tests bench)"
$py -m ruff check python tests bench
$py -m ruff format --check python tests bench

step "mypy (strict) and stubtest l4slab._native"
$py -m mypy
$py -m mypy.stubtest l4slab._native

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

# l4slab-py is a cdylib for the Python extension (pyo3 extension-module): it does not
# link into a test binary, so it is left to clippy above and to the Python tests below.
step "cargo test --workspace --exclude l4slab-py"
cargo test --workspace --exclude l4slab-py

step "build the wheel (target/wheels)"
rm -rf target/wheels
$py -m pip wheel --quiet --no-deps -w target/wheels .
wheels=(target/wheels/l4slab-*.whl)
[ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] || { echo "error: expected one wheel, got: ${wheels[*]}" >&2; exit 1; }
export L4SLAB_WHEEL="$PWD/${wheels[0]}"

pytest_suite() {
    local status=0
    "$@" || status=$?
    if [ "$status" -eq 5 ]; then
        echo "error: pytest collected no tests; the Python suite in tests/ must not be empty" >&2
        exit 1
    elif [ "$status" -ne 0 ]; then
        exit "$status"
    fi
}

step "pytest tests (with the wheel installed in a fresh venv and run outside the tree)"
pytest_suite $py -m pytest -q tests

step "fresh .venv-floors: every dependency at its declared floor; pytest again"
python3 .ci/floors.py test dask > target/floors.txt
cat target/floors.txt
python3 -m venv --clear .venv-floors
.venv-floors/bin/python -m pip install --quiet --upgrade pip
.venv-floors/bin/python -m pip install --quiet -c target/floors.txt -e '.[test,dask]'
pytest_suite .venv-floors/bin/python -m pytest -q -m 'not wheel and not docs' tests

printf '\nall checks passed\n'
