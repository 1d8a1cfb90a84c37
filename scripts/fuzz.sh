#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a bounded time each
# (FUZZTIME, default 15s). New failing inputs land in the package's
# testdata/fuzz and fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${FUZZTIME:-15s}
for pkg in $(go list ./...); do
	for fn in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "fuzz: $pkg $fn for $time"
		go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$time" "$pkg" >/tmp/fuzz-$$.log 2>&1 || { tail -30 /tmp/fuzz-$$.log; exit 1; }
	done
done
rm -f /tmp/fuzz-$$.log
