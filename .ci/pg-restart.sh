#!/usr/bin/env bash
# Restart the server that .ci/pg-start.sh started, with the options it was started with:
# what a teacher's server does in a blip. The tests that restart a server start one of their
# own for it, so no other test's connections are cut.
#   .ci/pg-restart.sh DIR [MODE]     (MODE: immediate, the default, fast or smart)
set -euo pipefail

dir=${1:-}
mode=${2:-immediate}
if [[ -z "$dir" || ! -d "$dir/data" ]]; then
  printf 'pg-restart: no server folder (give the DIR pg-start.sh printed)\n' >&2
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
"${as_owner[@]}" "$bindir/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" \
  --mode="$mode" --wait restart >&2
