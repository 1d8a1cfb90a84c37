#!/usr/bin/env bash
# Starts a local PostgreSQL cluster for the tests (Debian packages, no systemd
# needed) and prints a connection URL for database "bureau_test".
set -euo pipefail
log() { echo "postgres-setup: $*" >&2; }
if ! command -v pg_ctlcluster >/dev/null; then
	apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2
fi
ver=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_lsclusters -h | grep -q "^$ver main"; then pg_createcluster "$ver" main >&2; fi
if ! pg_lsclusters -h | awk '{print $4}' | grep -q online; then
	log "starting cluster $ver/main"; pg_ctlcluster "$ver" main start >&2
fi
port=$(pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $3}')
su postgres -c "psql -q -p $port -c \"ALTER USER postgres PASSWORD 'bureau'\"" >&2
su postgres -c "psql -p $port -tAc \"SELECT 1 FROM pg_database WHERE datname='bureau_test'\"" | grep -q 1 ||
	su postgres -c "createdb -p $port bureau_test" >&2
echo "postgres://postgres:bureau@127.0.0.1:$port/bureau_test?sslmode=disable"
