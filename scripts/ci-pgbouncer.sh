#!/usr/bin/env bash
# Starts a PgBouncer in transaction pooling mode in front of the test PostgreSQL (127.0.0.1:5432,
# database `test`), for the tests that run several vaults through a pooler (docs/scaling.md).
#
#   scripts/ci-pgbouncer.sh DIR    # config, auth file, log and pid file go in DIR (created if missing)
#
# Prints the URL to connect through (export it as TOKENVAULT_TEST_PGBOUNCER_URL) and exits 0 once
# the pooler answers; it keeps running in the background until `kill "$(cat DIR/pgbouncer.pid)"`.
# Exits non-zero, saying why on stderr, when pgbouncer is missing or does not start.
# Local use only: trust authentication, listening on 127.0.0.1.
set -euo pipefail

dir=${1:?usage: scripts/ci-pgbouncer.sh DIR}
upstream_host=127.0.0.1 upstream_port=5432 database=test user=postgres

command -v pgbouncer >/dev/null || { echo "pgbouncer is not installed (apt-get install -y pgbouncer)" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# The first free port from 6432 (nothing answers on it).
port=6432
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  port=$((port + 1))
  [ "$port" -lt 6532 ] || { echo "no free port in 6432-6531 for pgbouncer" >&2; exit 1; }
done

printf '"%s" ""\n' "$user" > "$dir/userlist.txt"
cat > "$dir/pgbouncer.ini" <<INI
[databases]
$database = host=$upstream_host port=$upstream_port dbname=$database

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
; What the vault is deployed with (docs/scaling.md): a server connection is lent for one transaction.
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI

# PgBouncer refuses to run as root: CI (root) runs it as the postgres user, which owns DIR then.
as=()
if [ "$(id -u)" = 0 ]; then
  chown -R postgres "$dir"
  as=(-u postgres)
fi
pgbouncer -d "${as[@]}" "$dir/pgbouncer.ini" >&2 || { echo "pgbouncer did not start; see $dir/pgbouncer.log" >&2; exit 1; }

for _ in $(seq 1 50); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "postgres://$user@127.0.0.1:$port/$database"
    exit 0
  fi
  sleep 0.1
done
echo "pgbouncer does not answer on 127.0.0.1:$port; see $dir/pgbouncer.log" >&2
exit 1
