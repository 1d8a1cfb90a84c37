#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a bounded time each
# (FUZZTIME, default 15s). New failing inputs land in the package's
# testdata/fuzz and fail the run.
#
# A run that fails with only "context deadline exceeded" and writes no
# failing input is Go's fuzz coordinator racing its own -fuzztime deadline
# (go.dev/issue/75804, fixed in Go 1.27): it is reported and not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${FUZZTIME:-15s}
log=/tmp/fuzz-$$.log
inputs() { { find "$1/testdata/fuzz/$2" -type f 2>/dev/null || true; } | sort; }
# Targets are found in the sources (a "func FuzzX(f *testing.F)" line), not
# with go test -list, which would build every package's test binary first.
targets=$(git grep -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' -- '*_test.go' |
	sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' | sort -u)
[ -n "$targets" ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }
while read -r dir fn; do
	pkg=./$dir
	echo "fuzz: $pkg $fn for $time"
	before=$(inputs "$dir" "$fn")
	if go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$time" "$pkg" >"$log" 2>&1; then continue; fi
	if [ "$(inputs "$dir" "$fn")" = "$before" ] && grep -q '^    context deadline exceeded$' "$log" &&
		! grep -q -e 'Failing input written' -e '^panic:' -e '--- FAIL: .*\.go:' "$log"; then
		echo "fuzz: $fn stopped on Go's -fuzztime deadline race (go.dev/issue/75804), no failing input: not counted"
		continue
	fi
	tail -30 "$log"
	exit 1
done <<<"$targets"
rm -f "$log"
