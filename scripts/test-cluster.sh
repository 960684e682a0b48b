#!/usr/bin/env bash
# Runs the cluster suites (test/cluster/): two built gateway processes on a throwaway
# PostgreSQL cluster behind nginx, and PostgreSQL stopped and started under load. The suites
# start and stop every server themselves; this checks that the machine has them.
set -euo pipefail

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "test:cluster needs PostgreSQL's server binaries (Debian: apt-get install -y postgresql)" >&2
  exit 1
fi
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "test:cluster needs nginx (Debian: apt-get install -y nginx)" >&2
  exit 1
fi

npm run build
npm run jest -- --config jest.cluster.config.js "$@"
