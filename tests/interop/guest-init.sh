#!/bin/sh
# The peer VM's init: rxe on eth0, then a command agent on the serial
# console. Each line read is run by sh; "__XR_RC=<status>__" follows its
# output, so the harness gets exit codes, not screen text alone.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp /run
for m in crc32_generic virtio virtio_ring virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci \
         failover net_failover virtio_net udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe; do
  modprobe "$m" 2>/dev/null
done
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
ip link set lo up
ip link set eth0 mtu "$(arg xr_mtu)" up
ip addr add "$(arg xr_ip)/24" dev eth0
ip -6 addr add "$(arg xr_ip6)/64" dev eth0 nodad 2>/dev/null
rdma link add rxe0 type rxe netdev eth0
stty -echo 2>/dev/null
echo "__XR_READY__"
while IFS= read -r line; do
  sh -c "$line" </dev/null 2>&1
  echo "__XR_RC=$?__"
done
poweroff -f
