#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server (Debian's packages) on a
# free loopback port, in a temp dir, as the unprivileged `postgres` user when
# run as root. Exports PADDLECLOUD_TEST_DATABASE_URL; stops the server after.
#   scripts/with-postgres.sh COMMAND [ARGS...]
# PADDLECLOUD_PG_ALSO_ON=ADDRESS/PREFIX (e.g. the real node's 10.244.0.1/24):
# listens on ADDRESS too and trusts that network, so that pods reach it.
set -euo pipefail

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$PGBIN/initdb" ] || { echo "PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }

dir=$(mktemp -d -t paddlecloud-pg.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
run=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$dir"
  run=(runuser -u postgres --)
fi

stop() {
  "${run[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

"${run[@]}" "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
listen=127.0.0.1
if [ -n "${PADDLECLOUD_PG_ALSO_ON:-}" ]; then
  listen+=",${PADDLECLOUD_PG_ALSO_ON%/*}"
  network=$(python3 -c 'import ipaddress, sys; print(ipaddress.ip_interface(sys.argv[1]).network)' "$PADDLECLOUD_PG_ALSO_ON")
  echo "host all all $network trust" >>"$dir/data/pg_hba.conf"
fi
# fsync off: a test database that is thrown away need not survive a crash.
"${run[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=$listen -c fsync=off -c max_connections=200" start >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }

export PADDLECLOUD_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
echo "==> throwaway PostgreSQL on 127.0.0.1:$port"
"$@"
