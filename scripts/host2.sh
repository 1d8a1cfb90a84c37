#!/usr/bin/env bash
# Test only: runs a second, independent libvirtd ("host2") on this machine for
# multi-host tests (docs/research/multi-host.md §1), on
# qemu+tcp://127.0.0.1:PORT/system without authentication. Its paths are
# compile-time, so it runs in a private mount namespace with DIR's subdirs
# bound over /etc/libvirt (empty: no default or bureau network), /run/libvirt,
# /var/lib/libvirt, /var/log/libvirt, /var/cache/libvirt and
# /var/lib/bureau/desktops (separate, as on a remote host; images/ and
# templates/ stay shared). Inside it, host1 is at
# qemu+unix:///system?socket=DIR/host1-run/libvirt-sock. Root only.
#   scripts/host2.sh start [DIR] [PORT]   starts it if needed, prints the URI
#   scripts/host2.sh stop [DIR]           destroys its domains and networks, stops it
#   scripts/host2.sh status [DIR]         prints the URI if it answers, else exits 1
# DIR: $BUREAU_HOST2_DIR or /var/tmp/bureau-host2; PORT: $BUREAU_HOST2_PORT or
# 16510 (stop and status use the port saved by start). Log: DIR/log/libvirtd.log.
set -euo pipefail

cmd=${1:-}
dir=${2:-${BUREAU_HOST2_DIR:-/var/tmp/bureau-host2}}
port=${3:-${BUREAU_HOST2_PORT:-16510}}
log() { echo "host2: $*" >&2; }
die() { log "$*"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
case $cmd in start | stop | status) ;; *) die "usage: $0 start|stop|status [DIR] [PORT]" ;; esac

# running PID: PID exists and is not a zombie (PID 1 here reaps lazily).
running() { local s; s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ "$s" != Z ]; }
# pid: host2's libvirtd, if running: a libvirtd outside our mount namespace, so
# never the system daemon even if a stale pid file's PID was reused.
pid=$(cat "$dir/libvirtd.pid" 2>/dev/null || true)
if ! { [ -n "$pid" ] && running "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = libvirtd ] &&
	[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]; }; then pid=; fi
# A running host2 keeps the port it was started with.
if [ "$cmd" != start ] || [ -n "$pid" ]; then port=$(cat "$dir/port" 2>/dev/null || echo "$port"); fi
if ! [[ $port =~ ^[0-9]{1,5}$ ]] || [ "$port" -gt 65535 ]; then die "bad port: $port"; fi
uri=qemu+tcp://127.0.0.1:$port/system
answers() { timeout 10 virsh -q -c "$uri" uri >/dev/null 2>&1; }
# hv ARGS: virsh on host2 only (never the system daemon's URI).
hv() { timeout 60 virsh -q -c "$uri" "$@"; }

# wait_up PID: waits up to 20 s for host2 to answer; on failure shows its logs.
wait_up() {
	local end=$((SECONDS + 20))
	until answers && running "$1"; do
		if ! running "$1" || [ $SECONDS -ge $end ]; then
			log "libvirtd (pid $1) does not answer on $uri; last output and log lines:"
			tail -n 20 "$dir/out" "$dir/log/libvirtd.log" >&2 2>/dev/null || true
			return 1
		fi
		sleep 0.3
	done
}

start() {
	if [ -n "$pid" ]; then wait_up "$pid" && echo "$uri"; return; fi
	# Else another daemon's answer there would pass for ours.
	[ -z "$(ss -Hltn "sport = :$port")" ] || die "port $port is already in use"
	mkdir -p "$dir"/{etc,run,lib,log,cache,sock,desktops,host1-run} /var/lib/bureau/desktops
	chmod 0711 "$dir" # per-desktop QEMU users traverse it
	# A stable host UUID (host1's differs: it is random per start here, or SMBIOS).
	[ -s "$dir/host_uuid" ] || cat /proc/sys/kernel/random/uuid >"$dir/host_uuid"
	echo "$port" >"$dir/port"
	# /etc/libvirt starts empty; these two files are the only configuration.
	# listen_tls defaults to 1 (needs certificates); auth_tcp defaults to sasl.
	cat >"$dir/etc/libvirtd.conf" <<-EOF
		listen_tls = 0
		listen_tcp = 1
		listen_addr = "127.0.0.1"
		tcp_port = "$port"
		auth_tcp = "none"
		unix_sock_dir = "$dir/sock"
		auth_unix_rw = "none"
		unix_sock_rw_perms = "0700"
		host_uuid = "$(cat "$dir/host_uuid")"
		log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
	EOF
	# stdio "file": a privileged libvirtd never spawns virtlogd, and host1's
	# socket is hidden by the private /run/libvirt. No cgroups: both daemons
	# would use /machine/qemu-ID-NAME.libvirt-qemu, and IDs are per daemon.
	# Migration (and NBD) ports apart from host1's 49152-49215.
	cat >"$dir/etc/qemu.conf" <<-EOF
		stdio_handler = "file"
		cgroup_controllers = [ ]
		migration_port_min = 49300
		migration_port_max = 49363
	EOF
	rm -f "$dir/libvirtd.pid"
	# setsid: host2 outlives the caller's session and process group. unshare
	# execs sh, which execs libvirtd: one process, so SIGTERM reaches libvirtd.
	# shellcheck disable=SC2016 # $1 (DIR) is expanded by the inner sh
	setsid unshare --mount --propagation private -- sh -ec '
		mount --bind /run/libvirt "$1/host1-run"
		mount --bind "$1/etc" /etc/libvirt
		mount --bind "$1/run" /run/libvirt
		mount --bind "$1/lib" /var/lib/libvirt
		mount --bind "$1/log" /var/log/libvirt
		mount --bind "$1/cache" /var/cache/libvirt
		mount --bind "$1/desktops" /var/lib/bureau/desktops
		exec libvirtd --listen -f /etc/libvirt/libvirtd.conf -p "$1/libvirtd.pid"' sh "$dir" \
		</dev/null >"$dir/out" 2>&1 &
	local p=$!
	wait_up "$p" || { kill "$p" 2>/dev/null || true; exit 1; }
	echo "$uri"
}

stop() {
	[ -n "$pid" ] || { log "not running ($dir)"; rm -f "$dir/libvirtd.pid"; return 0; }
	# QEMU and dnsmasq outlive libvirtd (and keep its namespace alive).
	if answers; then
		hv list --name | while read -r d; do [ -z "$d" ] || hv destroy "$d" </dev/null >/dev/null; done
		hv net-list --name | while read -r n; do [ -z "$n" ] || hv net-destroy "$n" </dev/null >/dev/null; done
	else
		log "warning: $uri does not answer; its domains and networks may survive"
	fi
	kill -TERM "$pid"
	local end=$((SECONDS + 30))
	while running "$pid"; do
		[ $SECONDS -lt $end ] || die "libvirtd (pid $pid) still running 30 s after SIGTERM"
		sleep 0.2
	done
	rm -f "$dir/libvirtd.pid"
}

case $cmd in start) start ;; stop) stop ;; status) [ -n "$pid" ] && answers && echo "$uri" ;; esac
