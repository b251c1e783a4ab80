#!/usr/bin/env bash
# A throwaway Postgres cluster for tests and the benchmark (docs/testing.md "On Postgres"), run as the unprivileged
# `postgres` user of Debian's `postgresql` package, listening on loopback only.
#
#   scripts/postgres.sh start [DIR] [PORT]   # initdb when DIR is new, start; prints the URL on stdout
#   scripts/postgres.sh stop  [DIR]
#
# DIR defaults to target/pg (made mode 0700, owned by postgres), PORT to 54329. Trust authentication on
# 127.0.0.1 only: a test cluster, never one that holds real data. Installs the package when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-start}
dir=${2:-$PWD/target/pg}
port=${3:-54329}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [[ -z "$bin" ]]; then
  echo "installing postgresql" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi
# The package's own cluster is not used (and need not run).
as_pg() { runuser -u postgres -- "$@"; }
case "$cmd" in
  start)
    mkdir -p "$dir"
    chown postgres:postgres "$dir"
    chmod 0700 "$dir"
    if [[ ! -f "$dir/PG_VERSION" ]]; then
      as_pg "$bin/initdb" -D "$dir" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >&2
    fi
    if ! as_pg "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
      as_pg "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=400 -c shared_buffers=128MB" \
        start >&2
    fi
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    as_pg "$bin/pg_ctl" -D "$dir" -m fast -w stop >&2 || true
    ;;
  *)
    echo "usage: scripts/postgres.sh start|stop [DIR] [PORT]" >&2
    exit 2
    ;;
esac
