# Sourced by the test scripts: makes sure PostgreSQL (127.0.0.1:5432), Redis (127.0.0.1:6379) and
# the destination tests' brokers (RabbitMQ, NATS, Mosquitto) run, starting them, or installing
# them with apt-get, when they do not; and that their server binaries are installed for the fault
# suite's own instances.
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

# The brokers of the destination tests (services/delivery/src/systems/attempt/publish): RabbitMQ
# (127.0.0.1:5672, guest/guest), NATS with JetStream (127.0.0.1:4222) and Mosquitto
# (127.0.0.1:1883). Each started (installed with apt-get first where missing) when nothing
# listens on its port; TEST_AMQP_URL, TEST_NATS_URL, TEST_MQTT_URL name brokers elsewhere.
install_package() {
  command -v "$1" >/dev/null 2>&1 || ls "/usr/sbin/$1" >/dev/null 2>&1 || {
    echo "installing $2 with apt-get…"
    as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
  }
}
if [ -z "${TEST_AMQP_URL:-}" ] && ! listening 5672; then
  install_package rabbitmq-server rabbitmq-server
  as_root rabbitmq-server -detached >/dev/null 2>&1 || as_root /usr/sbin/rabbitmq-server -detached
  for _ in $(seq 1 120); do listening 5672 && break; sleep 0.5; done
  listening 5672 || { echo "RabbitMQ did not start on 127.0.0.1:5672" >&2; exit 1; }
fi
if [ -z "${TEST_NATS_URL:-}" ] && ! listening 4222; then
  install_package nats-server nats-server
  mkdir -p "${TMPDIR:-/tmp}/herald-nats"
  nohup nats-server -a 127.0.0.1 -p 4222 -js -sd "${TMPDIR:-/tmp}/herald-nats" >/dev/null 2>&1 &
  wait_for 4222 || { echo "NATS did not start on 127.0.0.1:4222" >&2; exit 1; }
fi
if [ -z "${TEST_MQTT_URL:-}" ] && ! listening 1883; then
  install_package mosquitto mosquitto
  # Without a configuration file, Mosquitto 2 listens on loopback only and lets anyone in.
  (command -v mosquitto >/dev/null 2>&1 && mosquitto -d -p 1883) || /usr/sbin/mosquitto -d -p 1883
  wait_for 1883 || { echo "Mosquitto did not start on 127.0.0.1:1883" >&2; exit 1; }
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
