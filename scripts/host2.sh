#!/usr/bin/env bash
# Test only: runs a second, independent libvirtd ("host2") on this machine for
# multi-host tests (docs/research/multi-host.md §1), on
# qemu+tcp://127.0.0.1:PORT/system without authentication. Its paths are
# compile-time, so it runs in a private mount namespace with DIR's subdirs
# bound over /etc/libvirt (empty: no default or bureau network), /run/libvirt,
# /var/lib/libvirt, /var/log/libvirt, /var/cache/libvirt, and the bureau data
# directory's desktops/ and images/ (DIR/desktops and DIR/images; data
# directory below: separate, as on a remote host, so base images reach host2 only
# as they would a remote host, through libvirt's storage-pool API;
# templates/ stays shared). Inside it, host1 is at
# qemu+unix:///system?socket=DIR/host1-run/libvirt-sock. Root only.
# host2 is also reachable over SSH, as root by key only, on 127.0.0.1:PORT+1:
# an sshd runs inside its mount namespace, so paths resolve as on a remote
# host (e.g. a desktop's VNC socket in host2's own /var/lib/bureau/desktops).
# Its files are in DIR/ssh: id_ed25519 (the client key; more keys go in
# authorized_keys.more, read at start), known_hosts (host2's
# host key, to pin), port, sshd_config, sshd.log. openssh-server is installed
# if sshd is missing, with its system service kept off (see need_sshd).
#   scripts/host2.sh start [DIR] [PORT]   starts it if needed, prints the URI (a running
#                                         one that binds another data directory, left by
#                                         a killed run, is stopped and started afresh)
#   scripts/host2.sh stop [DIR]           destroys its domains and networks, stops it
#   scripts/host2.sh status [DIR]         prints the URI if it answers, else exits 1
#   scripts/host2.sh revive [DIR]         starts its libvirtd again after it died or was
#                                         killed, in the same namespace: its QEMUs ran on
#                                         and the new libvirtd finds them (as after a
#                                         libvirtd restart on a real host)
# DIR: $BUREAU_HOST2_DIR or /var/tmp/bureau-host2; PORT: $BUREAU_HOST2_PORT or
# 16510 (stop and status use the port saved by start). Log: DIR/log/libvirtd.log.
# $BUREAU_HOST2_DATA_DIR (default /var/lib/bureau) is the bureau data directory
# whose desktops/ and images/ are host2's own (a test server's, say).
set -euo pipefail

cmd=${1:-}
dir=${2:-${BUREAU_HOST2_DIR:-/var/tmp/bureau-host2}}
port=${3:-${BUREAU_HOST2_PORT:-16510}}
data=${BUREAU_HOST2_DATA_DIR:-/var/lib/bureau}
log() { echo "host2: $*" >&2; }
die() { log "$*"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
case $cmd in start | stop | status | revive) ;; *) die "usage: $0 start|stop|status|revive [DIR] [PORT]" ;; esac

# running PID: PID exists and is not a zombie (PID 1 here reaps lazily).
running() { local s; s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ "$s" != Z ]; }
# mntns PID: PID's mount namespace ("self": ours).
mntns() { readlink "/proc/$1/ns/mnt" 2>/dev/null || true; }
# ours PIDFILE COMM: the PID in PIDFILE if it runs COMM outside our mount
# namespace, so never a system daemon even if a stale pid file's PID was reused.
ours() {
	local p
	p=$(cat "$1" 2>/dev/null || true)
	if [ -n "$p" ] && running "$p" && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] &&
		[ "$(mntns "$p")" != "$(mntns self)" ]; then echo "$p"; fi
}
sshdir=$dir/ssh
# pid: host2's libvirtd, if running; spid: host2's sshd (its listener).
pid=$(ours "$dir/libvirtd.pid" libvirtd)
spid=$(ours "$sshdir/sshd.pid" sshd)
asked_port=$port
# A running host2 keeps the port it was started with.
if [ "$cmd" != start ] || [ -n "$pid" ]; then port=$(cat "$dir/port" 2>/dev/null || echo "$port"); fi
# at PORT: sets the port and the addresses derived from it.
at() {
	port=$1
	if ! [[ $port =~ ^[0-9]{1,5}$ ]] || [ "$port" -ge 65535 ]; then die "bad port: $port"; fi
	uri=qemu+tcp://127.0.0.1:$port/system
	sshport=$((port + 1))
}
at "$port"
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

# port_free PORT: refuses a port something listens on (else another daemon's
# answer there would pass for ours).
port_free() { [ -z "$(ss -Hltn "sport = :$1")" ] || die "port $1 is already in use"; }

# need_sshd: sets sshd to OpenSSH's server, installing it (as host-setup.sh
# installs packages) if missing. Installing it would also start and enable a
# system sshd on port 22 of every address; /etc/ssh/sshd_not_to_be_run,
# which Debian's init script and ssh.service honour, keeps that one off.
need_sshd() {
	sshd=$(PATH=$PATH:/usr/sbin:/sbin command -v sshd || true)
	[ -z "$sshd" ] || return 0
	log "installing openssh-server; its system service stays off (/etc/ssh/sshd_not_to_be_run)"
	mkdir -p /etc/ssh
	[ -e /etc/ssh/sshd_not_to_be_run ] || touch /etc/ssh/sshd_not_to_be_run
	apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server >&2
	sshd=$(PATH=$PATH:/usr/sbin:/sbin command -v sshd) || die "no sshd after installing openssh-server"
}

# start_sshd PID: runs host2's sshd in the mount namespace of host2's
# libvirtd PID, unless it already runs there.
start_sshd() {
	local ns
	ns=$(mntns "$1")
	[ -n "$ns" ] && [ "$ns" != "$(mntns self)" ] || die "libvirtd (pid $1) is not in a mount namespace of its own"
	if [ -n "$spid" ]; then
		[ "$(mntns "$spid")" != "$ns" ] || return 0
		stop_ns "$(mntns "$spid")" "" # an sshd left from an earlier host2
	fi
	port_free "$sshport"
	need_sshd
	mkdir -p "$sshdir"
	chmod 0700 "$sshdir"
	# Kept across restarts, as a real host keeps its host key.
	[ -s "$sshdir/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C bureau-host2 -f "$sshdir/host_ed25519"
	[ -s "$sshdir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C bureau-host2-client -f "$sshdir/id_ed25519"
	# restrict: no pty, agent or X11 forwarding; port-forwarding gives back
	# the local forwarding sshd_config allows (streamlocal: VNC sockets).
	echo "restrict,port-forwarding $(cat "$sshdir/id_ed25519.pub")" >"$sshdir/authorized_keys"
	# More keys the host accepts (e.g. a bureau server's), kept across
	# restarts as a real host keeps its authorized_keys.
	if [ -s "$sshdir/authorized_keys.more" ]; then cat "$sshdir/authorized_keys.more" >>"$sshdir/authorized_keys"; fi
	echo "[127.0.0.1]:$sshport $(cut -d' ' -f1,2 "$sshdir/host_ed25519.pub")" >"$sshdir/known_hosts"
	echo "$sshport" >"$sshdir/port"
	# -f: this file only (not /etc/ssh/sshd_config, nor its Include).
	# StrictModes no: DIR's parents (/tmp, /var/tmp) are world-writable,
	# which StrictModes refuses for AuthorizedKeysFile. UsePAM no: no
	# /etc/pam.d/sshd session modules (pam_loginuid fails in containers);
	# sshd then refuses accounts whose password is locked with "!".
	# Connecting to a unix socket (direct-streamlocal) needs both
	# AllowStreamLocalForwarding and AllowTcpForwarding to allow local
	# forwarding: OpenSSH checks the socket path against the TCP forwarding
	# permissions, which "AllowTcpForwarding no" (or PermitOpen) closes.
	cat >"$sshdir/sshd_config" <<-EOF
		ListenAddress 127.0.0.1:$sshport
		HostKey $sshdir/host_ed25519
		PidFile $sshdir/sshd.pid
		AuthorizedKeysFile $sshdir/authorized_keys
		StrictModes no
		AllowUsers root
		PermitRootLogin prohibit-password
		AuthenticationMethods publickey
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		UsePAM no
		AllowStreamLocalForwarding local
		AllowTcpForwarding local
		AllowAgentForwarding no
		X11Forwarding no
		PermitTunnel no
		PermitUserEnvironment no
		PrintMotd no
		Subsystem sftp internal-sftp
		LogLevel VERBOSE
	EOF
	# sshd's privilege separation chroot (compile-time /run/sshd; /run
	# is shared with host1): an empty root-owned directory, as Debian's
	# init script makes it.
	[ -d /run/sshd ] || install -d -m 0755 /run/sshd
	rm -f "$sshdir/sshd.pid"
	# nsenter only enters the mount namespace; sshd forks into the
	# background once listening, then writes its pid file.
	nsenter --target "$1" --mount -- "$sshd" -f "$sshdir/sshd_config" -E "$sshdir/sshd.log" </dev/null ||
		{ tail -n 20 "$sshdir/sshd.log" >&2 2>/dev/null || true; die "sshd did not start"; }
	local end=$((SECONDS + 10))
	until spid=$(ours "$sshdir/sshd.pid" sshd) && [ -n "$spid" ] && [ -n "$(ss -Hltn "sport = :$sshport")" ]; do
		if [ $SECONDS -ge $end ]; then
			tail -n 20 "$sshdir/sshd.log" >&2 2>/dev/null || true
			die "sshd does not listen on 127.0.0.1:$sshport"
		fi
		sleep 0.1
	done
	log "ssh: ssh -i $sshdir/id_ed25519 -o UserKnownHostsFile=$sshdir/known_hosts -p $sshport root@127.0.0.1"
}

# stop_ns NS KEEP: stops every process in host2's mount namespace NS but
# KEEP (its libvirtd): the sshd, its sessions and whatever they started.
stop_ns() {
	[ -n "$1" ] && [ "$1" != "$(mntns self)" ] || die "refusing to stop processes in mount namespace '$1'"
	local p left end=$((SECONDS + 10))
	while :; do
		left=
		for p in /proc/[0-9]*; do
			p=${p#/proc/}
			[ "$p" != "$2" ] && [ "$(mntns "$p")" = "$1" ] && running "$p" && left="$left $p"
		done
		[ -n "$left" ] || return 0
		# shellcheck disable=SC2086 # $left: several PIDs
		if [ $SECONDS -ge $end ]; then kill -KILL $left 2>/dev/null || true; return 0; fi
		# shellcheck disable=SC2086
		kill -TERM $left 2>/dev/null || true
		sleep 0.2
	done
}

start() {
	# A running host2 is reused only if it binds this data directory's
	# desktops/ and images/ (DIR/data-dir, written below): one left by an
	# earlier run that was killed before it stopped host2 binds another
	# (often deleted) one, and a server's files would land in this host's
	# own folders instead. It is stopped and started afresh.
	local bound
	bound=$(cat "$dir/data-dir" 2>/dev/null || true)
	if [ -n "$pid" ] && [ "$bound" != "$data" ]; then
		log "the running host2 (pid $pid) binds the data directory '${bound:-unknown}', not $data: stopping it to start afresh"
		stop
		pid= spid=
		at "$asked_port"
	fi
	if [ -n "$pid" ]; then
		wait_up "$pid"
		start_sshd "$pid"
		echo "$uri"
		return
	fi
	port_free "$port"
	# An sshd left from an earlier host2 whose libvirtd is gone.
	[ -z "$spid" ] || { stop_ns "$(mntns "$spid")" ""; spid=; }
	port_free "$sshport"
	case $data in /*) ;; *) die "BUREAU_HOST2_DATA_DIR must be absolute: $data" ;; esac
	mkdir -p "$dir"/{etc,run,lib,log,cache,sock,desktops,images,host1-run} "$data/desktops" "$data/images"
	chmod 0711 "$dir" # per-desktop QEMU users traverse it
	# A stable host UUID (host1's differs: it is random per start here, or SMBIOS).
	[ -s "$dir/host_uuid" ] || cat /proc/sys/kernel/random/uuid >"$dir/host_uuid"
	echo "$port" >"$dir/port"
	echo "$data" >"$dir/data-dir"
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
		mount --bind "$1/desktops" "$2/desktops"
		mount --bind "$1/images" "$2/images"
		exec libvirtd --listen -f /etc/libvirt/libvirtd.conf -p "$1/libvirtd.pid"' sh "$dir" "$data" \
		</dev/null >"$dir/out" 2>&1 &
	local p=$!
	wait_up "$p" || { kill "$p" 2>/dev/null || true; exit 1; }
	# shellcheck disable=SC2064 # $p now
	trap "kill $p 2>/dev/null || true" EXIT # if sshd fails to start
	start_sshd "$p"
	trap - EXIT
	echo "$uri"
}

# revive: a libvirtd again in the mount namespace host2's sshd (and its
# QEMUs, dnsmasq) kept alive; the namespace's mounts are as start made them.
revive() {
	if [ -n "$pid" ]; then
		wait_up "$pid"
		echo "$uri"
		return
	fi
	[ -n "$spid" ] || die "no host2 to revive in $dir: its sshd is gone too (start it)"
	port_free "$port"
	rm -f "$dir/libvirtd.pid"
	# nsenter execs libvirtd (no fork for a mount namespace): $! is libvirtd.
	setsid nsenter --target "$spid" --mount -- libvirtd --listen -f /etc/libvirt/libvirtd.conf -p "$dir/libvirtd.pid" \
		</dev/null >>"$dir/out" 2>&1 &
	local p=$!
	wait_up "$p" || { kill "$p" 2>/dev/null || true; exit 1; }
	echo "$uri"
}

stop() {
	if [ -z "$pid" ]; then
		[ -z "$spid" ] || stop_ns "$(mntns "$spid")" ""
		log "not running ($dir)"
		rm -f "$dir/libvirtd.pid" "$sshdir/sshd.pid"
		return 0
	fi
	# QEMU and dnsmasq outlive libvirtd (and keep its namespace alive).
	if answers; then
		hv list --name | while read -r d; do [ -z "$d" ] || hv destroy "$d" </dev/null >/dev/null; done
		hv net-list --name | while read -r n; do [ -z "$n" ] || hv net-destroy "$n" </dev/null >/dev/null; done
	else
		log "warning: $uri does not answer; its domains and networks may survive"
	fi
	# Then everything else in its namespace: the sshd, its sessions and what
	# they started (and dnsmasq if the API did not answer); also an sshd
	# left in an earlier host2's namespace.
	[ -z "$spid" ] || [ "$(mntns "$spid")" = "$(mntns "$pid")" ] || stop_ns "$(mntns "$spid")" ""
	stop_ns "$(mntns "$pid")" "$pid"
	kill -TERM "$pid"
	local end=$((SECONDS + 30))
	while running "$pid"; do
		[ $SECONDS -lt $end ] || die "libvirtd (pid $pid) still running 30 s after SIGTERM"
		sleep 0.2
	done
	rm -f "$dir/libvirtd.pid" "$sshdir/sshd.pid"
}

case $cmd in start) start ;; stop) stop ;; revive) revive ;; status) [ -n "$pid" ] && answers && echo "$uri" ;; esac
