# Sourced by the other scripts: provides `pnpm` at the version pinned by package.json's
# packageManager field, without Corepack (which cannot download on every machine).
want=$(node -p "require('./package.json').packageManager.split('@')[1]")
if command -v pnpm >/dev/null 2>&1 && [ "$(pnpm --version 2>/dev/null)" = "$want" ]; then
  PNPM=(pnpm)
else
  npm install --global --no-fund --no-audit "pnpm@$want" >/dev/null 2>&1 || true
  if command -v pnpm >/dev/null 2>&1 && [ "$(pnpm --version 2>/dev/null)" = "$want" ]; then
    PNPM=(pnpm)
  else
    PNPM=(npx -y "pnpm@$want")
  fi
fi
pnpm_() { "${PNPM[@]}" "$@"; }
