#!/usr/bin/env bash
# Builds the debian-12-desktop base image: build.sh OUT.qcow2
# Prints "@@progress <phase> <percent> [detail]" on stdout; everything else
# on stderr. Percents follow where the time went on 2 cores: bootstrap 2-68
# (bootstrap-progress.sh), filesystem 70-99 (mkdisk.sh).
# Writes OUT.qcow2 atomically and leaves nothing behind on failure.
set -euo pipefail
out=${1:?usage: build.sh OUT.qcow2}
here=$(cd "$(dirname "$0")" && pwd)
progress() { echo "@@progress $1 $2"; }
log() { echo "build: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
for tool in mmdebstrap mkfs.ext4 sfdisk extlinux qemu-img losetup; do
	command -v "$tool" >/dev/null || { log "missing $tool (run scripts/host-setup.sh)"; exit 1; }
done
base=${BUREAU_BUILD_DIR:-/var/tmp/bureau-build}
mkdir -p "$base" "$(dirname "$out")"
need_kib=$((8 * 1024 * 1024))
for dir in "$base" "$(dirname "$out")"; do
	free=$(df -Pk "$dir" | awk 'NR==2 {print $4}')
	if [ "$free" -lt "$need_kib" ]; then
		log "not enough free space in $dir: need 8 GiB, have $((free / 1024)) MiB"; exit 1
	fi
done
work=$(mktemp -d "$base/build.XXXXXX")
loopdev=""
monitor=""
cleanup() {
	[ -n "$monitor" ] && { kill "$monitor" 2>/dev/null || true; }
	mountpoint -q "$work/mnt" 2>/dev/null && umount "$work/mnt"
	[ -n "$loopdev" ] && losetup -d "$loopdev" 2>/dev/null
	rm -rf "$work" "$out.partial"
}
trap cleanup EXIT

start=$(date +%s)
progress bootstrap 2
pkgs=$(grep -v '^\s*#' "$here/packages.txt" | grep -v '^\s*$' | paste -sd, -)
mirror=${BUREAU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${BUREAU_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
bash "$here/bootstrap-progress.sh" monitor "$work" &
monitor=$!
hook="bash $(printf %q "$here/bootstrap-progress.sh") hook \"\$1\""
mmdebstrap --variant=apt --include="$pkgs" \
	--extract-hook="$hook" --essential-hook="$hook" \
	--aptopt='APT::Install-Recommends "false"' \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-include=/usr/share/locale/locale.alias' \
	bookworm "$work/rootfs" \
	"deb $mirror bookworm main" "deb $mirror bookworm-updates main" "deb $security bookworm-security main" >&2
kill "$monitor"
wait "$monitor" 2>/dev/null || true
monitor=""
log "bootstrap took $(($(date +%s) - start)) s"
progress customize 68

rootuuid=$(cat /proc/sys/kernel/random/uuid)
"$here/customize.sh" "$work/rootfs" "$rootuuid" >&2
progress filesystem 69

"$here/mkdisk.sh" "$work" "$rootuuid" "$out.partial" 3>&1 >&2
mv "$out.partial" "$out"
progress done 100
log "image $out: $(du -h --apparent-size "$out" | cut -f1) after $(($(date +%s) - start)) s"
