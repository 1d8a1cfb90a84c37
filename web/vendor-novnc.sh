#!/usr/bin/env bash
# Vendors noVNC (the RFB client used by the console page) into web/static/novnc/
# from the npm registry. The version is pinned; re-run after changing it.
# Copies core/ and vendor/ (pako, imported by core/inflator.js) with their
# relative paths so the ES modules load as-is from /static/novnc/core/rfb.js,
# plus the licence files.
set -euo pipefail

VERSION=1.7.0
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/static/novnc"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "@novnc/novnc@$VERSION" >/dev/null && tar xzf novnc-novnc-"$VERSION".tgz)
pkg="$tmp/package"
[ -f "$pkg/core/rfb.js" ] || { echo "vendor-novnc: core/rfb.js missing in the package" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest/docs"
cp -R "$pkg/core" "$dest/core"
[ -d "$pkg/vendor" ] && cp -R "$pkg/vendor" "$dest/vendor"
cp "$pkg/LICENSE.txt" "$dest/"
[ -f "$pkg/AUTHORS" ] && cp "$pkg/AUTHORS" "$dest/"
cp "$pkg"/docs/LICENSE.* "$dest/docs/"
cat > "$dest/VERSION" <<NOTE
noVNC $VERSION (npm @novnc/novnc@$VERSION), https://github.com/novnc/noVNC
Vendored by web/vendor-novnc.sh: core/, vendor/ (pako), LICENSE.txt, AUTHORS, docs/LICENSE.*.
Unmodified. noVNC is MPL-2.0; see LICENSE.txt and docs/.
NOTE
echo "vendor-novnc: noVNC $VERSION -> $dest" >&2
