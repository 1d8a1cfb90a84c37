#!/usr/bin/env bash
# Installs bureau as a service (make install; docs/install.md):
#   $PREFIX/bin/bureau, bureau-agent      side by side: bureau finds the
#                                          agent it puts in desktops there
#   $PREFIX/share/bureau/images/desktop   the default image's recipe
#   $PREFIX/share/bureau/scripts/host-setup.sh, $PREFIX/share/doc/bureau/
#   /etc/bureau/bureau.env                settings (0600), never overwritten
#   /lib/systemd/system/bureau.service
#   /var/lib/bureau, /var/cache/bureau    made when missing
# Everything else serve needs (migrations, cloud-init templates, the web
# console) is inside the binary.
#
# DESTDIR stages the files under another root (packaging, tests) and
# touches nothing else; PREFIX is /usr/local by default.
# BUREAU_INSTALL_BIN_DIR is where bureau and bureau-agent are taken from
# (default: the checkout's bin/, from make build).
# INSTALL_DEPS=1 also runs scripts/host-setup.sh (host packages, libvirtd).
# Idempotent: run it again to upgrade.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
bindir=${BUREAU_INSTALL_BIN_DIR:-$repo/bin}
envfile=/etc/bureau/bureau.env
unit=/lib/systemd/system/bureau.service

log() { echo "install: $*" >&2; }

case $PREFIX in
/*) ;;
*) log "PREFIX must be an absolute path, not $PREFIX"; exit 1 ;;
esac
for b in bureau bureau-agent; do
	[ -x "$bindir/$b" ] || { log "no $bindir/$b: run make build first (make install does)"; exit 1; }
done
if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
	log "must run as root to install on this machine (or set DESTDIR to stage the files)"; exit 1
fi

if [ "${INSTALL_DEPS:-0}" = 1 ]; then
	if [ -z "$DESTDIR" ]; then
		"$here/host-setup.sh"
	else
		log "INSTALL_DEPS=1 ignored with DESTDIR: host packages are for the machine bureau runs on"
	fi
fi

# mkdirs DIR...: made 0755 when missing; existing ones keep their mode.
mkdirs() {
	local d
	for d in "$@"; do [ -d "$d" ] || install -d -m 0755 "$d"; done
}

# put SRC DST MODE: DST replaced at once (a rename), so a running bureau
# keeps its old binary until it restarts and no reader sees half a file.
put() {
	mkdirs "$(dirname "$2")"
	install -m "$3" "$1" "$2.new.$$"
	mv -f "$2.new.$$" "$2"
}

# The recipe's paths and the binary's follow PREFIX.
prefixed() { sed "s|/usr/local/|$PREFIX/|g" "$1"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

put "$bindir/bureau" "$DESTDIR$PREFIX/bin/bureau" 0755
put "$bindir/bureau-agent" "$DESTDIR$PREFIX/bin/bureau-agent" 0755

# The recipe is replaced whole: a file left over from an older recipe
# would change its hash, and so rebuild an image for nothing.
share=$DESTDIR$PREFIX/share/bureau
mkdirs "$share/images" "$share/scripts"
rm -rf "$share/images/desktop.new"
cp -R "$repo/images/desktop" "$share/images/desktop.new"
chmod -R u+rwX,go+rX,go-w "$share/images/desktop.new"
rm -rf "$share/images/desktop"
mv "$share/images/desktop.new" "$share/images/desktop"
put "$here/host-setup.sh" "$share/scripts/host-setup.sh" 0755
put "$repo/docs/install.md" "$DESTDIR$PREFIX/share/doc/bureau/install.md" 0644

prefixed "$repo/packaging/systemd/bureau.service" >"$tmp/bureau.service"
put "$tmp/bureau.service" "$DESTDIR$unit" 0644

# Settings are the operator's: an existing file is kept, the new one goes
# beside it to compare.
prefixed "$repo/packaging/bureau.env" >"$tmp/bureau.env"
mkdirs "$DESTDIR/etc/bureau"
if [ -e "$DESTDIR$envfile" ]; then
	put "$tmp/bureau.env" "$DESTDIR$envfile.new" 0600
	log "kept $envfile as it is; this version's is $envfile.new (diff $envfile $envfile.new)"
else
	put "$tmp/bureau.env" "$DESTDIR$envfile" 0600
fi

# Made only when missing: a running bureau's data directory is 0711 (its
# desktops' QEMU users pass through it) and must stay so.
[ -d "$DESTDIR/var/lib/bureau" ] || install -d -m 0711 "$DESTDIR/var/lib/bureau"
mkdirs "$DESTDIR/var/cache/bureau" "$DESTDIR/var/cache/bureau/images"

log "installed bureau in $DESTDIR$PREFIX"
if [ -n "$DESTDIR" ]; then
	exit 0
fi

bureau=$PREFIX/bin/bureau
cat >&2 <<EOF
install: next:
  host packages and libvirtd, if not done yet: $PREFIX/share/bureau/scripts/host-setup.sh
  the desktop image (from a root shell; minutes, or reused from the cache):
      set -a; . $envfile; set +a; $bureau image build
  check the host:  $bureau doctor
EOF
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	if systemctl is-active --quiet bureau; then
		log "bureau is running the old binaries: systemctl restart bureau (desktops keep running)"
	else
		log "start it now and at boot: systemctl enable --now bureau"
	fi
	log "its log, with the first admin token: journalctl -u bureau"
else
	log "systemd is not running here: the unit is installed but nothing starts bureau. By hand, as root:"
	log "  set -a; . $envfile; set +a; nohup $bureau serve >>/var/log/bureau.log 2>&1 &"
fi
