#!/usr/bin/env bash
# Runs the README's first command (`bash scripts/example.sh`) the way a newcomer would: from a
# fresh clone of the committed tree, with a minimal environment (no variables of this shell but
# HOME and a plain PATH), and checks that it publishes a complete output. The build cache is
# shared (CARGO_TARGET_DIR) so that this costs one crate build, not a cold one.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$HOME/.cache/sdcflow-target}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git clone -q . "$tmp/sdcflow"
# The shared data the example does not need must not be needed.
env -i HOME="$HOME" PATH="$HOME/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  CARGO_TARGET_DIR="$target" LANG=C.UTF-8 \
  bash "$tmp/sdcflow/scripts/example.sh" -q
for f in report.json .sdcflow-output; do
  [ -e "$tmp/sdcflow/out/example/$f" ] || { echo "readme-check: out/example/$f missing" >&2; exit 1; }
done
if grep -q '"protected_against_recalculation": false' "$tmp/sdcflow/out/example/report.json"; then
  echo "readme-check: the example publishes a table that is not protected" >&2
  exit 1
fi
if grep -q '"microaggregations": \[\]' "$tmp/sdcflow/out/example/report.json"; then
  echo "readme-check: the example runs no microaggregation" >&2
  exit 1
fi
echo "readme-check: scripts/example.sh ran from a fresh clone with a minimal environment"
