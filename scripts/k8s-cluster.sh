#!/usr/bin/env bash
# A throwaway Kubernetes control plane on 127.0.0.1 for egress's tests: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok (one simulated node; pods get a simulated Ready status),
# on free ports, with a kubeconfig. Binaries come from scripts/build-k8s.sh (built once per machine).
#
#   k8s-cluster.sh start <dir> [--owner <pid>]   start; prints <dir>/cluster.env (KUBECONFIG=…, tokens)
#   k8s-cluster.sh stop <dir>                    stop; leaves no process behind
#
# Every process runs in one process group led by a guard. The guard tears the group down when one of the
# parts dies or when the owner process (--owner, e.g. a test runner) is gone, so a killed test harness
# never leaves etcd running. `start` also stops a cluster still running in <dir>, and any cluster
# registered in $TMPDIR/egress-k8s-clusters whose owner is dead.
#
# kubeconfig contexts: `admin` (system:masters, current) and `nobody` (a valid token with no RBAC rights).
set -euo pipefail
SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
REG="${TMPDIR:-/tmp}/egress-k8s-clusters"
log() { printf '[k8s-cluster] %s\n' "$*" >&2; }
die() { printf '[k8s-cluster] error: %s\n' "$*" >&2; exit 1; }

group_alive() { kill -0 -- "-$1" 2>/dev/null; }

# stop_group <pgid>: TERM, up to 10 s to exit, then KILL.
stop_group() {
  local g="$1" i
  group_alive "$g" || return 0
  kill -TERM -- "-$g" 2>/dev/null || true
  for i in $(seq 1 100); do group_alive "$g" || return 0; sleep 0.1; done
  log "process group $g ignored SIGTERM for 10 s; killing it"
  kill -KILL -- "-$g" 2>/dev/null || true
  for i in $(seq 1 50); do group_alive "$g" || return 0; sleep 0.1; done
  die "process group $g survived SIGKILL"
}

stop_dir() {
  local dir="$1" g
  [ -f "$dir/pgid" ] || return 0
  g="$(cat "$dir/pgid")"
  [ -n "$g" ] && stop_group "$g"
  rm -f "$dir/pgid" "$REG/$g"
}

# Clusters whose owner died while their guard was also killed (SIGKILL to the whole tree).
sweep_stale() {
  local f g owner
  mkdir -p "$REG"
  for f in "$REG"/*; do
    [ -f "$f" ] || continue
    g="$(basename "$f")"; owner="$(cut -d' ' -f1 "$f")"
    if ! group_alive "$g"; then rm -f "$f"
    elif [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then
      log "stopping stale cluster (group $g, owner $owner gone, dir $(cut -d' ' -f2 "$f"))"
      stop_group "$g"; rm -f "$f"
    fi
  done
}

free_ports() { # prints N free loopback ports (held open together so they differ)
  node -e '
    const net = require("net"); const n = Number(process.argv[1]); const s = [];
    const next = () => { if (s.length === n) { console.log(s.map((x) => x.address().port).join(" ")); s.forEach((x) => x.close()); return; }
      const x = net.createServer(); x.listen(0, "127.0.0.1", () => { s.push(x); next(); }); };
    next();' "$1"
}

write_pki() {
  local p="$1/pki"
  mkdir -p "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$p/serving.key" -out "$p/serving.crt" 2>/dev/null
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  ADMIN_TOKEN="$(openssl rand -hex 16)"; NOBODY_TOKEN="$(openssl rand -hex 16)"
  printf '%s,egress-admin,uid-admin,"system:masters"\n%s,egress-nobody,uid-nobody\n' "$ADMIN_TOKEN" "$NOBODY_TOKEN" > "$p/tokens.csv"
  chmod 600 "$p"/*
}

write_kubeconfig() { # <file> <server> <ca file>
  local ca; ca="$(base64 -w0 < "$3")"
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: egress-test
  cluster: {server: "$2", certificate-authority-data: "$ca"}
users:
- name: admin
  user: {token: "$ADMIN_TOKEN"}
- name: nobody
  user: {token: "$NOBODY_TOKEN"}
contexts:
- name: admin
  context: {cluster: egress-test, user: admin}
- name: nobody
  context: {cluster: egress-test, user: nobody}
EOF
  chmod 600 "$1"
}

# The guard: runs as the leader of a new session (setsid), starts every part in its group, then waits.
run_guard() {
  local dir="$1" owner="$2" bin="$3" stages="$4"
  # shellcheck source=/dev/null
  . "$dir/cluster.env"
  ps -o pgid= $$ | tr -d ' ' > "$dir/pgid.tmp"
  local L="$dir/logs"
  pids=()
  # TERM every part, KILL what is left after 10 s. `stop` signals the whole group; the guard ends it too
  # when its owner or a part dies.
  teardown() {
    trap - TERM INT
    kill -TERM "${pids[@]}" 2>/dev/null || true
    ( for _ in $(seq 1 100); do sleep 0.1; done; kill -KILL "${pids[@]}" 2>/dev/null ) & local killer=$!
    wait "${pids[@]}" 2>/dev/null || true
    kill "$killer" 2>/dev/null || true
    exit 0
  }
  trap teardown TERM INT
  mkdir -p "$L"
  "$bin/etcd" --data-dir "$dir/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" >"$L/etcd.log" 2>&1 & pids+=($!)
  "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 \
    --advertise-address 127.0.0.1 --secure-port "$API_PORT" --tls-cert-file "$dir/pki/serving.crt" \
    --tls-private-key-file "$dir/pki/serving.key" --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$dir/pki/sa.pub" --service-account-signing-key-file "$dir/pki/sa.key" \
    --token-auth-file "$dir/pki/tokens.csv" --authorization-mode RBAC --service-cluster-ip-range 10.96.0.0/16 \
    --endpoint-reconciler-type none --cert-dir "$dir/kas" >"$L/kube-apiserver.log" 2>&1 & pids+=($!)
  # The others need the API; they retry on their own until it answers.
  # garbagecollector: the provider deletes with Foreground propagation, and only the GC removes the
  # foregroundDeletion finalizer (without it every delete hangs). namespace: namespace deletion.
  # deployment/replicaset/serviceaccount/endpoint(slice): Deployments roll out and Services find pods.
  "$bin/kube-controller-manager" --kubeconfig "$KUBECONFIG" --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --leader-elect=false --controllers garbagecollector,namespace,deployment,replicaset,serviceaccount,endpoint,endpointslice \
    --cert-dir "$dir/kcm" >"$L/kube-controller-manager.log" 2>&1 & pids+=($!)
  "$bin/kube-scheduler" --kubeconfig "$KUBECONFIG" --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" \
    --leader-elect=false >"$L/kube-scheduler.log" 2>&1 & pids+=($!)
  local cfg=() f
  for f in "$stages"/*.yaml; do cfg+=(--config "$f"); done
  HOME="$dir" "$bin/kwok" --kubeconfig "$KUBECONFIG" "${cfg[@]}" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --cidr 10.244.0.0/16 --node-ip 10.240.0.1 \
    >"$L/kwok.log" 2>&1 & pids+=($!)
  mv "$dir/pgid.tmp" "$dir/pgid"
  while sleep 1; do
    if [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then
      echo "owner $owner is gone: stopping the cluster" >>"$L/guard.log"; break
    fi
    local p
    for p in "${pids[@]}"; do
      kill -0 "$p" 2>/dev/null || { echo "part $p exited: stopping the cluster" >>"$L/guard.log"; break 2; }
    done
  done
  teardown
}

wait_for() { # <what> <seconds> <command...>
  local what="$1" end=$((SECONDS + $2)) t="$2"; shift 2
  while [ "$SECONDS" -lt "$end" ]; do
    "$@" >/dev/null 2>&1 && return 0
    group_alive "$(cat "$DIR/pgid" 2>/dev/null || echo 0)" || break
    sleep 0.2
  done
  log "$what not ready after ${t}s; last log lines:"
  for f in "$DIR"/logs/*.log; do echo "== $f" >&2; tail -5 "$f" >&2; done
  stop_dir "$DIR"
  die "$what did not become ready"
}

api() { curl -sf --max-time 10 --cacert "$DIR/pki/serving.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "https://127.0.0.1:$API_PORT$1" "${@:2}"; }

start() {
  local owner="" start_s bin
  [ "${1:-}" = "--owner" ] && { owner="${2:?--owner needs a pid}"; kill -0 "$owner" || die "owner $owner is not running"; }
  start_s=$(date +%s.%N)
  stop_dir "$DIR"
  sweep_stale
  bin="${EGRESS_K8S_BIN:-$(bash "$(dirname "$SELF")/build-k8s.sh")}"
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do [ -x "$bin/$b" ] || die "$bin/$b is missing"; done
  rm -rf "${DIR:?}"/{etcd,kas,kcm,logs,pki,kubeconfig,cluster.env}
  mkdir -p "$DIR"
  write_pki "$DIR"
  read -r ETCD_PORT ETCD_PEER_PORT API_PORT KCM_PORT SCHED_PORT <<<"$(free_ports 5)"
  write_kubeconfig "$DIR/kubeconfig" "https://127.0.0.1:$API_PORT" "$DIR/pki/serving.crt"
  cat > "$DIR/cluster.env" <<EOF
KUBECONFIG=$DIR/kubeconfig
SERVER=https://127.0.0.1:$API_PORT
ADMIN_TOKEN=$ADMIN_TOKEN
NOBODY_TOKEN=$NOBODY_TOKEN
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
API_PORT=$API_PORT
KCM_PORT=$KCM_PORT
SCHED_PORT=$SCHED_PORT
BIN=$bin
EOF
  chmod 600 "$DIR/cluster.env"
  setsid bash "$SELF" _guard "$DIR" "$owner" "$bin" "$(dirname "$bin")/kwok-stages" </dev/null >/dev/null 2>&1 &
  local i
  for i in $(seq 1 50); do [ -f "$DIR/pgid" ] && break; sleep 0.1; done
  [ -f "$DIR/pgid" ] || die "the cluster guard did not start"
  mkdir -p "$REG"; echo "$owner $DIR" > "$REG/$(cat "$DIR/pgid")"
  wait_for kube-apiserver 60 api /readyz
  wait_for kube-controller-manager 30 curl -sfk --max-time 5 "https://127.0.0.1:$KCM_PORT/healthz"
  wait_for kube-scheduler 30 curl -sfk --max-time 5 "https://127.0.0.1:$SCHED_PORT/healthz"
  # One simulated node; kwok gives it a Ready status and runs the "fast" pod stages for its pods. It
  # takes 2,500 pods (a real node takes 110): the fleet-size benches put 1,000 members and their surge on it.
  # Its CPU and memory fit 2,500 pods at the kind's default requests (50m, 64Mi): with 32 CPUs the
  # scheduler left every pod after the 640th Pending (Insufficient cpu).
  api /api/v1/nodes -X POST -H 'Content-Type: application/json' -d '{"apiVersion":"v1","kind":"Node",
    "metadata":{"name":"kwok-node-0","annotations":{"kwok.x-k8s.io/node":"fake"},
      "labels":{"kubernetes.io/hostname":"kwok-node-0","kubernetes.io/os":"linux","type":"kwok"}},
    "status":{"allocatable":{"cpu":"128","memory":"256Gi","pods":"2500"},"capacity":{"cpu":"128","memory":"256Gi","pods":"2500"}}}' \
    >/dev/null || die "creating the kwok node failed"
  node_ready() { api /api/v1/nodes/kwok-node-0 | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'; }
  wait_for "the kwok node" 30 node_ready
  # The API adds node.kubernetes.io/not-ready to a new node (TaintNodesByCondition); the node lifecycle
  # controller that would lift it is not run (it would also evict: kwok sends no heartbeats).
  api /api/v1/nodes/kwok-node-0 -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"taints":null}}' \
    >/dev/null || die "untainting the kwok node failed"
  log "ready in $(awk -v a="$start_s" -v b="$(date +%s.%N)" "BEGIN{printf \"%.1f\", b-a}")s (group $(cat "$DIR/pgid"), API https://127.0.0.1:$API_PORT)"
  echo "$DIR/cluster.env"
}

cmd="${1:-}"; DIR="${2:-}"
case "$cmd" in
  start) [ -n "$DIR" ] || die "usage: $0 start <dir> [--owner <pid>]"; mkdir -p "$DIR"; DIR="$(cd "$DIR" && pwd)"; start "${@:3}" ;;
  stop) [ -n "$DIR" ] || die "usage: $0 stop <dir>"; [ -d "$DIR" ] || exit 0; DIR="$(cd "$DIR" && pwd)"; stop_dir "$DIR"; log "stopped" ;;
  _guard) run_guard "$2" "$3" "$4" "$5" ;;
  *) die "usage: $0 start <dir> [--owner <pid>] | stop <dir>" ;;
esac
