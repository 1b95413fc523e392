#!/usr/bin/env bash
# Tabulation benchmark: sdcflow and DuckDB on the same generated Parquet, 2 threads each.
# Usage: benches/tabulate.sh ROWS DIMS [DATA_DIR]     (DIMS: 4 = 2 hierarchical, 7 = 4 hierarchical)
# Needs `cargo build --profile bench-release` and `pip install duckdb`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-2000000}
DIMS=${2:-4}
DATA=${3:-data/bench$ROWS}
BIN=${SDCFLOW:-${CARGO_TARGET_DIR:-$HOME/.cache/sdcflow-target}/bench-release/sdcflow}
[ -d "$DATA" ] || "$BIN" -q generate --rows "$ROWS" --out "$DATA"
"$BIN" -q bench tabulate --data "$DATA" --dims "$DIMS" --threads 2
timeout "${DUCKDB_TIMEOUT:-900}" python3 benches/tabulate_duckdb.py "$DATA" --dims "$DIMS" --threads 2 --memory-limit 8GB \
  || echo "duckdb tabulate: dims=$DIMS did not complete (exit $?)"
