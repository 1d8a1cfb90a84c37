#!/usr/bin/env bash
# Reads `go test -v` output on stdin and passes it through unchanged, as it
# comes; at the end it fails (exit 1) if a test skipped that the allow-list
# does not allow for this run, or if no test passed at all (a -run pattern
# that matches nothing, say). It prints the allowed skips that happened with
# their reasons, so a green run says what it did not check.
#
#   go test -v ... | scripts/check-skips.sh ALLOW_LIST RUN
#
# ALLOW_LIST: one line per allowed skip, "RUN TEST REASON…": RUN is the make
# target (or * for any), TEST a shell pattern for the test's full name (as
# in "--- SKIP: TestX/sub"), REASON the rest of the line; # starts a comment.
# In a Makefile, use `set -o pipefail` so go test's own failure stays the
# recipe's.
set -uo pipefail
if [ $# -ne 2 ]; then
	echo "usage: go test -v ... | $0 ALLOW_LIST RUN" >&2
	exit 2
fi
list=$1 run=$2
log=$(mktemp "${TMPDIR:-/tmp}/check-skips.XXXXXX")
trap 'rm -f "$log"' EXIT
tee "$log" || true

if [ ! -r "$list" ]; then
	echo "check-skips ($run): cannot read the allow-list $list" >&2
	exit 1
fi

# One reading of the log says which test each message is: go test -v
# streams a test's log lines (file.go:N: message) under the last
# "=== RUN/CONT/NAME" naming it, before its "--- SKIP:" or "--- FAIL:" line.
# It prints "skip<TAB>name<TAB>reason" for each skip (the reason is that
# test's last message), then "recap<TAB>line" for each failed test's own
# last messages (up to 8, its subtests' not included; the harness's
# server-log pointer left out), shown again at the end below.
messages=$(awk '
	/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
	/^[ \t]+[^ \t]+\.go:[0-9]+: / && cur != "" {
		if ($0 ~ /server log: all of it in/) next
		line = $0; sub(/^[ \t]+/, "", line)
		n[cur]++; msg[cur, n[cur] % 8] = line
		next
	}
	/^[ \t]*--- SKIP: / { print "skip\t" $3 "\t" ((($3) in n) ? msg[$3, n[$3] % 8] : "") }
	/^[ \t]*--- FAIL: / { failed[++nf] = $3 }
	END {
		for (i = 1; i <= nf; i++) {
			t = failed[i]
			if (!(t in n)) continue
			print "recap\t  " t ":"
			first = n[t] > 8 ? n[t] - 7 : 1
			for (k = first; k <= n[t]; k++) print "recap\t    " msg[t, k % 8]
		}
	}
' "$log")
skips=$(printf '%s\n' "$messages" | sed -n 's/^skip\t//p')
passed=$(grep -cE '^[[:space:]]*--- PASS: ' "$log")

# Allow-list entries for this run: "pattern<TAB>reason".
entries=()
while read -r target pattern reason; do
	case $target in '' | '#'*) continue ;; esac
	if [ -z "$pattern" ] || [ -z "$reason" ]; then
		echo "check-skips ($run): $list: an entry needs a run, a test pattern and a reason: $target $pattern" >&2
		exit 1
	fi
	if [ "$target" = "$run" ] || [ "$target" = "*" ]; then
		entries+=("$pattern"$'\t'"$reason")
	fi
done <"$list"

allowed=() refused=()
while IFS=$'\t' read -r name why; do
	[ -n "$name" ] || continue
	match=""
	for e in "${entries[@]+"${entries[@]}"}"; do
		# shellcheck disable=SC2053 # the pattern is a glob on purpose
		if [[ $name == ${e%%$'\t'*} ]]; then
			match=${e#*$'\t'}
			break
		fi
	done
	if [ -n "$match" ]; then
		allowed+=("  $name: $match")
	else
		refused+=("  $name${why:+ ($why)}")
	fi
done <<<"$skips"

echo
if [ ${#allowed[@]} -gt 0 ]; then
	echo "check-skips ($run): ${#allowed[@]} skipped, allowed by $list:"
	printf '%s\n' "${allowed[@]}"
fi
status=0
if [ ${#refused[@]} -gt 0 ]; then
	echo "check-skips ($run): FAIL: ${#refused[@]} skipped that $list does not allow for $run:"
	printf '%s\n' "${refused[@]}"
	status=1
fi
if [ "$passed" -eq 0 ]; then
	echo "check-skips ($run): FAIL: no test passed (did -run match nothing, or did go test not start?)"
	status=1
fi
if [ $status -eq 0 ] && [ ${#allowed[@]} -eq 0 ]; then
	echo "check-skips ($run): no test skipped"
fi

# A failing test's own last messages, again, at the very end: go test -v
# prints them when they happen, often thousands of lines above the summary,
# and a CI page that shows only the end of the output would not show why.
recap=$(printf '%s\n' "$messages" | sed -n 's/^recap\t//p')
if [ -n "$recap" ]; then
	echo "check-skips ($run): the failed tests' last messages (each test's own, up to 8):"
	printf '%s\n' "$recap"
fi
exit $status
