#!/bin/bash
# Undo libvirt-sandbox-setup.sh: remove domains/networks/pool it hosted, stop sshd, libvirtd, virtlogd
# by their pid files, delete the netns. Same variables as setup.sh.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/libvirt-sandbox-lib.sh"
sandbox_lock
if [ -n "${SANDBOX_USER:-}" ]; then
  rm -f "$BASE/users/$SANDBOX_USER"
  for u in "$BASE"/users/*; do
    [ -e "$u" ] || continue
    if kill -0 "$(basename "$u")" 2>/dev/null; then echo "[teardown] still used by pid $(basename "$u"); leaving it up"; exit 0; fi
    rm -f "$u"
  done
fi
stop() {  # stop <pidfile>: SIGTERM, wait up to 10 s
  alive "$1" || return 0
  local p; p=$(cat "$1"); kill "$p"
  for i in $(seq 50); do alive "$1" || break; sleep 0.2; done
  alive "$1" && kill -9 "$p"; rm -f "$1"
}
if alive "$BASE/libvirtd.pid"; then
  for d in $($V list --name); do $V destroy "$d" >/dev/null; done
  for d in $($V list --all --name); do $V undefine --nvram "$d" >/dev/null; done
  # stop networks first: libvirtd leaves their dnsmasq running otherwise
  for n in $($V net-list --name); do $V net-destroy "$n" >/dev/null; done
  $V pool-destroy "$POOL" >/dev/null 2>&1; $V pool-undefine "$POOL" >/dev/null 2>&1
fi
stop "$BASE/ssh/sshd.pid"
stop "$BASE/libvirtd.pid"
stop "$BASE/virtlogd.pid"
if [ -n "$NETNS" ]; then
  ip netns del "$NETNS" 2>/dev/null
  ip link del egvh 2>/dev/null  # gone with its peer in the netns already, unless that was deleted first
fi
echo "[teardown] done"
