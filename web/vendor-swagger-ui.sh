#!/usr/bin/env bash
# Vendors Swagger UI (the API reference at /docs, over /api/v1/openapi.json)
# into web/static/swagger-ui/ from the npm registry. The version is pinned;
# re-run after changing it. Copies the browser bundle (swagger-ui-bundle.js,
# swagger-ui.css) and the licences, unmodified.
set -euo pipefail

SWAGGER_UI=5.35.0
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/static/swagger-ui"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
npm pack --silent "swagger-ui-dist@$SWAGGER_UI" >/dev/null
mkdir dist
tar xzf swagger-ui-dist-"$SWAGGER_UI".tgz -C dist
[ -f dist/package/swagger-ui-bundle.js ] || { echo "vendor-swagger-ui: swagger-ui-bundle.js missing" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest"
cp dist/package/swagger-ui-bundle.js dist/package/swagger-ui.css "$dest/"
cp dist/package/LICENSE dist/package/NOTICE dist/package/swagger-ui-bundle.js.LICENSE.txt "$dest/"
cat > "$dest/VERSION" <<NOTE
Swagger UI $SWAGGER_UI (npm swagger-ui-dist@$SWAGGER_UI), https://github.com/swagger-api/swagger-ui
Vendored by web/vendor-swagger-ui.sh: swagger-ui-bundle.js, swagger-ui.css and the licences.
Unmodified. Apache-2.0; see LICENSE, NOTICE and swagger-ui-bundle.js.LICENSE.txt (bundled code).
NOTE
