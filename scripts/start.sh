#!/usr/bin/env bash
# The README's start command: installs what Herald needs and builds it (each only when something
# changed), then runs ingest + read + delivery in one process on one port, on the embedded
# defaults (PostgreSQL started as a child process, its data under .herald/postgres, and the queues
# on it: no Redis unless REDIS_URL is set).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-built.sh
exec node services/standalone/dist/main.js
