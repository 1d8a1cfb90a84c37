#!/usr/bin/env bash
# Reports mmdebstrap's progress while it runs. mmdebstrap gives apt a status
# fd of its own (and shows it only on a terminal), so this reads what it
# leaves on disk instead.
#
#   bootstrap-progress.sh monitor WORK
#     every 2 s reads WORK/rootfs — apt's package lists, the .debs in apt's
#     archive cache, dpkg's log — and prints "@@progress bootstrap <percent>
#     <detail>" when that changed.
#   bootstrap-progress.sh hook ROOT   (mmdebstrap's --extract-hook and
#     --essential-hook) writes beside ROOT what the monitor cannot see:
#     base-count, the number of base-system packages once extracted, and
#     plan, "<packages> <bytes> <dpkg.log lines>": what the remaining install
#     downloads, and where dpkg's log stood before it.
#
# Percent (of the whole image build, see build.sh): base system 2-8,
# downloads 8-30, unpack and configure 30-64, triggers and clean-up 65-66.
# Measured on 2 cores: base system 26 s, unpack and configure 92 s, triggers
# and clean-up 18 s; downloads took 2-4 s from a fast mirror (about 3 minutes
# from the slower one of images/desktop/README.md's first measurement).
if [ "$1" = hook ]; then
	root=$2
	work=$(dirname "$root")
	case ${MMDEBSTRAP_HOOK:-} in
	extract)
		# shellcheck disable=SC2086 # one word per package
		set -- ${MMDEBSTRAP_ESSENTIAL:-}
		echo $# >"$work/base-count.tmp" && mv "$work/base-count.tmp" "$work/base-count"
		;;
	essential)
		# The same apt configuration mmdebstrap installs the rest with.
		# shellcheck disable=SC2086 # one word per package
		APT_CONFIG=$MMDEBSTRAP_APT_CONFIG apt-get --print-uris -qq install ${MMDEBSTRAP_INCLUDE//,/ } |
			awk '{ n++; b += $3 } END { if (!n) exit 1; printf "%d %d ", n, b }' >"$work/plan.tmp" &&
			wc -l <"$root/var/log/dpkg.log" >>"$work/plan.tmp" &&
			mv "$work/plan.tmp" "$work/plan"
		;;
	esac
	exit 0 # progress is never worth failing the build for
fi
set -u
work=$2
root=$work/rootfs
archives=$root/var/cache/apt/archives
dpkglog=$root/var/log/dpkg.log
last="" line=""

# pct FROM TO DONE TOTAL: FROM + (TO-FROM)*DONE/TOTAL with one decimal.
pct() { awk -v a="$1" -v b="$2" -v d="$3" -v t="$4" 'BEGIN { f = t > 0 ? d / t : 0; if (f > 1) f = 1; printf "%.1f", a + (b - a) * f }'; }
mib() { echo $((($1 + 524288) / 1048576)); }
debs() { find "$archives" -maxdepth 1 -name '*.deb' 2>/dev/null | wc -l; }
# Bytes under the archive cache, finished and partial downloads alike.
cached_bytes() { du -sb "$archives" 2>/dev/null | awk '{print $1 + 0}'; }
# dpkg_counts FROM: packages unpacked and configured in dpkg's log after
# line FROM (configured counts only those unpacked there too: triggers mark
# base-system packages installed again), and the package whose triggers
# dpkg runs last, if that is what it does now.
dpkg_counts() {
	awk -v from="$1" 'NR <= from { next }
		$3 == "unpack" || $3 == "install" { u[$4] = 1 }
		$3 == "status" && $4 == "installed" && ($5 in u) { c[$5] = 1 }
		$3 == "trigproc" { t = $4; sub(/:.*/, "", t) }
		$3 == "unpack" || $3 == "install" || $3 == "configure" { t = "" }
		END { n = 0; for (k in u) n++; m = 0; for (k in c) m++; print n, m, t }' "$dpkglog" 2>/dev/null || echo 0 0
}

# report sets line to the progress now ("<percent> <detail>").
report() {
	local n unpacked configured trigger
	if [ -f "$work/plan" ]; then
		local total bytes from have
		read -r total bytes from <"$work/plan"
		read -r unpacked configured trigger < <(dpkg_counts "$from")
		if [ "$unpacked" = 0 ]; then
			have=$(cached_bytes)
			line="$(pct 8 30 "$have" "$bytes") downloading $(debs)/$total packages ($(mib "$have")/$(mib "$bytes") MiB)"
		elif [ "$unpacked" -lt "$total" ]; then
			# apt configures some packages as soon as they are unpacked.
			line="$(pct 30 64 $((unpacked + configured)) $((2 * total))) unpacking $unpacked/$total packages"
		elif [ "$configured" -lt "$total" ]; then
			line="$(pct 30 64 $((unpacked + configured)) $((2 * total))) configuring $configured/$total packages"
		elif [ -n "$trigger" ]; then
			# initramfs-tools' (building the initramfs) takes a while.
			line="65 running the triggers of $trigger"
		else
			line="66 cleaning up"
		fi
	elif [ -f "$work/base-count" ]; then
		n=$(cat "$work/base-count")
		read -r unpacked configured < <(dpkg_counts 0)
		# dpkg --install unpacks them all, then configures them all.
		local what="unpacking $unpacked/$n"
		[ "$unpacked" -ge "$n" ] && what="configuring $configured/$n"
		line="$(pct 4 8 $((unpacked + configured)) $((2 * n))) installing the base system: $what packages"
	elif n=$(debs) && [ "$n" -gt 0 ]; then
		# Its size is known once it is downloaded: when no more come and
		# none is on its way, mmdebstrap is extracting them.
		local doing=downloading
		if [ "$n" = "$base_debs" ] && [ -z "$(ls -A "$archives/partial" 2>/dev/null)" ]; then
			doing=extracting
		fi
		base_debs=$n
		line="3 $doing the base system: $n packages ($(mib "$(cached_bytes)") MiB)"
	elif compgen -G "$root/var/lib/apt/lists/*Packages*" >/dev/null; then
		line="3 reading package lists"
	else
		line="2 fetching package lists"
	fi
}

# It stops with build.sh, even one killed without running its cleanup.
parent=$PPID
base_debs=0
while kill -0 "$parent" 2>/dev/null; do
	sleep 2 </dev/null >/dev/null 2>&1
	report
	if [ "$line" != "$last" ]; then
		echo "@@progress bootstrap $line"
		last=$line
	fi
done
