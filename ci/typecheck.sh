#!/bin/sh
# The static type check of the library (mypy, configured in pyproject.toml). The stages live in top-level folders
# that pyproject.toml maps into the armlab package (package-dir), which mypy cannot follow; so the check runs on a
# tree of links shaped like the installed package: build/typecheck/armlab/{*.py, cli, experiment, spec, analysis, training,
# evals}. Usage: ci/typecheck.sh [mypy options]; run from the repository root.
set -eu
root=$(pwd)
tree=${TYPECHECK_TREE:-build/typecheck}  # another folder (and MYPY_CACHE_DIR) for checks side by side
rm -rf "$tree"
mkdir -p "$tree/armlab"
for path in armlab/*.py armlab/cli armlab/experiment armlab/spec; do
    ln -s "$root/$path" "$tree/armlab/"
done
for stage in analysis training evals; do
    ln -s "$root/$stage" "$tree/armlab/$stage"
done
cd "$tree"
exec "$root/.venv/bin/mypy" --config-file "$root/pyproject.toml" --cache-dir "${MYPY_CACHE_DIR:-$root/.mypy_cache}" "$@" -p armlab
