#!/usr/bin/env bash
# Builds Let's Encrypt's Pebble (a small ACME server for tests, MPL-2.0)
# and its pebble-challtestsrv (a mock DNS server it resolves names with)
# from the Go module proxy into /var/cache/bureau/tools, once per version,
# with the module's test certificates for Pebble's own HTTPS beside them:
# the webtls tests start them on loopback as their real ACME CA. Prints the
# directory's path.
set -euo pipefail
VERSION=v2.10.3
MODULE=github.com/letsencrypt/pebble/v2
TOOLS=${BUREAU_TOOLS_DIR:-/var/cache/bureau/tools}
out=$TOOLS/pebble-$VERSION
log() { echo "pebble-setup: $*" >&2; }
if [ ! -x "$out/pebble" ] || [ ! -x "$out/pebble-challtestsrv" ] || [ ! -f "$out/certs/pebble.minica.pem" ]; then
	mkdir -p "$TOOLS"
	log "building Pebble $VERSION (once; under a minute on a cold Go cache)"
	src=$(cd / && GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[ -d "$src" ] || { log "go mod download gave no source directory"; exit 1; }
	work=$(mktemp -d "$TOOLS/pebble-$VERSION.tmp.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	(cd / && GOBIN=$work GOFLAGS=-mod=mod go install "$MODULE/cmd/pebble@$VERSION" "$MODULE/cmd/pebble-challtestsrv@$VERSION")
	mkdir -p "$work/certs/localhost"
	cp "$src/test/certs/localhost/cert.pem" "$src/test/certs/localhost/key.pem" "$work/certs/localhost/"
	cp "$src/test/certs/pebble.minica.pem" "$work/certs/"
	chmod -R u+w,go+rX "$work"
	rm -rf "$out"
	mv "$work" "$out"
fi
echo "$out"
