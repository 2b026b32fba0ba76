#!/usr/bin/env bash
# Installs what libmrail needs to build and test on Debian 12 (idempotent:
# does nothing when everything is already there).
set -euo pipefail
pkgs=(build-essential pkg-config meson ninja-build libhwloc-dev libfabric-dev libfabric-bin
      libibverbs-dev iproute2 python3 libpmix-dev openmpi-bin libopenmpi-dev
      libudev-dev # libudev-dev: hwloc's `pkg-config --static --libs` names -ludev
      clang libclang-rt-14-dev # the libFuzzer pass (scripts/fuzz.sh)
      libbpf-dev bpftool # the SDN eBPF tagger (mpi-binding/sdn)
      openvswitch-switch) # the SDN fat-tree test bed (userspace datapath)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
