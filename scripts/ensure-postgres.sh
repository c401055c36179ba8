#!/usr/bin/env bash
# Makes sure PostgreSQL answers on 127.0.0.1:5432 and prints a URL of a
# fresh, empty database for this test run on stdout.
set -euo pipefail
host=127.0.0.1 port=5432
pg_up() { pg_isready -q -h "$host" -p "$port" 2>/dev/null; }
if ! pg_up; then
  ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
  if [ -z "$ver" ]; then
    echo "ensure-postgres: no PostgreSQL cluster installed (apt-get install postgresql)" >&2
    exit 1
  fi
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 || true
  for _ in $(seq 1 30); do pg_up && break; sleep 0.5; done
  pg_up || { echo "ensure-postgres: PostgreSQL did not start on $host:$port" >&2; exit 1; }
fi
user=postgres
psql() { command psql -X -q -h "$host" -p "$port" -U "$user" "$@"; }
if ! psql -d postgres -c 'select 1' >/dev/null 2>&1; then
  user=$(id -un)
fi
now=$(date +%s)
db="sbtest_${now}_$$"
# Drop test databases left by earlier runs (this script's sbtest_, and the
# per-test sbe2e_, sbkill_, sbbench_ … of killed runs, all named
# PREFIX_UNIXTIME_…), but only those over two hours old: another run on
# this machine (a second checkout, CI beside a session) may be using a
# younger one.
for old in $(psql -d postgres -At -c "select datname from pg_database where datname ~ '^sb[a-z0-9]*_[0-9]+_'" 2>/dev/null); do
  born=${old#*_}; born=${born%%_*}
  case $born in ''|*[!0-9]*) continue ;; esac
  [ $((now - born)) -gt 7200 ] || continue
  psql -d postgres -c "drop database if exists \"$old\" with (force)" >/dev/null 2>&1 || true
done
psql -d postgres -c "create database \"$db\"" >/dev/null
echo "postgres://$user@$host:$port/$db?sslmode=disable"
