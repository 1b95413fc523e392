#!/usr/bin/env bash
# Distribution benchmark: the same job in local mode, Ballista standalone, and a loopback
# cluster of 1 and 2 executors; wall time, client CPU and peak RSS per mode, outputs compared
# byte for byte with local mode.
# Usage: benches/cluster.sh JOB.toml WORK_DIR        (SDCFLOW = binary, default bench-release)
#        MODES="local standalone one two" (default all), TASKS = concurrent tasks per executor (2)
# The job's output dir is overridden with --out WORK_DIR/<mode>.
set -euo pipefail
JOB=$(realpath "$1")
WORK=$(realpath -m "$2")
BIN=${SDCFLOW:-${CARGO_TARGET_DIR:-$HOME/.cache/sdcflow-target}/bench-release/sdcflow}
MODES=${MODES:-local standalone one two}
TASKS=${TASKS:-2}
mkdir -p "$WORK"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

run_mode() { # mode, extra args...
  local mode=$1; shift
  rm -rf "${WORK:?}/$mode"
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/$mode.time" "$BIN" -q run "$JOB" --out "$WORK/$mode" "$@" \
    2> "$WORK/$mode.log"
  read -r wall user sys rss < "$WORK/$mode.time"
  local same="reference"
  if [ "$mode" != local ] && [ -d "$WORK/local" ]; then
    same="byte-identical"
    while IFS= read -r f; do
      cmp -s "$WORK/local/$f" "$WORK/$mode/$f" || same="DIFFERS: $f"
    done < <(cd "$WORK/local" && find . -name '*.parquet' -o -name '*.csv' | sort)
  fi
  printf '%-11s wall %7.1f s  client user %7.1f s  sys %5.1f s  peak RSS %6.2f GB  %s\n' \
    "$mode" "$wall" "$user" "$sys" "$(echo "$rss / 1048576" | bc -l)" "$same"
}

start_executor() { # name
  local p g
  p=$(free_port); g=$(free_port)
  mkdir -p "$WORK/$1-work"
  "$BIN" executor --bind-host 127.0.0.1 --port "$p" --grpc-port "$g" --scheduler-host 127.0.0.1 \
    --scheduler-port "$SPORT" --concurrent-tasks "$TASKS" --work-dir "$WORK/$1-work" > "$WORK/$1.log" 2>&1 &
  PIDS+=($!)
}

executors() { curl -s "http://127.0.0.1:$SPORT/api/executors" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0; }

for mode in $MODES; do
  case $mode in
    local) run_mode local ;;
    standalone) run_mode standalone --standalone ;;
    one|two)
      if [ -z "${SPORT:-}" ]; then
        SPORT=$(free_port)
        "$BIN" scheduler --bind-host 127.0.0.1 --port "$SPORT" > "$WORK/scheduler.log" 2>&1 &
        PIDS+=($!)
        sleep 2
      fi
      want=1; [ "$mode" = two ] && want=2
      while [ "${STARTED:-0}" -lt "$want" ]; do
        STARTED=$(( ${STARTED:-0} + 1 ))
        start_executor "exec-$STARTED"
      done
      for _ in $(seq 1 120); do [ "$(executors)" -ge "$want" ] && break; sleep 0.5; done
      [ "$(executors)" -ge "$want" ] || { echo "executors did not register" >&2; exit 1; }
      run_mode "$mode" --cluster "df://127.0.0.1:$SPORT"
      # Shuffle files and solver logs: what each executor did in this run.
      for e in $(seq 1 "$STARTED"); do
        printf '  exec-%s: work dir %s, solver tasks so far: %s\n' "$e" "$(du -sh "$WORK/exec-$e-work" | cut -f1)" \
          "$(grep -c 'protecting\|solving a subtable\|stratum of' "$WORK/exec-$e.log" || true)"
      done
      ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
done
