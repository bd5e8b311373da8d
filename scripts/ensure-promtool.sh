# Sourced by the test scripts: the alert rules' unit tests (infra/prometheus) run Debian's
# promtool. When it is missing, apt-get downloads the `prometheus` package and only promtool is
# taken out of it into /usr/local/bin: installing the package would also install (and on some
# machines start) a Prometheus server, which the tests do not want.
if ! command -v promtool >/dev/null 2>&1; then
  as_root_() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }
  echo "installing promtool with apt-get (for the alert rules' tests)…"
  promtool_tmp=$(mktemp -d)
  chmod 777 "$promtool_tmp" # apt's sandbox user downloads into it
  {
    as_root_ apt-get update -qq &&
      (cd "$promtool_tmp" && apt-get download -qq prometheus >/dev/null 2>&1) &&
      dpkg-deb -x "$promtool_tmp"/prometheus_*.deb "$promtool_tmp/x" &&
      as_root_ install -m 0755 "$promtool_tmp/x/usr/bin/promtool" /usr/local/bin/promtool
  } || echo "could not install promtool: the alert rules' tests will fail" >&2
  rm -rf "$promtool_tmp"
fi
