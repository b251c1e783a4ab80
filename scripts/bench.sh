#!/usr/bin/env bash
# Benchmark of the release server (issue 11): prints, in one run, each figure beside its limit measured in
# the same run, as a ratio, with its target and PASS/MISS:
#
#   1. settles/s with 1, 8 and 64 concurrent single-operation writers and with batches of 100 (8 writers),
#      on disk and on tmpfs (/dev/shm), each ÷ SQLite's own one-commit rate on the same filesystem, measured
#      just before and after the phase (WAL, synchronous=FULL, one single-row INSERT per transaction).
#      Targets: 64 writers on disk >= 0.8x tmpfs and >= 1.0x SQLite's one-commit rate; 1 writer on disk
#      >= 0.5x SQLite's one-commit rate, and the median latency of its settles <= 2x the median latency
#      of one SQLite commit in the same probes (issue 27: a single agent's write costs what SQLite costs).
#   2. server CPU per settle (utime+stime of /proc/<pid>/stat around each timed phase ÷ settles).
#      Targets: <= 150 µs with 1 writer, <= 100 µs with 64 single-op writers, <= 30 µs per operation in
#      batches of 100.
#   3. GET /api/mutation-outcomes of a 10,000-outcome session ÷ serde_json serialising the same body in
#      memory (medians). Target <= 3x.
#   4. replay of the last 100 revisions of a 10,000-outcome turn ÷ its full replay. Target <= 0.1x.
#   5. settles/s of 8 writers with 1,000 live subscribers reading the session ÷ with none. Target >= 0.5x.
#   6. Postgres: settles/s of 64 single-operation writers spread over two server instances on one Postgres
#      database ÷ Postgres's own one-commit rate (one connection, synchronous_commit on, one single-row
#      INSERT per transaction), measured just before and after the phase; also ÷ the same with 64
#      connections at once (informational), and the CPU per settle of both servers and of Postgres
#      (utime+stime of the postmaster and all its children over the timed phase ÷ settles).
#      Targets: >= 1.0x; Postgres CPU per settle <= 150 µs (issue 45). The cluster is a throwaway one
#      (scripts/postgres.sh) in the disk data directory.
#
# and, to show the load generator is not the bottleneck, its CPU per request, the rate it reaches against
# GET /healthz, and the CPU other processes took and the machine left idle during the timed phases.
# Progress lines ([bench ...]) go to stderr, the table to stdout.
#
#   scripts/bench.sh                  full run, about 3 minutes after the builds
#   scripts/bench.sh --quick          every phase tiny (a smoke test, under 30 s after the builds)
#   scripts/bench.sh --no-postgres    without the Postgres phase (also BENCH_POSTGRES=0)
#   scripts/bench.sh --only-postgres  the Postgres phase alone
#   scripts/bench.sh --only-reads     the history and replay figures alone (3 and 4), no Postgres
#   scripts/bench.sh --otlp ...       every server measured also exports its spans over OTLP/HTTP
#                                     (OTEL_EXPORTER_OTLP_ENDPOINT) to a local sink that answers 200
#                                     (scripts/bench/otlp_sink.py): the write path with the OpenTelemetry
#                                     outbox on and its worker exporting, to compare with a run without
#                                     (docs/operations.md "OpenTelemetry")
#
# Extra arguments (but --no-postgres) go to the load generator (scripts/bench/, `--help` lists them).
# Environment:
#   OUTCOMES_BIN=/path        measure this binary instead of building target/release/outcomes
#   CARGO_TARGET_DIR          where the load generator is built (default <repo>/target/bench; when set,
#                             the server is built there too)
#   BENCH_DISK_DIR            parent of the on-disk data directories (default <repo>/target/bench-data)
#   BENCH_TMPFS_DIR           parent of the tmpfs data directories (default /dev/shm)
#   BENCH_POSTGRES=0          no Postgres phase (as --no-postgres)
#   BENCH_POSTGRES_PORT       first port tried for the throwaway cluster (default 54399; the first free
#                             one from there is taken)
# Exit status: 0 when every figure was measured without a failed request (a MISS is not a failure).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

postgres="${BENCH_POSTGRES:-1}"
args=()
otlp=0
for a in "$@"; do
  if [[ "$a" == --no-postgres ]]; then postgres=0; elif [[ "$a" == --otlp ]]; then otlp=1; else args+=("$a"); fi
  if [[ "$a" == --only-reads ]]; then postgres=0; fi
done
if [[ "$postgres" == 0 ]] && [[ " ${args[*]-} " == *" --only-postgres "* ]]; then
  echo "bench: --only-postgres with --no-postgres (or BENCH_POSTGRES=0) leaves nothing to run" >&2
  exit 2
fi

if [[ -z "${OUTCOMES_BIN:-}" ]]; then
  echo "== building the release server (cargo build --release -p server --bin outcomes)" >&2
  cargo build --release -p server --bin outcomes
  OUTCOMES_BIN="${CARGO_TARGET_DIR:-$repo/target}/release/outcomes"
fi
[[ -x "$OUTCOMES_BIN" ]] || { echo "bench: $OUTCOMES_BIN is not an executable" >&2; exit 2; }

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target/bench}"
echo "== building the load generator (scripts/bench, target dir $CARGO_TARGET_DIR)" >&2
cargo build --release --quiet --manifest-path scripts/bench/Cargo.toml
generator="$CARGO_TARGET_DIR/release/outcomes-bench"

# 1,000 live streams take a descriptor each in the generator and in the server.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if (($(ulimit -n) < 4096)); then
  echo "bench: the open-file limit is $(ulimit -n); 1,000 live subscribers need more (raise the hard limit)" >&2
  exit 2
fi

disk_parent="${BENCH_DISK_DIR:-$repo/target/bench-data}"
tmpfs_parent="${BENCH_TMPFS_DIR:-/dev/shm}"
mkdir -p "$disk_parent"
disk="$(mktemp -d "$disk_parent/run.XXXXXX")"
tmpfs="$(mktemp -d "$tmpfs_parent/outcomes-bench.XXXXXX")"
pg_dir=""
sink=""
cleanup() {
  if [[ -n "$pg_dir" ]]; then
    scripts/postgres.sh stop "$pg_dir" >/dev/null 2>&1 || true
  fi
  if [[ -n "$sink" ]]; then
    kill -TERM "$sink" 2>/dev/null && wait "$sink" 2>/dev/null || true
  fi
  rm -rf "$disk" "$tmpfs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
echo "== disk: $disk ($(df --output=source,fstype "$disk" | tail -1 | tr -s ' '))" >&2
echo "== tmpfs: $tmpfs ($(df --output=source,fstype "$tmpfs" | tail -1 | tr -s ' '))" >&2
echo "== server: $OUTCOMES_BIN" >&2

pg_args=()
if [[ "$postgres" != 0 ]]; then
  # A cluster of its own, on the disk measured, on the first free loopback port from 54399. Its
  # directory belongs to the `postgres` user, which must reach it: the run directory (mktemp: 0700) is
  # opened for traversal only.
  port="${BENCH_POSTGRES_PORT:-54399}"
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    port=$((port + 1))
  done
  chmod 0711 "$disk"
  pg_dir="$disk/postgres"
  echo "== postgres: throwaway cluster in $pg_dir on 127.0.0.1:$port (scripts/postgres.sh)" >&2
  if ! pg_url="$(scripts/postgres.sh start "$pg_dir" "$port" 2>"$disk/postgres-start.log")"; then
    cat "$disk/postgres-start.log" >&2
    echo "bench: cannot start a Postgres cluster (scripts/postgres.sh); --no-postgres skips that phase" >&2
    exit 2
  fi
  pg_args=(--postgres-url "$pg_url")
fi

if [[ "$otlp" == 1 ]]; then
  sink_port=4318
  while (exec 3<>"/dev/tcp/127.0.0.1/$sink_port") 2>/dev/null; do
    sink_port=$((sink_port + 1))
  done
  python3 scripts/bench/otlp_sink.py "$sink_port" &
  sink=$!
  export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port"
  echo "== OpenTelemetry: every server exports to the sink at $OTEL_EXPORTER_OTLP_ENDPOINT" >&2
else
  unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
fi

started=$(date +%s)
set +e
"$generator" --server-bin "$OUTCOMES_BIN" --disk-dir "$disk" --tmpfs-dir "$tmpfs" \
  ${pg_args[@]+"${pg_args[@]}"} ${args[@]+"${args[@]}"}
rc=$?
set -e
echo "== bench took $(($(date +%s) - started)) s (builds excluded)" >&2
exit "$rc"
