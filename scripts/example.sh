#!/usr/bin/env bash
# Runs the example job on the embedded default engine (local DataFusion):
# installs build prerequisites if missing, builds sdcflow, generates 200,000 synthetic census
# rows into data/sample (once) and runs configs/example.toml into out/example.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sdcflow-target}"
bash .ci/setup.sh --no-python
cargo build --profile ci --locked
BIN="$CARGO_TARGET_DIR/ci/sdcflow"
[ -d data/sample ] || "$BIN" generate --rows 200000 --seed 1 --out data/sample
"$BIN" run configs/example.toml "$@"
