#!/usr/bin/env bash
# Configures the bootstrapped rootfs: customize.sh ROOTFS ROOT_UUID
set -euo pipefail
R=$1; ROOTUUID=$2
here=$(cd "$(dirname "$0")" && pwd)

# Config files shipped with the recipe, copied over the rootfs.
cp -a "$here/files/." "$R/"

echo "bureau-desktop" > "$R/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 bureau-desktop\n::1 localhost ip6-localhost ip6-loopback\n' > "$R/etc/hosts"
printf 'UUID=%s / ext4 defaults,errors=remount-ro 0 1\n' "$ROOTUUID" > "$R/etc/fstab"
echo 'LANG=C.UTF-8' > "$R/etc/default/locale"

# Xfce's panel asks on first start whether to use the default layout: ship
# the default as the system-wide configuration so it never asks.
install -D -m644 "$R/etc/xdg/xfce4/panel/default.xml" \
	"$R/etc/xdg/xfce4/xfconf/xfce-perchannel-xml/xfce4-panel.xml"

# Accessibility on by default (docs/accessibility.md): the schema override
# in files/ takes effect once compiled (GNOME_ACCESSIBILITY=1 comes from
# files/etc/X11/Xsession.d/90bureau-a11y and environment.d).
for c in "$R"/usr/lib/*/glib-2.0/glib-compile-schemas; do
	chroot "$R" "${c#"$R"}" /usr/share/glib-2.0/schemas
done

# bureau-agent.service (files/) waits for its binary, which the desktop's
# seed brings at the first boot (files/usr/local/lib/bureau/first-boot).
# bureau-grow-home.service grows /home at the boots cloud-init skips
# (files/usr/local/lib/bureau/cloud-init-gate), bureau-grow-root.service
# the root file system to a new OS disk.
chroot "$R" systemctl enable systemd-networkd.service systemd-resolved.service qemu-guest-agent.service bureau-agent.service bureau-grow-home.service bureau-grow-root.service >/dev/null 2>&1 || true
chroot "$R" systemctl set-default graphical.target
# Work that only slows a boot under emulation and helps no desktop.
for unit in e2scrub_reap.service e2scrub_all.timer apt-daily.timer apt-daily-upgrade.timer \
	man-db.timer fstrim.timer systemd-networkd-wait-online.service; do
	chroot "$R" systemctl disable "$unit" >/dev/null 2>&1 || true
done
chroot "$R" systemctl mask systemd-networkd-wait-online.service >/dev/null 2>&1 || true

# A small initramfs. Debian's MODULES=most packs every storage and file
# system driver (35 MB): under emulation unpacking it took 6 s and loading
# its modules 6 s more, at every boot. A desktop boots from a virtio disk
# with ext4, and its seed is on the VM's IDE CD-ROM (machine "pc"): the
# initramfs needs those drivers, and the rest loads from the root file
# system as before. The CD's (ata_piix, sr_mod, isofs) are there for
# bureau-cloud-init-gate, which reads the seed before cloud-init starts:
# loaded by udev from the root file system, the CD appeared only ~28 s
# into a boot, and the gate waited 13 s for it.
echo MODULES=list > "$R/etc/initramfs-tools/conf.d/bureau"
printf '%s\n' virtio_pci virtio_blk ext4 ata_piix sr_mod isofs >> "$R/etc/initramfs-tools/modules"
mount -t proc proc "$R/proc"
trap 'umount "$R/proc" 2>/dev/null || true' EXIT
chroot "$R" update-initramfs -u -k all >/dev/null
umount "$R/proc"
trap - EXIT

# Bootloader configuration (extlinux, installed by mkdisk.sh).
KVER=$(ls "$R"/boot/vmlinuz-* | sed 's#.*/vmlinuz-##' | sort -V | tail -1)
mkdir -p "$R/boot/extlinux"
cat > "$R/boot/extlinux/extlinux.conf" <<CONF
DEFAULT linux
TIMEOUT 0
PROMPT 0
LABEL linux
  LINUX /boot/vmlinuz-$KVER
  INITRD /boot/initrd.img-$KVER
  APPEND root=UUID=$ROOTUUID ro console=tty0 console=ttyS0,115200n8 quiet
CONF

# Every desktop gets its own identity at first boot.
rm -f "$R"/etc/ssh/ssh_host_*
truncate -s0 "$R/etc/machine-id"
rm -f "$R/var/lib/dbus/machine-id"
chroot "$R" apt-get clean
rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/tmp/* "$R"/var/log/*.log
