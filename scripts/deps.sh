#!/usr/bin/env bash
# Installs the Debian packages xroce needs to build, test and run its demo.
# Idempotent: installs only what is missing. Without root it prints the
# apt-get command instead and fails, so nothing is half-installed.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config   # toolchain
  libisal-dev                        # ICRC fast path (ISA-L CRC-32)
  libcmocka-dev                      # unit tests
  libpcap-dev                        # pcap files (xroce-gen, pcap tap)
  libxdp-dev libbpf-dev              # the AF_XDP link (its XDP filter is built with clang)
  clang libclang-rt-14-dev           # libFuzzer target for the parser
  tshark                             # independent checker: Wireshark's dissector
  python3 python3-scapy              # independent checker: scapy recomputes ICRC
  iproute2 nftables                  # network namespaces and faults for link tests
  iputils-ping                       # the kernel's own traffic beside the XDP link (tests/net/xdp_link.sh)
  libibverbs-dev                     # the drop-in libibverbs builds against the system's verbs.h
  ibverbs-utils perftest             # unmodified programs the drop-in libibverbs is tested with
)

# `deps.sh interop`: also the peer VM of tests/interop (qemu, the kernel's
# rxe comes from linux-image-amd64 fetched at image build, rdma-core, perftest).
if [ "${1:-}" = interop ]; then
  PKGS+=(qemu-system-x86 busybox-static cpio kmod xz-utils perftest ibverbs-utils ibverbs-providers rdma-core ethtool libibverbs-dev)
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing packages: ${missing[*]}" >&2
  echo "deps.sh: run as root:  apt-get update && $cmd" >&2
  exit 1
fi

echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when an install fails on stale ones.
if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
