#!/usr/bin/env bash
# Prepares a Debian/Ubuntu host for bureau: installs missing packages, makes
# /dev/kvm usable by libvirt's QEMU, and starts virtlogd/libvirtd when they
# are not running (works with and without systemd). Idempotent.
set -euo pipefail

# What bureau itself needs. ffmpeg: recordings; e2fsprogs (debugfs):
# reading backups' files; openssh-client and
# iproute2: remote hosts (SSH) and the desktop network.
PKGS=(qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients libvirt-dev pkg-config
      dnsmasq-base nftables acl mmdebstrap extlinux syslinux-common fdisk e2fsprogs gcc make git curl ca-certificates
      ffmpeg openssh-client iproute2)
# BUREAU_SETUP_TESTS=1 (make test) adds what only the tests need: chromium
# for the browser checks (e2e/browser, driven by node), node and npm,
# python3 for the Python SDK's tests (standard library only), and caddy and
# nginx for the reverse-proxy checks (packaging/proxy; no service is
# started: the test runs them), and Xvfb, the AT-SPI2 bus and GTK 3 for
# Python for the accessibility tree's tests (internal/agent/atspi/atspitest).
if [ "${BUREAU_SETUP_TESTS:-0}" = 1 ]; then
	PKGS+=(chromium caddy nginx-light xvfb at-spi2-core dbus-x11 python3-gi gir1.2-gtk-3.0)
	# Hosts that bring their own node keep it.
	command -v node >/dev/null && command -v npm >/dev/null || PKGS+=(nodejs npm)
	command -v python3 >/dev/null || PKGS+=(python3)
fi
[ "${BUREAU_WITH_POSTGRES:-0}" = 1 ] && PKGS+=(postgresql)

log() { echo "host-setup: $*" >&2; }

if [ "$(id -u)" != 0 ]; then
	log "must run as root (installs packages, starts libvirtd)"; exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing: ${missing[*]}"
	apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
	# The proxies are installed for the tests to run, not to serve: where
	# systemd started the services the packages bring, stop them again.
	if [ -d /run/systemd/system ]; then
		for p in caddy nginx; do
			[[ " ${missing[*]} " == *" $p"* ]] && systemctl disable --now "$p" >/dev/null 2>&1 || true
		done
	fi
fi

# Desktops' QEMU runs as its own user in libvirt's QEMU group (the group of
# /var/lib/libvirt/qemu: libvirt-qemu on Debian, kvm on Ubuntu). That group
# needs /dev/kvm: without access every define takes ~84 s and KVM guests
# cannot start.
if [ -e /dev/kvm ]; then
	chgrp kvm /dev/kvm 2>/dev/null || true
	chmod 660 /dev/kvm
	qgroup=$(stat -c %G /var/lib/libvirt/qemu 2>/dev/null || echo kvm)
	[ "$qgroup" = kvm ] || setfacl -m "g:$qgroup:rw" /dev/kvm
fi

# Density: let the kernel merge identical pages of the desktops (same OS,
# same programs) when KSM is available. The kernel's default pace (100
# pages every 20 ms, 20 MiB/s) needs half an hour to scan twenty desktops
# once, so desktops restored from one template merge nothing for a long
# time: scan faster. Where the kernel has KSM's advisor (6.7+), it sets
# the pace for a full scan every 2 minutes using at most a quarter of a
# CPU; elsewhere, 1000 pages every 20 ms. BUREAU_KSM=0 leaves KSM alone.
ksm=/sys/kernel/mm/ksm
if [ "${BUREAU_KSM:-1}" = 1 ] && [ -w $ksm/run ]; then
	if [ "$(cat $ksm/run)" = 0 ]; then
		log "enabling KSM (kernel same-page merging)"
		echo 1 > $ksm/run
	fi
	echo 1 > $ksm/use_zero_pages 2>/dev/null || true
	if [ -w $ksm/advisor_mode ]; then
		if grep -q '\[none\]' $ksm/advisor_mode; then
			log "KSM: pacing its scan for a full pass every 2 minutes (at most 25% of a CPU)"
			echo 25 > $ksm/advisor_max_cpu
			echo 120 > $ksm/advisor_target_scan_time
			echo scan-time > $ksm/advisor_mode
		fi
	elif [ "$(cat $ksm/pages_to_scan)" -lt 1000 ]; then
		log "KSM: scanning 1000 pages every 20 ms"
		echo 1000 > $ksm/pages_to_scan
		echo 20 > $ksm/sleep_millisecs
	fi
fi

# Sleeping desktops (an idle tier) have their memory pushed out to swap: a
# host without swap gets compressed swap in RAM (zram, up to half of RAM)
# when its kernel offers it. BUREAU_ZRAM=0 leaves swap alone.
if [ "${BUREAU_ZRAM:-1}" = 1 ] && [ "$(wc -l < /proc/swaps)" -le 1 ]; then
	[ -e /sys/block/zram0 ] || modprobe zram 2>/dev/null || true
	if [ -e /sys/block/zram0 ] && [ "$(cat /sys/block/zram0/disksize)" = 0 ]; then
		log "adding compressed swap in RAM (zram) for sleeping desktops"
		if grep -qw lz4 /sys/block/zram0/comp_algorithm; then echo lz4 > /sys/block/zram0/comp_algorithm; fi
		echo "$(( $(awk '/^MemTotal/ {print $2}' /proc/meminfo) / 2 ))K" > /sys/block/zram0/disksize
		{ mkswap /dev/zram0 >/dev/null && swapon -p 100 /dev/zram0; } || log "could not turn on zram swap: desktops nap instead of sleeping"
	fi
fi

if ! pgrep -x virtlogd >/dev/null; then log "starting virtlogd"; virtlogd -d; fi
if ! pgrep -x libvirtd >/dev/null; then log "starting libvirtd"; libvirtd -d; fi
for _ in $(seq 1 50); do
	virsh -c qemu:///system version >/dev/null 2>&1 && exit 0
	sleep 0.2
done
log "libvirtd did not answer on qemu:///system"; exit 1
