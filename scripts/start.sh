#!/usr/bin/env bash
# The README's start command: installs what Herald needs, builds it, and runs ingest + read +
# delivery in one process on one port, on the embedded defaults (PGlite; a local redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-pnpm.sh
echo "installing dependencies and building (first run takes a minute)…"
pnpm_ install --frozen-lockfile --prefer-offline >/dev/null
pnpm_ run build >/dev/null
exec node services/standalone/dist/main.js
