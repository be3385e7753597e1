#!/usr/bin/env bash
# The whole test suite: Rust formatting, lints and tests, then the Python package
# (installed editable, which builds the native module) with its lints and tests.
# Safe to run again and again. Usage: ./test.sh
set -euo pipefail
cd "$(dirname "$0")"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
# The tests that need the simulator fail, rather than skip, when it is not built.
export L4SLAB_REQUIRE_NATIVE=1

step() { printf '\n==> %s\n' "$*"; }

for tool in python3 cargo; do
    command -v "$tool" >/dev/null || { echo "error: $tool is required but not installed" >&2; exit 1; }
done
for component in fmt clippy; do
    cargo "$component" --version >/dev/null 2>&1 || {
        echo "error: cargo $component is missing; install it with: rustup component add ${component/fmt/rustfmt}" >&2
        exit 1
    }
done

step "cargo fmt --all --check"
cargo fmt --all --check

step "install l4slab with its test and dev tools (builds the Rust extension in release mode)"
python3 -m pip install --quiet -e '.[test,dev]'

step "ruff check python tests bench"
python3 -m ruff check python tests bench

step "ruff format --check python tests bench"
python3 -m ruff format --check python tests bench

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

# l4slab-py is a cdylib for the Python extension (pyo3 extension-module): it does not
# link into a test binary, so it is left to clippy above and to the Python tests below.
step "cargo test --workspace --exclude l4slab-py"
cargo test --workspace --exclude l4slab-py

step "python3 -m pytest -q tests"
status=0
python3 -m pytest -q tests || status=$?
if [ "$status" -eq 5 ]; then
    echo "error: pytest collected no tests; the Python suite in tests/ must not be empty" >&2
    exit 1
elif [ "$status" -ne 0 ]; then
    exit "$status"
fi

printf '\nall checks passed\n'
