#!/usr/bin/env bash
# Vendors xterm.js (the terminal of the console page's Terminal tab) and its
# fit addon into web/static/xterm/ from the npm registry. Versions are
# pinned; re-run after changing them. Copies the browser builds (lib/*.js,
# css/xterm.css) and the licences.
set -euo pipefail

XTERM=6.0.0
FIT=0.11.0
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/static/xterm"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
npm pack --silent "@xterm/xterm@$XTERM" "@xterm/addon-fit@$FIT" >/dev/null
mkdir xterm fit
tar xzf xterm-xterm-"$XTERM".tgz -C xterm
tar xzf xterm-addon-fit-"$FIT".tgz -C fit
[ -f xterm/package/lib/xterm.js ] || { echo "vendor-xterm: lib/xterm.js missing" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest"
cp xterm/package/lib/xterm.js xterm/package/css/xterm.css "$dest/"
cp xterm/package/LICENSE "$dest/LICENSE.xterm"
cp fit/package/lib/addon-fit.js "$dest/"
cp fit/package/LICENSE "$dest/LICENSE.addon-fit"
cat > "$dest/VERSION" <<NOTE
xterm.js $XTERM (npm @xterm/xterm@$XTERM) and @xterm/addon-fit@$FIT, https://github.com/xtermjs/xterm.js
Vendored by web/vendor-xterm.sh: lib/xterm.js, css/xterm.css, lib/addon-fit.js and the licences.
Unmodified. MIT; see LICENSE.xterm and LICENSE.addon-fit.
NOTE
