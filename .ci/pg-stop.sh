#!/usr/bin/env bash
# Stop the server that .ci/pg-start.sh started and remove its folder.
#   .ci/pg-stop.sh [DIR]     (DIR defaults to $LEASELAB_PG_DIR)
set -euo pipefail

dir=${1:-${LEASELAB_PG_DIR:-}}
if [[ -z "$dir" || ! -d "$dir/data" ]]; then
  printf 'pg-stop: no server folder (give DIR or set LEASELAB_PG_DIR)\n' >&2
  exit 1
fi
bindir=""
for d in /usr/lib/postgresql/*/bin; do
  [[ -x "$d/pg_ctl" ]] && bindir="$d"
done

as_owner=()
if [[ $(id -u) -eq 0 ]]; then
  as_owner=(runuser -u "$(stat -c %U "$dir/data")" --)
fi
if [[ -f "$dir/data/postmaster.pid" ]]; then
  "${as_owner[@]}" "$bindir/pg_ctl" --pgdata="$dir/data" --mode=fast --wait stop >&2
fi
rm -rf "$dir"
