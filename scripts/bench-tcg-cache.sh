#!/usr/bin/env bash
# Measures what QEMU's TCG translation cache size costs and saves: for each
# size given (MiB; 0 = QEMU's 1 GiB default) it starts a bureau server with
# --tcg-cache-mib, creates one 2 vCPU / 2 GiB desktop, and prints the time to
# the guest agent and to xfdesktop running, the time Firefox ESR takes to
# open a window, and the QEMU process's resident memory afterwards.
#   scripts/bench-tcg-cache.sh 0 256      (make build first; ~7 min a size)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUREAU_BIN:-bin/bureau}
token=bench-admin-token-0123456789abcdef
dir=$(mktemp -d /var/lib/bureau-bench-XXXX)
port=18093
api=http://127.0.0.1:$port/api/v1
trap 'kill $(cat "$dir/pid" 2>/dev/null) 2>/dev/null || true; sleep 2; rm -rf "$dir"' EXIT
"$bin" image build --data-dir "$dir" --recipe images/desktop >/dev/null

call() { curl -sf -m 600 -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
# guest ID CMD [USER]: runs CMD in the desktop (as root unless USER).
guest() { call -X POST -d "{\"cmd\":$(printf '%s' "$2" | python3 -c 'import json,sys;print(json.dumps(sys.stdin.read()))'),\"user\":\"${3:-root}\",\"timeout_s\":500}" "$api/desktops/$1/exec"; }
since() { python3 -c "import time;print(f'{time.time()-$1:.1f}')"; }

printf '| cache | create → guest agent | → xfdesktop | Firefox window | RSS idle | RSS with Firefox |\n|---|---|---|---|---|---|\n'
for mib in "$@"; do
	BUREAU_ADMIN_TOKEN=$token "$bin" serve --data-dir "$dir" --listen 127.0.0.1:$port --tcg-cache-mib "$mib" >"$dir/serve.log" 2>&1 &
	echo $! >"$dir/pid"
	until curl -sf http://127.0.0.1:$port/healthz >/dev/null; do sleep 0.2; done
	t0=$(date +%s.%N)
	id=$(call -X POST -d "{\"name\":\"tcg-$mib\",\"vcpus\":2,\"memory_mib\":2048,\"data_disk_gib\":4}" "$api/desktops" | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
	agent=
	until out=$(guest "$id" 'pgrep -x xfdesktop >/dev/null && echo up || echo down' 2>/dev/null) && [[ $out == *'"stdout":"up'* ]]; do
		[[ -z $agent && $out == *exit_code* ]] && agent=$(since "$t0")
		sleep 3
	done
	desk=$(since "$t0")
	pid=$(pgrep -f "guest=bureau-$id" | head -1)
	sleep 60
	idle=$(awk '/VmRSS/{printf "%d MB", $2*1024/1e6}' "/proc/$pid/status")
	f0=$(date +%s.%N)
	# As the desktop's user, in its session (root's Firefox may refuse that display).
	guest "$id" '(firefox-esr about:blank >/dev/null 2>&1 &); xdotool search --sync --onlyvisible --name "Mozilla Firefox"' agent >/dev/null
	ff=$(since "$f0")
	sleep 60
	busy=$(awk '/VmRSS/{printf "%d MB", $2*1024/1e6}' "/proc/$pid/status")
	printf '| %s MiB | %ss | %ss | %ss | %s | %s |\n' "$mib" "${agent:-?}" "$desk" "$ff" "$idle" "$busy"
	call -X DELETE "$api/desktops/$id?delete_data=true" >/dev/null
	while call "$api/desktops/$id" >/dev/null 2>&1; do sleep 1; done # 404 once deleted
	kill "$(cat "$dir/pid")"
	wait "$(cat "$dir/pid")" 2>/dev/null || true
done
