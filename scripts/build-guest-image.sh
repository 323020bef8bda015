#!/usr/bin/env bash
# Builds, offline from Debian's apt mirror, the bookworm guest image the real-guest KVM test boots, and
# caches it machine-wide keyed by this recipe's hash: later runs print the cached path and build nothing.
#
#   bash scripts/build-guest-image.sh        # prints the qcow2 path on stdout (log on stderr)
#
# The image (one GPT disk that boots with BIOS and with UEFI):
#   - debootstrap minbase + linux-image-cloud-amd64, cloud-init (NoCloud only), squid (Debian's default
#     config: only user-data configures it), ifupdown + isc-dhcp-client;
#   - qemu-guest-agent NOT installed: its .deb and the dependencies the image lacks sit in a local apt
#     repository (/opt/egress-apt, a trusted `file:` source, the only apt source), so only the product's
#     vendor-data script can install and start it, offline. (Debian starts an installed agent from udev,
#     which would prove nothing about that script.)
# Traps from ../shared/reference/real-guest: debootstrap ignores virtual packages (python3-cffi-backend
# listed by hand, or cloud-init stays unconfigured); grub-bios-setup cannot see loop partitions here, so
# bios-embed.py writes the BIOS boot code; no loop devices or mounts at all (mkfs.ext4 -d, mtools).
#
#   EGRESS_GUEST_CACHE  cache directory            (default /var/cache/egress-guest)
#   EGRESS_GUEST_MIRROR Debian mirror              (default: the host's apt mirror, else deb.debian.org)
# Needs root (debootstrap, chroot). Concurrent callers wait for one build (flock).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE=${EGRESS_GUEST_CACHE:-/var/cache/egress-guest}
SUITE=bookworm
INCLUDE=linux-image-cloud-amd64,systemd-sysv,udev,cloud-init,python3-cffi-backend,squid,ifupdown,isc-dhcp-client,netbase,iproute2,curl,initramfs-tools
HOST_PKGS=(debootstrap grub-pc-bin grub-efi-amd64-bin mtools dosfstools fdisk dpkg-dev qemu-utils e2fsprogs)
log() { printf '[guest-image] %s\n' "$*" >&2; }
t0=$(date +%s%3N); since() { local d=$(( $(date +%s%3N) - $1 )); echo "$((d / 1000)).$((d % 1000 / 100))"; }

# The key: this script and its helper. A change to either is a new image; old ones stay until removed.
HASH=$(cat "${BASH_SOURCE[0]}" "$HERE/guest-image/bios-embed.py" | sha256sum | cut -c1-16)
OUT="$CACHE/$HASH.qcow2"
mkdir -p "$CACHE"
exec 8>"$CACHE/.lock"
flock -w 1800 8 || { log "another build holds $CACHE/.lock for 30 min"; exit 1; }
if [ -s "$OUT" ]; then
  log "cached: $OUT ($(since "$t0") s)"
  echo "$OUT"
  exit 0
fi
[ "$(id -u)" = 0 ] || { log "building the guest image needs root (debootstrap, chroot); run: sudo bash $0"; exit 1; }

missing=()
for p in "${HOST_PKGS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing host packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
MIRROR=${EGRESS_GUEST_MIRROR:-$(sed -n 's/^URIs: *\(\S*debian\)\/\?$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

W=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$W"' EXIT
R=$W/rootfs

# 1. root file system
T=$(date +%s%3N)
mkdir -p "$CACHE/debs"
debootstrap --variant=minbase --cache-dir="$CACHE/debs" --include="$INCLUDE" "$SUITE" "$R" "$MIRROR" > "$W/debootstrap.log" 2>&1 \
  || { tail -20 "$W/debootstrap.log" >&2; exit 1; }
log "debootstrap $(since "$T") s"

echo localhost > "$R/etc/hostname"
echo 'LABEL=cloudroot / ext4 defaults,errors=remount-ro 0 1' > "$R/etc/fstab"
cat > "$R/etc/cloud/cloud.cfg.d/99-egress-image.cfg" <<'F'
datasource_list: [ NoCloud, None ]
locale: C.UTF-8
ssh_genkeytypes: []
F
: > "$R/etc/machine-id"; rm -f "$R/var/lib/dbus/machine-id"
# fewer things competing for the CPU during a TCG boot
for t in apt-daily-upgrade apt-daily dpkg-db-backup e2scrub_all fstrim logrotate; do rm -f "$R/etc/systemd/system/timers.target.wants/$t.timer"; done
rm -f "$R/etc/systemd/system/multi-user.target.wants/e2scrub_reap.service"

# 2. qemu-guest-agent in a local apt repository, not installed
T=$(date +%s%3N)
cp /etc/resolv.conf "$R/etc/resolv.conf"
echo "deb $MIRROR $SUITE main" > "$R/etc/apt/sources.list"
chroot "$R" apt-get -qq update
mkdir -p "$R/opt/egress-apt/partial"
chroot "$R" apt-get -qq -y --no-install-recommends --download-only -o Dir::Cache::archives=/opt/egress-apt install qemu-guest-agent >/dev/null
rm -rf "$R/opt/egress-apt/partial" "$R/opt/egress-apt/lock"
(cd "$R/opt/egress-apt" && dpkg-scanpackages -m . 2>/dev/null > Packages)
echo 'deb [trusted=yes] file:/opt/egress-apt ./' > "$R/etc/apt/sources.list"
rm -rf "$R/var/lib/apt/lists/"*
chroot "$R" apt-get -qq update
chroot "$R" apt-get -s -qq install qemu-guest-agent >/dev/null \
  || { log "the local repository cannot install qemu-guest-agent offline"; exit 1; }
! chroot "$R" dpkg -s qemu-guest-agent >/dev/null 2>&1 || { log "qemu-guest-agent must not be installed in the image"; exit 1; }
chroot "$R" dpkg -s squid cloud-init >/dev/null
: > "$R/etc/resolv.conf"
log "local apt repository: $(ls "$R/opt/egress-apt" | grep -c '\.deb$') .debs in $(since "$T") s"
rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/usr/share/doc/* "$R"/usr/share/man/*
find "$R/usr/share/locale" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +

# 3. disk: GPT with a BIOS boot partition (grub i386-pc core), an ESP (standalone grub) and ext4 root
T=$(date +%s%3N)
BB_MB=1 ESP_MB=62 ROOT_MB=1280
cat > "$W/grub.cfg" <<'G'
set timeout=0
search --no-floppy --label cloudroot --set root
linux /vmlinuz root=LABEL=cloudroot ro console=tty0 console=ttyS0,115200
initrd /initrd.img
boot
G
grub-mkstandalone -O x86_64-efi --modules="part_gpt ext2 search search_label linux normal" \
  --locales= --fonts= --themes= -o "$W/BOOTX64.EFI" "boot/grub/grub.cfg=$W/grub.cfg"
mkdir -p "$R/boot/grub/i386-pc"
cp /usr/lib/grub/i386-pc/*.mod /usr/lib/grub/i386-pc/*.lst "$R/boot/grub/i386-pc/"
cp "$W/grub.cfg" "$R/boot/grub/grub.cfg"
printf 'search --no-floppy --label cloudroot --set root\nset prefix=($root)/boot/grub\n' > "$W/embed.cfg"
grub-mkimage -O i386-pc -o "$W/core.img" -c "$W/embed.cfg" -p /boot/grub biosdisk part_gpt ext2 search search_label normal configfile linux
mkfs.vfat -C -n ESP "$W/esp.img" $((ESP_MB * 1024)) >/dev/null
mmd -i "$W/esp.img" ::/EFI ::/EFI/BOOT
mcopy -i "$W/esp.img" "$W/BOOTX64.EFI" ::/EFI/BOOT/BOOTX64.EFI
mkfs.ext4 -q -L cloudroot -d "$R" "$W/root.img" ${ROOT_MB}M
truncate -s $((1 + BB_MB + ESP_MB + ROOT_MB + 1))M "$W/disk.raw"
sfdisk -q "$W/disk.raw" <<S
label: gpt
start=1MiB, size=${BB_MB}MiB, type=21686148-6E6F-7744-6F63-6E6F69736B21, name=bios
start=$((1 + BB_MB))MiB, size=${ESP_MB}MiB, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name=esp
start=$((1 + BB_MB + ESP_MB))MiB, size=${ROOT_MB}MiB, type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709, name=root
S
dd if="$W/esp.img" of="$W/disk.raw" bs=1M seek=$((1 + BB_MB)) conv=notrunc,sparse status=none
dd if="$W/root.img" of="$W/disk.raw" bs=1M seek=$((1 + BB_MB + ESP_MB)) conv=notrunc,sparse status=none
python3 "$HERE/guest-image/bios-embed.py" "$W/disk.raw" "$W/core.img" /usr/lib/grub/i386-pc/boot.img 2048 >&2
qemu-img convert -O qcow2 "$W/disk.raw" "$W/out.qcow2"
chmod 644 "$W/out.qcow2"
mv "$W/out.qcow2" "$OUT"   # atomic: a cached file is always complete
log "disk $(since "$T") s; $OUT $(du -h "$OUT" | cut -f1); total $(since "$t0") s"
echo "$OUT"
