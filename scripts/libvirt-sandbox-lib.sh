#!/bin/bash
# Shared by libvirt-sandbox-setup.sh and -teardown.sh (sourced, not run): defaults, the lock that
# serializes them, and alive(). See setup.sh for what the variables mean.
BASE=${BASE:-${TMPDIR:-/tmp}/egress-libvirt-sandbox}
NETNS=${NETNS-egress-lv}
POOL=${POOL:-egress-test}
SSH_PORT=${SSH_PORT:-2222}
V="virsh -q -c qemu:///system"

# sandbox_lock: hold $BASE.lock on fd 9 until the script exits (one setup/teardown at a time). Daemons a
# script starts must not inherit it: start them with 9>&-.
sandbox_lock() {
  mkdir -p "$(dirname "$BASE")"
  exec 9>"$BASE.lock"
  flock -w 120 9 || { echo "another sandbox setup/teardown holds $BASE.lock" >&2; exit 1; }
}

# alive <pidfile>: the process runs (a zombie left to a non-reaping pid 1 counts as gone)
alive() { [ -s "$1" ] || return 1; local p; p=$(cat "$1"); [ -r "/proc/$p/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$p/stat"; }
