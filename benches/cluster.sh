#!/usr/bin/env bash
# Distribution benchmark: the same job in local mode, Ballista standalone, and loopback clusters
# of 1, 2 and 4 executors; wall time, client CPU and peak RSS per mode, each executor's peak RSS
# and shuffle bytes (peak of the work directories, sampled), roll-up parts per executor (primaries-only tables), outputs compared byte
# for byte with local mode (every Parquet and CSV file, parts included).
# Usage: benches/cluster.sh JOB.toml WORK_DIR        (SDCFLOW = binary, default bench-release)
#   MODES="local standalone one two four" (default "local one two four")
#   TASKS = concurrent tasks per executor (default 1), EXEC_MEM_MB = each executor's
#   --memory-limit-mb (default 1024), EXEC_THREADS = RAYON_NUM_THREADS of each executor (default
#   TASKS), so that N executors are N single-thread workers whatever the machine. HOST_SLOTS =
#   each executor's --host-slots (default: the executor's, the host's cores; 0: no limit, so
#   more executors than cores time-share them). DROP_OUTPUTS=1
#   removes each cluster mode's output once compared with local mode's (large tables).
# The client's stage lines (records per leading node, routing, roll-up and writing of the parts) are
# printed below each mode's line (its log is WORK_DIR/<mode>.log).
# Every cluster mode starts its own scheduler and executors (peak RSS and work directories are
# per mode) and stops them afterwards. The job's output dir is overridden with --out WORK_DIR/<mode>.
set -euo pipefail
JOB=$(realpath "$1")
WORK=$(realpath -m "$2")
BIN=${SDCFLOW:-${CARGO_TARGET_DIR:-$HOME/.cache/sdcflow-target}/bench-release/sdcflow}
MODES=${MODES:-local one two four}
TASKS=${TASKS:-1}
EXEC_MEM_MB=${EXEC_MEM_MB:-1024}
EXEC_THREADS=${EXEC_THREADS:-$TASKS}
mkdir -p "$WORK"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PIDS=()
stop_all() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; PIDS=(); }
trap stop_all EXIT

run_mode() { # mode, extra args...
  local mode=$1; shift
  rm -rf "${WORK:?}/$mode"
  # Shuffle bytes: Ballista deletes a job's shuffle files when the job ends, so the executors'
  # work directories are sampled every 0.5 s while the run lasts; the peak of their sum is
  # what the shuffles (and spills) held on disk at once.
  echo 0 > "$WORK/$mode.disk"
  ( peak=0; while sleep 0.5; do
      # printf, not print: awk prints sums above 2^31 as 4.58e+09, which `[ -gt ]` refuses.
      # `|| true`: du fails when a shuffle file vanishes under it, and with `set -e` and
      # pipefail that failure ended this sampler silently (peaks recorded too low).
      now=$(du -sb "$WORK/$mode"-exec-*-work 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}') || true
      [ "$now" -gt "$peak" ] && peak=$now && echo "$peak" > "$WORK/$mode.disk"
    done ) &
  local sampler=$!
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/$mode.time" "$BIN" run "$JOB" --out "$WORK/$mode" "$@" \
    2> "$WORK/$mode.log" || { kill "$sampler" 2>/dev/null || true; echo "$mode: run failed (exit $?):"; tail -5 "$WORK/$mode.log"; return 0; }
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
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
  # DROP_OUTPUTS=1: a compared cluster output is removed (7-variable tables write GBs per mode).
  if [ "${DROP_OUTPUTS:-0}" = 1 ] && [ "$mode" != local ]; then rm -rf "${WORK:?}/$mode"; fi
  [ "$mode" != local ] && [ "$mode" != standalone ] && \
    printf '  executors work directories at most %.2f GB at once (shuffle and spill files)\n' \
      "$(echo "$(cat "$WORK/$mode.disk") / 1073741824" | bc -l)"
  # The client's stage lines: record counts, routing, roll-up and writing of the parts.
  grep -E 'records per leading node|routed to|roll-up and writing' "$WORK/$mode.log" | grep 'done in' | sed 's/^/  /' || true
}

start_executor() { # name
  local p g
  p=$(free_port); g=$(free_port)
  rm -rf "${WORK:?}/$1-work"; mkdir -p "$WORK/$1-work"
  RAYON_NUM_THREADS=$EXEC_THREADS "$BIN" executor --bind-host 127.0.0.1 --port "$p" --grpc-port "$g" \
    --scheduler-host 127.0.0.1 --scheduler-port "$SPORT" --concurrent-tasks "$TASKS" \
    --memory-limit-mb "$EXEC_MEM_MB" ${HOST_SLOTS:+--host-slots "$HOST_SLOTS"} --work-dir "$WORK/$1-work" \
    > "$WORK/$1.log" 2>&1 &
  PIDS+=($!)
  EXEC_PIDS+=($!)
}

executors() { curl -s "http://127.0.0.1:$SPORT/api/executors" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0; }

for mode in $MODES; do
  case $mode in
    local) run_mode local ;;
    standalone) run_mode standalone --standalone ;;
    one|two|four)
      case $mode in one) want=1 ;; two) want=2 ;; four) want=4 ;; esac
      SPORT=$(free_port)
      "$BIN" scheduler --bind-host 127.0.0.1 --port "$SPORT" > "$WORK/scheduler-$mode.log" 2>&1 &
      PIDS+=($!)
      EXEC_PIDS=()
      sleep 2
      for e in $(seq 1 "$want"); do start_executor "$mode-exec-$e"; done
      for _ in $(seq 1 120); do [ "$(executors)" -ge "$want" ] && break; sleep 0.5; done
      [ "$(executors)" -ge "$want" ] || { echo "executors did not register" >&2; exit 1; }
      run_mode "$mode" --cluster "df://127.0.0.1:$SPORT"
      # Peak RSS (VmHWM) and shuffle/spill bytes left in the work directory (Ballista removes a
      # job's files some time after it ends, so this is a lower bound), solver tasks per executor.
      for e in $(seq 1 "$want"); do
        pid=${EXEC_PIDS[$((e - 1))]}
        hwm=$(awk '/VmHWM/ {printf "%.2f", $2 / 1048576}' "/proc/$pid/status" 2>/dev/null || echo "?")
        printf '  %s-exec-%s: peak RSS %s GB, work dir %s, solver tasks: %s, roll-up parts: %s\n' "$mode" "$e" "$hwm" \
          "$(du -sh "$WORK/$mode-exec-$e-work" | cut -f1)" \
          "$(grep -c 'protecting\|solving a subtable\|stratum of' "$WORK/$mode-exec-$e.log" || true)" \
          "$(grep -c 'written: ' "$WORK/$mode-exec-$e.log" || true)"
      done
      stop_all
      ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
done
