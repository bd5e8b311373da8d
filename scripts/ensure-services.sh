# Sourced by the test scripts: makes sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379)
# run, starting them, or installing them with apt-get, when they do not; and that their server
# binaries are installed for the fault suite's own instances.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }
wait_for() { for _ in $(seq 1 60); do listening "$1" && return 0; sleep 0.5; done; return 1; }

if [ -n "${TEST_DATABASE_URL:-}" ] && [ "${TEST_DATABASE_URL#*127.0.0.1:5432}" = "$TEST_DATABASE_URL" ]; then
  : # a Postgres elsewhere was given; trust it
elif ! listening 5432; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "installing PostgreSQL with apt-get…"
    as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  ver=$(ls /etc/postgresql | sort -V | tail -1)
  as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  wait_for 5432 || { echo "PostgreSQL did not start on 127.0.0.1:5432" >&2; exit 1; }
fi

if [ -n "${TEST_REDIS_URL:-}" ] && [ "${TEST_REDIS_URL#*127.0.0.1:6379}" = "$TEST_REDIS_URL" ]; then
  :
elif ! listening 6379; then
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "installing Redis with apt-get…"
    as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no >/dev/null
  wait_for 6379 || { echo "Redis did not start on 127.0.0.1:6379" >&2; exit 1; }
fi

# The fault suite (services/standalone/src/faults) runs a PostgreSQL cluster and a redis-server of
# its own, which it stops and kills: it needs the server binaries even where the shared servers
# above run elsewhere (TEST_DATABASE_URL, TEST_REDIS_URL, or containers).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  echo "installing the PostgreSQL server binaries with apt-get…"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
if ! command -v redis-server >/dev/null 2>&1; then
  echo "installing redis-server with apt-get…"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi

# The tests' database must exist (trust auth as user postgres, as on the CI machine).
if command -v psql >/dev/null 2>&1 && [ -z "${TEST_DATABASE_URL:-}" ]; then
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='test'" postgres 2>/dev/null | grep -q 1 ||
    psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE test' postgres >/dev/null 2>&1 || true
fi
