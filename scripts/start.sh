#!/usr/bin/env bash
# npm start: installs what is missing, builds the wasm module, and serves the page on http://localhost:${PORT:-8080}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/build.sh --only wasm
exec node web/server.mjs
