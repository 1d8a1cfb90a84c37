#!/usr/bin/env bash
# Builds tools/oidc-provider (a small, real OpenID Connect provider for the
# single sign-on tests: ZITADEL's oidc library and its example storage and
# login page, from the Go module proxy) into /var/cache/bureau/tools, once
# per version of its source. Prints the binary's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/tools/oidc-provider
TOOLS=${BUREAU_TOOLS_DIR:-/var/cache/bureau/tools}
log() { echo "oidc-provider-setup: $*" >&2; }
hash=$(cd "$src" && cat go.mod go.sum $(ls *.go | LC_ALL=C sort) | sha256sum | cut -c1-16)
out=$TOOLS/oidc-provider-$hash
if [ ! -x "$out" ]; then
	mkdir -p "$TOOLS"
	log "building the test OpenID provider (once; under a minute on a cold Go cache)"
	tmp=$(mktemp "$TOOLS/oidc-provider-$hash.tmp.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	(cd "$src" && GOWORK=off GOFLAGS=-mod=mod go build -trimpath -o "$tmp" .)
	chmod 0755 "$tmp"
	mv "$tmp" "$out"
fi
echo "$out"
