#!/usr/bin/env bash
# Builds the peer VM from Debian packages only: the kernel that ships
# rdma_rxe (linux-image-amd64, not the cloud flavour), busybox-static,
# rdma-core with the rxe provider, perftest and ibverbs-utils. The image is
# cached under $CACHE and rebuilt when an input changes (the package
# versions and the files of this directory).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${CACHE:?}
mkdir -p "$CACHE"
for p in qemu-system-x86 busybox-static cpio kmod perftest ibverbs-utils ibverbs-providers rdma-core; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "FAIL: package $p is missing (scripts/deps.sh installs it)"; exit 1; }
done
kernel_pkg() { apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -1; }
kpkg=$(kernel_pkg)
# Package lists may be missing or stale on a fresh machine: refresh once.
[ -n "$kpkg" ] || { apt-get update >/dev/null 2>&1; kpkg=$(kernel_pkg); }
[ -n "$kpkg" ] || { echo "FAIL: cannot tell which kernel linux-image-amd64 means (apt-get update failed?)"; exit 1; }
# conf_agent (the packet scripts' device side on rxe, tests/conformance/) is built here, on the
# host, against libibverbs-dev: the image carries rdma-core's libraries already.
dpkg-query -W -f='${Status}' libibverbs-dev 2>/dev/null | grep -q "install ok installed" ||
  { echo "FAIL: package libibverbs-dev is missing (scripts/deps.sh interop installs it)"; exit 1; }
key=$( { echo "$kpkg"; dpkg-query -W perftest rdma-core ibverbs-providers busybox-static libibverbs-dev;
         cat "$here"/guest-init.sh "$here"/build_image.sh "$here"/conf_agent.c "$here"/mcast_join.c; } | sha256sum | cut -c1-16)
if [ -f "$CACHE/$key/initrd.gz" ] && [ -f "$CACHE/$key/vmlinuz" ]; then
  echo "$CACHE/$key"; exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "$kpkg" >/dev/null 2>&1) ||
  { apt-get update >/dev/null 2>&1; kpkg=$(kernel_pkg); (cd "$work" && apt-get download "$kpkg" >/dev/null 2>&1); } ||
  { echo "FAIL: apt-get download $kpkg (the peer VM's kernel)"; exit 1; }
dpkg -x "$work"/linux-image-*.deb "$work/k"
kver=$(ls "$work/k/lib/modules")
R=$work/root
mkdir -p "$R/usr/bin"
cc -O2 -Wall -Wextra -Werror "$here/conf_agent.c" -libverbs -o "$R/usr/bin/conf_agent" ||
  { echo "FAIL: cannot build conf_agent"; exit 1; }
cc -O2 -Wall -Wextra -Werror "$here/mcast_join.c" -o "$R/usr/bin/mcast_join" ||
  { echo "FAIL: cannot build mcast_join"; exit 1; }
mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,tmp,run,lib,lib64,usr/lib,usr/bin}
cp /bin/busybox "$R/bin/busybox"
for a in sh mount cat echo ls sleep mkdir ps kill insmod modprobe sed grep awk seq wc head tail \
         env true false date uname timeout stty poweroff cut tr; do ln -sf busybox "$R/bin/$a"; done
for m in crypto/crc32_generic net/ipv4/udp_tunnel net/ipv6/ip6_udp_tunnel drivers/infiniband/core/ib_core \
         drivers/infiniband/core/ib_uverbs drivers/infiniband/sw/rxe/rdma_rxe drivers/virtio/virtio \
         drivers/virtio/virtio_ring drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci_legacy_dev \
         drivers/virtio/virtio_pci net/core/failover drivers/net/net_failover drivers/net/virtio_net; do
  src=$(ls "$work/k/lib/modules/$kver/kernel/$m".ko* 2>/dev/null | head -1)
  [ -n "$src" ] || { echo "note: module $m not found (built in?)"; continue; }
  dst=$R/lib/modules/$kver/kernel/$m.ko
  mkdir -p "$(dirname "$dst")"
  case $src in *.xz) xz -dc "$src" > "$dst";; *) cp "$src" "$dst";; esac
done
cp "$work/k/lib/modules/$kver"/modules.{order,builtin} "$R/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$R" "$kver"
bins="/usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw /usr/bin/ib_atomic_bw /usr/bin/ib_write_lat
      /usr/bin/ib_read_lat /usr/bin/ib_send_lat /usr/bin/ib_atomic_lat /usr/bin/ibv_rc_pingpong /usr/bin/ibv_devinfo /usr/bin/rdma /sbin/ip"
prov=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
for b in $bins; do cp -L "$b" "$R/usr/bin/"; done
mkdir -p "$R/usr/lib/x86_64-linux-gnu/libibverbs" "$R/etc/libibverbs.d"
cp "$prov" "$R/usr/lib/x86_64-linux-gnu/libibverbs/"
cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
for f in $bins $prov "$R/usr/bin/conf_agent" "$R/usr/bin/mcast_join"; do ldd "$f" 2>/dev/null | awk '/=>/{print $3} /ld-linux/{print $1}'; done | sort -u |
  while read -r l; do [ -f "$l" ] && mkdir -p "$R$(dirname "$l")" && cp -L "$l" "$R$l"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"
echo "127.0.0.1 localhost" > "$R/etc/hosts"
cp "$here/guest-init.sh" "$R/init"
chmod +x "$R/init"
mkdir -p "$CACHE/$key"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$CACHE/$key/initrd.gz"
cp "$work/k/boot/vmlinuz-$kver" "$CACHE/$key/vmlinuz"
echo "$CACHE/$key"
