# Sourced by start.sh and test.sh: installs the dependencies and builds, each only when what it was
# last made from changed (scripts/stamps.mjs keeps a digest of its inputs in node_modules/), so a
# start with nothing changed goes straight on.
if ! digest=$(node scripts/stamps.mjs check install); then
  source scripts/ensure-pnpm.sh
  echo "installing dependencies (the first run takes a minute)…"
  pnpm_ install --frozen-lockfile --prefer-offline >/dev/null
  node scripts/stamps.mjs save install "$digest"
fi
if ! digest=$(node scripts/stamps.mjs check build); then
  declare -F pnpm_ >/dev/null || source scripts/ensure-pnpm.sh
  echo "building…"
  pnpm_ run build >/dev/null
  node scripts/stamps.mjs save build "$digest"
fi
