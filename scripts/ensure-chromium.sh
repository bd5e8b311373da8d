# Sourced by the test scripts: the console's end-to-end tests drive Debian's Chromium
# (/usr/bin/chromium) with playwright-core; install it with apt-get when it is missing. Browsers
# are never downloaded by a test tool.
if [ ! -x /usr/bin/chromium ]; then
  as_root_() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }
  echo "installing Chromium with apt-get (for the console's end-to-end tests)…"
  as_root_ apt-get update -qq &&
    as_root_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null ||
    echo "could not install chromium: the console's end-to-end tests will fail" >&2
fi
