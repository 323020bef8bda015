#!/usr/bin/env bash
# Installs the Debian packages the KVM tests, the dashboard's browser test and the deploy/ checks need (a real libvirtd + QEMU + sshd started by the tests,
# seed ISOs built with xorriso/genisoimage). Idempotent: when everything is present it only runs dpkg-query.
# Run as root (CI runs it before the tests). Debian 12 (bookworm).
set -euo pipefail
PKGS=(
  libvirt-daemon-system libvirt-clients   # libvirtd, virtlogd, virsh (qemu+ssh / qemu+libssh transports)
  qemu-system-x86 qemu-utils ovmf         # QEMU (TCG without /dev/kvm), qemu-img, UEFI firmware
  openssh-server openssh-client           # sshd the tests start on 127.0.0.1 inside the sandbox
  xorriso genisoimage openssl                     # NoCloud seed ISOs (either works) and extracting them back
  dnsmasq-base bridge-utils iproute2 iptables
  debootstrap grub-pc-bin grub-efi-amd64-bin mtools dosfstools fdisk dpkg-dev   # the real guest's image (build-guest-image.sh)
  curl                                    # requests through the guests' proxies, inside the sandbox netns
  chromium                                # the dashboard's browser test (test/ui), driven by playwright-core
  jq                                      # docs/crawling.md's curl example (test/service/crawling.test.ts)
  python3-scrapy python3-requests         # clients/python: the Scrapy middleware and the requests example, run by /usr/bin/python3 (test/service/scrapy.test.ts)
  prometheus                              # promtool: checks /metrics scrapes and deploy/ alert rules
  systemd                                 # systemd-analyze verify of deploy/egress.service
  squid                                   # the generated squid.conf with basic auth, run for real (test/integration/squid-auth-real.test.ts)
  redis-server                            # the lease store the service tests start on loopback (test/helpers/redis.ts)
  haproxy                                 # deploy/haproxy.cfg: haproxy -c, and run in front of serve processes (test/helpers/haproxy.ts)
  postgresql-15                           # Pulumi state on PostgreSQL, a throwaway cluster per test (test/helpers/postgres.ts); brings psql
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[install-test-deps] all ${#PKGS[@]} packages present" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "[install-test-deps] missing: ${missing[*]}; run this script as root (apt-get install)" >&2
  exit 1
fi
echo "[install-test-deps] installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
# policy-rc.d 101 keeps the packages' init scripts from starting a host-wide libvirtd/sshd: the tests
# start their own daemons inside a network namespace.
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; created_policy=1
fi
trap '[ $created_policy = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "[install-test-deps] done" >&2
