#!/usr/bin/env bash
# Turns WORK/rootfs into a bootable compressed qcow2:
# mkdisk.sh WORK ROOT_UUID OUT.qcow2
# Loop partition nodes are not always created (no udev), so the ext4 is made
# from the directory and written at 1 MiB, and extlinux goes in through an
# offset loop device.
# Progress lines ("@@progress filesystem <percent> <detail>") go to fd 3 when
# the caller opened it.
set -euo pipefail
work=$1; rootuuid=$2; out=$3
progress() { { echo "@@progress filesystem $*" >&3; } 2>/dev/null || true; }
size=${BUREAU_IMAGE_SIZE:-6G}
raw="$work/disk.raw"
truncate -s "$size" "$raw"
printf 'label: dos\nstart=2048, type=83, bootable\n' | sfdisk -q "$raw"
off=$((2048 * 512)); psize=$(($(stat -c %s "$raw") - off))
truncate -s "$psize" "$work/part.raw"
# ^64bit keeps the filesystem readable by extlinux.
progress 70 "making the ext4 file system ($(du -sh "$work/rootfs" | cut -f1))"
mkfs.ext4 -q -F -L rootfs -U "$rootuuid" -O ^64bit -d "$work/rootfs" "$work/part.raw"
dd if="$work/part.raw" of="$raw" bs=1M seek=1 conv=notrunc,sparse status=none
rm -f "$work/part.raw"
progress 76 installing the boot loader
mkdir -p "$work/mnt"
loopdev=$(losetup -f --show -o "$off" --sizelimit "$psize" "$raw")
trap 'mountpoint -q "$work/mnt" && umount "$work/mnt"; losetup -d "$loopdev" 2>/dev/null || true' EXIT
mount "$loopdev" "$work/mnt"
extlinux --install "$work/mnt/boot/extlinux"
sync
umount "$work/mnt"
dd if=/usr/lib/syslinux/mbr/mbr.bin of="$raw" bs=440 count=1 conv=notrunc status=none
# Compression is most of this script's time: qemu-img's own progress
# ("(12.34/100%)\r"), every 5%, maps to 78-99.
progress 78 compressing the disk image
next=5
qemu-img convert -p -f raw -O qcow2 -c "$raw" "$out" | while IFS= read -r -d $'\r' line; do
	[[ $line =~ \(([0-9]+)\.[0-9]+/100%\) ]] || continue
	pct=${BASH_REMATCH[1]}
	[ "$pct" -ge "$next" ] || continue
	next=$((pct + 5))
	progress $((78 + pct * 21 / 100)) "compressing the disk image: $pct%"
done
