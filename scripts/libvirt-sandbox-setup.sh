#!/bin/bash
# Test sandbox for the KVM provider kind (adapted from a recipe that worked on Debian 12).
# Bring up a real libvirt (QEMU, TCG - no KVM) + a "dir" storage pool + an sshd on
# 127.0.0.1 that lets root in with a generated ed25519 key, without systemd.
# Debian 12 (libvirt 9.0, QEMU 7.2). Run as root. Stop everything with teardown.sh.
#
#   BASE    where keys, pool, logs, pid files go     (default ${TMPDIR:-/tmp}/libvirt-sandbox)
#   NETNS   network namespace that libvirtd (and so its VMs, bridges, dnsmasq and
#           iptables/ip_forward changes) lives in; "" = host netns (default egress-lv)
#   POOL    storage pool name                        (default egress-test)
#   SSH_PORT                                         (default 2222)
#   CLEAN_BASHRC=1  run sshd in a private mount namespace where /root/.bashrc is an
#           empty file (this machine's root .bashrc runs `pyenv init`, +2 s per SSH
#           session); 0 = leave it                   (default 1)
#   SANDBOX_USER  an id (a test process pid) registered under $BASE/users; teardown with the same id
#           stops the daemons only when no other live user remains (test files may overlap)
#   EGRESS_TEST_DEPS_INSTALLED=1  skip install-test-deps.sh (scripts/test.sh exports it: it ran it already)
# Writes $BASE/env (source it): LIBVIRT_URI_LOCAL, LIBVIRT_URI_LIBSSH, SANDBOX_* ...
# libvirtd's sockets live in /run/libvirt, so there is one sandbox per machine: setups are serialized
# with flock and a second setup reuses the running daemons.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/libvirt-sandbox-lib.sh"
mkdir -p "$BASE"
sandbox_lock
CLEAN_BASHRC=${CLEAN_BASHRC:-1}
t_start=$(date +%s%3N)
log() { echo "[setup +$(( $(date +%s%3N) - t_start ))ms] $*"; }

# 1. packages (only what is missing; quick when all are installed)
if [ "${EGRESS_TEST_DEPS_INSTALLED:-}" != 1 ]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/install-test-deps.sh"
  log "packages ok"
fi

mkdir -p "$BASE"/pool "$BASE"/ssh "$BASE"/log "$BASE"/users /run/sshd
[ -n "${SANDBOX_USER:-}" ] && : > "$BASE/users/$SANDBOX_USER"
chmod 700 "$BASE/ssh"; chmod 755 /run/sshd

# 2. network namespace for libvirtd
RUN=""
if [ -n "$NETNS" ]; then
  ip netns list | grep -w "^$NETNS" >/dev/null || ip netns add "$NETNS"
  ip netns exec "$NETNS" ip link set lo up
  RUN="ip netns exec $NETNS"
fi

# 3. daemons: virtlogd (QEMU log handler) then monolithic libvirtd (bookworm has no virtqemud)
if ! alive "$BASE/virtlogd.pid"; then
  $RUN virtlogd -d -p "$BASE/virtlogd.pid" 9>&-
fi
# Where /dev/kvm exists but only root may open it, libvirt probes QEMU as root (KVM on) and validates
# its capability cache as libvirt-qemu (KVM off), so it re-probes on every define (~45 s each). The
# sandbox runs TCG only: libvirtd gets a private mount namespace with a root-only empty file over
# /dev/kvm, so probe and check agree; its qemu.conf (bound over /etc/libvirt/qemu.conf in that namespace
# only) turns off per-domain /dev namespaces, which cannot replicate a file bound over a device node.
# HIDE_KVM=0 leaves /dev/kvm and qemu.conf alone.
HIDE_KVM=${HIDE_KVM:-1}
if ! alive "$BASE/libvirtd.pid"; then
  # A fresh sandbox starts with an empty pool: volumes a killed test run left (e.g. a half-uploaded base
  # image, which the product rightly refuses to adopt) must not decide the next run. No user is active
  # here: a second setup reuses the running daemons and skips this.
  rm -f "$BASE"/pool/*
  if [ "$HIDE_KVM" = 1 ] && [ -e /dev/kvm ]; then
    install -m 600 /dev/null "$BASE/no-kvm"
    { cat /etc/libvirt/qemu.conf; printf '\n# egress sandbox\nnamespaces = []\n'; } > "$BASE/qemu.conf"
    LIBVIRT_LOG_OUTPUTS="3:file:$BASE/log/libvirtd.log" $RUN unshare -m sh -c "mount --bind '$BASE/no-kvm' /dev/kvm && mount --bind '$BASE/qemu.conf' /etc/libvirt/qemu.conf && exec libvirtd -d -p '$BASE/libvirtd.pid'" 9>&-
  else
    LIBVIRT_LOG_OUTPUTS="3:file:$BASE/log/libvirtd.log" $RUN libvirtd -d -p "$BASE/libvirtd.pid" 9>&-
  fi
fi
for i in $(seq 100); do $V version >/dev/null 2>&1 && break; sleep 0.2; done
$V version >/dev/null || { echo "libvirtd did not answer; log: $BASE/log/libvirtd.log" >&2; tail -5 "$BASE/log/libvirtd.log" >&2 || true; exit 1; }
log "libvirtd up (pid $(cat "$BASE/libvirtd.pid"), netns '${NETNS}')"

# 4. dir storage pool
if ! $V pool-info "$POOL" >/dev/null 2>&1; then
  $V pool-define-as "$POOL" dir --target "$BASE/pool" >/dev/null
  $V pool-build "$POOL" >/dev/null
fi
$V pool-info "$POOL" | grep 'State:.*running' >/dev/null || $V pool-start "$POOL" >/dev/null
log "pool '$POOL' -> $BASE/pool"

# 4b. a libvirt-managed network for real guests: an address on its bridge and DHCP from libvirt's own
# dnsmasq, whose leases `domifaddr --source lease` reads (a plain bridge has none, and `--source arp`
# fails inside the netns with libvirt 9.0: "wrong nlmsg len"). Isolated (no <forward>): guests reach
# only the bridge address, where tests run their origin servers. Transient (net-create): nothing of it
# is left on disk when libvirtd stops.
GUEST_NET=${GUEST_NET:-egress-guests}
GUEST_PREFIX=${GUEST_PREFIX:-192.168.77}
if ! $V net-info "$GUEST_NET" >/dev/null 2>&1; then
  cat > "$BASE/guest-net.xml" <<EOF
<network>
  <name>$GUEST_NET</name>
  <bridge name='egvbr0' stp='off'/>
  <ip address='$GUEST_PREFIX.1' netmask='255.255.255.0'><dhcp><range start='$GUEST_PREFIX.10' end='$GUEST_PREFIX.99'/></dhcp></ip>
</network>
EOF
  $V net-create "$BASE/guest-net.xml" >/dev/null
fi
log "network '$GUEST_NET' ($GUEST_PREFIX.1/24, DHCP)"

# 4c. a route from the host into the guest network, so an `egress serve` on the host probes guests as it
# would on a real LAN: a veth pair (host egvh $LINK_PREFIX.1 <-> netns egvn $LINK_PREFIX.2), forwarding
# inside the netns, and masquerade onto the guest bridge (guests of an isolated network have no default
# route, so they answer the bridge address). Our ACCEPT rules go before libvirt's isolated-network
# REJECTs. Only this namespace's guests become reachable, and only from this machine.
LINK_PREFIX=${LINK_PREFIX:-10.213.77}
ROUTED=""
if [ -n "$NETNS" ]; then
  # A host end whose peer is not in this netns is a leftover of a sandbox that died without its teardown
  # (or of another mount namespace's /run/netns): routing through it reaches nothing. Start over.
  if ip link show egvh >/dev/null 2>&1 && ! $RUN ip link show egvn >/dev/null 2>&1; then
    log "stale veth egvh (its peer is not in netns '$NETNS'): recreating it"
    ip link del egvh
  fi
  if ! ip link show egvh >/dev/null 2>&1; then
    ip link add egvh type veth peer name egvn
    ip link set egvn netns "$NETNS"
    ip addr add "$LINK_PREFIX.1/30" dev egvh
    ip link set egvh up
    $RUN ip addr add "$LINK_PREFIX.2/30" dev egvn
    $RUN ip link set egvn up
  fi
  ip route replace "$GUEST_PREFIX.0/24" via "$LINK_PREFIX.2" dev egvh
  $RUN sysctl -qw net.ipv4.ip_forward=1
  for rule in "-i egvn -o egvbr0 -j ACCEPT" "-i egvbr0 -o egvn -j ACCEPT"; do
    while $RUN iptables -D FORWARD $rule 2>/dev/null; do :; done
    $RUN iptables -I FORWARD 1 $rule
  done
  $RUN iptables -t nat -C POSTROUTING -s "$LINK_PREFIX.0/30" -o egvbr0 -j MASQUERADE 2>/dev/null ||
    $RUN iptables -t nat -A POSTROUTING -s "$LINK_PREFIX.0/30" -o egvbr0 -j MASQUERADE
  # Routed only if both ends are where the route says: the tests that probe guests from the host check it.
  if ip -o addr show dev egvh | grep -F " $LINK_PREFIX.1/30" >/dev/null && $RUN ip -o addr show dev egvn | grep -F " $LINK_PREFIX.2/30" >/dev/null; then ROUTED=1; fi
  log "route $GUEST_PREFIX.0/24 via $LINK_PREFIX.2 (netns '$NETNS', routed=${ROUTED:-no})"
fi

# 5. sshd on 127.0.0.1:$SSH_PORT, root via ed25519 key
S="$BASE/ssh"
[ -f "$S/host_ed25519" ]   || ssh-keygen -q -t ed25519 -N '' -C sandbox-host   -f "$S/host_ed25519"
[ -f "$S/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C sandbox-client -f "$S/client_ed25519"
cp "$S/client_ed25519.pub" "$S/authorized_keys"
cat > "$S/sshd_config" <<EOF
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $S/host_ed25519
PidFile $S/sshd.pid
AuthorizedKeysFile $S/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# keys live under /tmp (mode 1777), which StrictModes would reject
StrictModes no
AllowStreamLocalForwarding yes
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel VERBOSE
EOF
/usr/sbin/sshd -t -f "$S/sshd_config"
if ! alive "$S/sshd.pid"; then
  if [ "$CLEAN_BASHRC" = 1 ] && [ -f /root/.bashrc ]; then
    : > "$S/empty_bashrc"
    unshare -m sh -c "mount --bind '$S/empty_bashrc' /root/.bashrc && exec /usr/sbin/sshd -f '$S/sshd_config' -E '$BASE/log/sshd.log'" 9>&-
  else
    /usr/sbin/sshd -f "$S/sshd_config" -E "$BASE/log/sshd.log" 9>&-
  fi
fi
for i in $(seq 50); do
  ssh-keyscan -p "$SSH_PORT" -t ed25519 127.0.0.1 > "$S/known_hosts.tmp" 2>/dev/null && [ -s "$S/known_hosts.tmp" ] && break
  sleep 0.1
done
mv "$S/known_hosts.tmp" "$S/known_hosts"
log "sshd up (pid $(cat "$S/sshd.pid")) on 127.0.0.1:$SSH_PORT"

# 6. env for tests
K="$S/client_ed25519"; KH="$S/known_hosts"
cat > "$BASE/env" <<EOF
export LIBVIRT_URI_LOCAL='qemu:///system'
export LIBVIRT_URI_LIBSSH='qemu+libssh://root@127.0.0.1:$SSH_PORT/system?keyfile=$K&known_hosts=$KH&sshauth=privkey'
export SANDBOX_SSH_KEY='$K' SANDBOX_KNOWN_HOSTS='$KH' SANDBOX_SSH_PORT='$SSH_PORT'
export SANDBOX_POOL='$POOL' SANDBOX_POOL_DIR='$BASE/pool' SANDBOX_NETNS='$NETNS'
export SANDBOX_GUEST_NETWORK='$GUEST_NET' SANDBOX_GUEST_GATEWAY='$GUEST_PREFIX.1' SANDBOX_GUEST_ROUTED='$ROUTED'
EOF
. "$BASE/env"
for u in "$LIBVIRT_URI_LOCAL" "$LIBVIRT_URI_LIBSSH"; do
  out=$(virsh -q -c "$u" pool-list --name) || { echo "virsh failed: $u" >&2; exit 1; }
  printf '%s\n' "$out" | grep -E "^$POOL[[:space:]]*$" >/dev/null || { echo "pool $POOL not seen via $u" >&2; exit 1; }
done
log "ready: source $BASE/env"
