#!/usr/bin/env bash
# Installs what building and testing sdcflow needs on a fresh Debian machine:
# cmake + libclang (highs-sys builds HiGHS with cmake and runs bindgen), moto (a loopback S3 API
# for the S3 tests) and cargo-nextest. Each step is skipped when already satisfied.
set -euo pipefail

need_apt=()
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
# bindgen loads `libclang.so` or `libclang-<version>.so`; `libclang-cpp.so` (present on many
# machines without libclang-dev) is a different library and does not count.
has_libclang() {
  local f
  for f in /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
           /usr/lib/*-linux-gnu/libclang.so* /usr/lib/*-linux-gnu/libclang-[0-9]*.so*; do
    [ -e "$f" ] && return 0
  done
  return 1
}
has_libclang || need_apt+=(libclang-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ "${1:-}" != "--no-python" ]; then
  if ! command -v moto_server >/dev/null 2>&1 || ! python3 -c "import boto3" >/dev/null 2>&1; then
    echo "setup: installing moto[server] (loopback S3 for tests)"
    python3 -m pip install -q "moto[server]"
  fi
  if ! python3 -c "import kubernetes_validate" >/dev/null 2>&1; then
    echo "setup: installing kubernetes-validate (offline Kubernetes schema checks)"
    python3 -m pip install -q "kubernetes-validate==1.37.0"
  fi
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "setup: installing cargo-nextest"
  cargo install cargo-nextest --locked
fi
