#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the tests: a new cluster in a temporary folder,
# reachable only through a Unix socket in that folder (no TCP port).
#
#   eval "$(.ci/pg-start.sh)"        # sets LEASELAB_PG_URL and LEASELAB_PG_DIR
#   cargo test --test pg_store
#   .ci/pg-stop.sh                   # stops the server and removes the folder
#
# With LEASELAB_PG_PORT=N and LEASELAB_PG_PASSWORD=P, the server listens on 127.0.0.1:N too
# and every connection needs the password (scram-sha-256), as a class's server does; the URL
# it prints names 127.0.0.1:N and leaves the password out (give it in PGPASSWORD).
#
# Everything else goes to stderr, so only the two export lines reach `eval`.
# The server runs as the calling user, or as the `postgres` system user when called as root
# (PostgreSQL refuses to run as root).
set -euo pipefail

say() { printf 'pg-start: %s\n' "$*" >&2; }

bindir=""
for d in /usr/lib/postgresql/*/bin; do
  [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && bindir="$d"
done
if [[ -z "$bindir" ]]; then
  say "no PostgreSQL server found under /usr/lib/postgresql (apt-get install postgresql)"
  exit 1
fi

as_owner=()
owner=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
  owner=postgres
  if ! id -u "$owner" >/dev/null 2>&1; then
    useradd --system --user-group --home-dir /nonexistent --shell /usr/sbin/nologin "$owner"
  fi
  as_owner=(runuser -u "$owner" --)
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/leaselab-pg.XXXXXX")
# A Unix socket path holds at most 107 bytes.
if (( ${#dir} + 20 > 107 )); then
  rmdir "$dir"
  say "temporary folder path too long for a Unix socket: $dir (set TMPDIR to a shorter one)"
  exit 1
fi
chmod 755 "$dir"
started=""
# A start that fails halfway leaves no server and no folder behind.
trap 'if [[ -z "$started" ]]; then
        "${as_owner[@]}" "$bindir/pg_ctl" --pgdata="$dir/data" --mode=immediate stop >/dev/null 2>&1 || true
        rm -rf "$dir"
      fi' EXIT
mkdir "$dir/data" "$dir/socket"
chown "$owner" "$dir" "$dir/data" "$dir/socket"

port="${LEASELAB_PG_PORT:-}"
password="${LEASELAB_PG_PASSWORD:-}"
if [[ -n "$port" && ! "$port" =~ ^[0-9]{1,5}$ ]]; then
  say "LEASELAB_PG_PORT is not a port number: $port"
  exit 1
fi
auth=(--auth=trust)
listen="listen_addresses=''"
if [[ -n "$password" ]]; then
  printf '%s\n' "$password" >"$dir/pwfile"
  chown "$owner" "$dir/pwfile"
  auth=(--auth=scram-sha-256 --pwfile="$dir/pwfile")
fi
if [[ -n "$port" ]]; then
  listen="listen_addresses='127.0.0.1' -p $port"
fi

"${as_owner[@]}" "$bindir/initdb" --pgdata="$dir/data" --username=leaselab "${auth[@]}" \
  --encoding=UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
  cat "$dir/initdb.log" >&2
  say "initdb failed"
  exit 1
}
# Enough connections for the tests' parallel threads; no TCP listener at all.
if ! "${as_owner[@]}" "$bindir/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" --wait \
  -o "-k $dir/socket -c $listen -c max_connections=200" start >&2; then
  cat "$dir/server.log" >&2
  say "the server did not start"
  exit 1
fi
PGPASSWORD="$password" "${as_owner[@]}" "$bindir/psql" -h "$dir/socket" -U leaselab -d postgres -q -v ON_ERROR_STOP=1 \
  ${port:+-p "$port"} -c 'CREATE DATABASE leaselab' >&2

started=yes
say "PostgreSQL $("$bindir/pg_ctl" --version | awk '{print $3}') running in $dir (${port:+127.0.0.1:$port and }socket${password:+, password required})"
printf 'export LEASELAB_PG_DIR=%q\n' "$dir"
if [[ -n "$port" ]]; then
  printf 'export LEASELAB_PG_URL=%q\n' "postgres://leaselab@127.0.0.1:$port/leaselab"
else
  printf 'export LEASELAB_PG_URL=%q\n' "postgres://leaselab@/leaselab?host=$dir/socket"
fi
