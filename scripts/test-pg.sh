#!/usr/bin/env bash
# Runs the test suites against a throwaway PostgreSQL cluster made from the machine's
# PostgreSQL binaries (Debian: apt-get install postgresql). The cluster lives in a temporary
# folder, listens on loopback only, and is stopped and removed however the run ends.
set -euo pipefail

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  echo "test:pg needs PostgreSQL's server binaries (Debian: apt-get install -y postgresql)" >&2
  exit 1
fi

work=$(mktemp -d /tmp/gateway-pg.XXXXXX)
port=${TEST_PG_PORT:-$(( 20000 + RANDOM % 20000 ))}

# initdb refuses to run as root: run the cluster as the postgres user when we are root.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = 0 ]; then chown postgres "$work"; fi

stop() {
  as_owner "$pg_bin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap stop EXIT

as_owner "$pg_bin/initdb" -D "$work/data" -U postgres --auth=trust --no-sync -E UTF8 >"$work/initdb.log" 2>&1 \
  || { cat "$work/initdb.log" >&2; exit 1; }
as_owner "$pg_bin/pg_ctl" -D "$work/data" -l "$work/server.log" -w \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null \
  || { cat "$work/server.log" >&2; exit 1; }

echo "test:pg: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres" npm run jest -- "$@"
