#!/usr/bin/env bash
# Builds SeaweedFS's `weed` (an S3-compatible object store, Apache-2.0) from
# the Go module proxy into /var/cache/bureau/tools, once per version: the
# backup tests start it on loopback as their real S3 server. Prints the
# binary's path. `go install` refuses the module (its go.mod has replace
# directives), so it is built from a copy of the module's source.
set -euo pipefail
VERSION=v0.0.0-20261109003541-7506e5f91cd6
TOOLS=${BUREAU_TOOLS_DIR:-/var/cache/bureau/tools}
out=$TOOLS/weed-$VERSION
log() { echo "weed-setup: $*" >&2; }
if [ ! -x "$out" ]; then
	mkdir -p "$TOOLS"
	log "building SeaweedFS weed $VERSION (once; a few minutes on a cold Go cache)"
	src=$(cd / && GOFLAGS=-mod=mod go mod download -json "github.com/seaweedfs/seaweedfs@$VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[ -d "$src" ] || { log "go mod download gave no source directory"; exit 1; }
	work=$(mktemp -d)
	trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
	cp -r "$src/." "$work/"
	chmod -R u+w "$work"
	(cd "$work" && GOFLAGS=-mod=mod go build -o "$out.tmp" ./weed)
	mv "$out.tmp" "$out"
fi
ln -sfn "weed-$VERSION" "$TOOLS/weed"
echo "$TOOLS/weed"
