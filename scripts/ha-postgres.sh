#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A throwaway PostgreSQL primary with one streaming standby (pg_basebackup) on loopback ports,
# for tests/ha. The test plays the failover manager with the commands below.
#
# Usage:
#   scripts/ha-postgres.sh start [--async]  # synchronous standby (synchronous_commit = on,
#                                           # synchronous_standby_names = standby) unless --async
#   scripts/ha-postgres.sh stop             # stops both servers and removes the state directory
#   scripts/ha-postgres.sh env              # prints `export ...` lines; use with eval
#   scripts/ha-postgres.sh kill-primary     # pg_ctl stop -m immediate on node 1 (no clean-up)
#   scripts/ha-postgres.sh promote          # pg_ctl promote on node 2; returns once it writes
#   scripts/ha-postgres.sh cut-replication  # node 2 stops receiving WAL (primary_conninfo = '')
#   scripts/ha-postgres.sh wait-replayed    # waits until node 2 has replayed all of node 1's WAL
#   scripts/ha-postgres.sh status
#
# State (data, sockets, logs) lives in ${DBLOCK_HA_PG_DIR:-${TMPDIR:-/tmp}/dblock-ha-pg-$(id -u)}.
# When run as root the servers run as the `postgres` user. The env command prints
# DBLOCK_HA_PG_URL1 (primary), DBLOCK_HA_PG_URL2 (standby) and DBLOCK_HA_PG_MULTI_URL, one URL
# naming both with target_session_attrs=read-write, in the form dblock's URL parser reads:
# postgresql://u:p@127.0.0.1,127.0.0.1/db?port=P1,P2&target_session_attrs=read-write.
set -euo pipefail

readonly STATE_DIR="${DBLOCK_HA_PG_DIR:-${TMPDIR:-/tmp}/dblock-ha-pg-$(id -u)}"
readonly MARKER="$STATE_DIR/.dblock-ha-pg"
readonly DB_NAME=dblock_test
readonly DB_USER=dblock
readonly WAIT_SECONDS=60

# shellcheck disable=SC2034 # read by lib/messages.sh
script_name=ha-postgres
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/messages.sh"
is_root() { ((EUID == 0)); }
os_user() { if is_root; then echo postgres; else id -un; fi; }

as_pg() {
  if is_root; then
    (cd "$STATE_DIR" && runuser -u postgres -- "$@")
  else
    (cd "$STATE_DIR" && "$@")
  fi
}

bindir() {
  local ver
  ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null |
    grep -E '^[0-9]+$' | sort -n | tail -n 1 || true)
  [[ -n "$ver" ]] || die "no PostgreSQL server in /usr/lib/postgresql (run scripts/install-deps.sh)"
  printf '%s\n' "/usr/lib/postgresql/$ver/bin"
}

source "$(dirname -- "${BASH_SOURCE[0]}")/lib/ports.sh"

load_state() {
  [[ -r "$STATE_DIR/state" ]] || die "no cluster in $STATE_DIR (run: scripts/ha-postgres.sh start)"
  # shellcheck source=/dev/null
  . "$STATE_DIR/state"
}

# psql as the OS superuser over node N's socket.
psql_node() {
  local n=$1
  shift
  local port="PORT_$n"
  as_pg "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$STATE_DIR/run$n" -p "${!port}" -U postgres \
    -d postgres "$@"
}

start_node() {
  local n=$1
  local port="PORT_$n"
  as_pg "$BIN/pg_ctl" -D "$STATE_DIR/node$n" -l "$STATE_DIR/node$n.log" -w -t "$WAIT_SECONDS" \
    start -o "-p ${!port} -k '$STATE_DIR/run$n'" >"$STATE_DIR/pg_ctl$n.log" 2>&1 ||
    { tail -n 30 "$STATE_DIR/node$n.log" >&2; die "node $n did not start"; }
}

node_running() {
  as_pg "$BIN/pg_ctl" -D "$STATE_DIR/node$1" status >/dev/null 2>&1
}

cmd_stop() {
  [[ -e "$STATE_DIR" ]] || return 0
  [[ -f "$MARKER" ]] || die "$STATE_DIR was not created by ha-postgres.sh; refusing to touch it"
  if [[ -r "$STATE_DIR/state" ]]; then
    load_state
    local n
    for n in 1 2; do
      if node_running "$n"; then
        as_pg "$BIN/pg_ctl" -D "$STATE_DIR/node$n" -m immediate -w stop >/dev/null 2>&1 || true
      fi
    done
  fi
  rm -rf -- "$STATE_DIR"
}

cmd_start() {
  local mode=sync
  [[ "${1:-}" == --async ]] && mode=async
  cmd_stop
  mkdir -p -- "$(dirname -- "$STATE_DIR")"
  mkdir -m 755 -- "$STATE_DIR"
  : >"$MARKER"
  is_root && chown postgres: "$STATE_DIR"
  trap 'rc=$?; ((rc == 0)) || { log "start failed"; [[ -r "$STATE_DIR/state" ]] && for n in 1 2; do as_pg "$BIN/pg_ctl" -D "$STATE_DIR/node$n" -m immediate stop >/dev/null 2>&1 || true; done; }' EXIT

  BIN=$(bindir)
  local password
  password=$(head -c 64 /dev/urandom | LC_ALL=C tr -dc 'A-Za-z0-9' | head -c 20)
  pick_port
  PORT_1=$PORT
  pick_port
  PORT_2=$PORT
  {
    printf 'BIN=%q\nPORT_1=%q\nPORT_2=%q\nMODE=%q\n' "$BIN" "$PORT_1" "$PORT_2" "$mode"
  } >"$STATE_DIR/state"
  (umask 077 && printf '%s\n' "$password" >"$STATE_DIR/password")
  as_pg mkdir -m 755 "$STATE_DIR/run1" "$STATE_DIR/run2"

  as_pg "$BIN/initdb" -D "$STATE_DIR/node1" -U postgres --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C --no-sync >"$STATE_DIR/initdb.log" 2>&1 ||
    { tail -n 20 "$STATE_DIR/initdb.log" >&2; die "initdb failed"; }
  cat >>"$STATE_DIR/node1/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
max_connections = 200
wal_level = replica
max_wal_senders = 5
wal_keep_size = 256MB
hot_standby = on
wal_receiver_status_interval = 1s
CONF
  start_node 1
  psql_node 1 <<SQL
CREATE ROLE $DB_USER LOGIN SUPERUSER REPLICATION PASSWORD '$password';
CREATE DATABASE $DB_NAME OWNER $DB_USER;
SQL
  # The standby's copy; its primary_conninfo reads the password from a file of its own.
  local passfile="$STATE_DIR/pgpass"
  (umask 077 && printf '127.0.0.1:%s:*:%s:%s\n' "$PORT_1" "$DB_USER" "$password" >"$passfile")
  is_root && chown postgres: "$passfile"
  as_pg "$BIN/pg_basebackup" -D "$STATE_DIR/node2" -R -X stream -c fast \
    -d "host=127.0.0.1 port=$PORT_1 user=$DB_USER passfile=$passfile application_name=standby" \
    >"$STATE_DIR/basebackup.log" 2>&1 ||
    { tail -n 20 "$STATE_DIR/basebackup.log" >&2; die "pg_basebackup failed"; }
  start_node 2
  if [[ "$mode" == sync ]]; then
    psql_node 1 -c "ALTER SYSTEM SET synchronous_standby_names = 'standby'" \
      -c "ALTER SYSTEM SET synchronous_commit = 'on'" -c "SELECT pg_reload_conf()" >/dev/null
  fi
  local want=async i state=""
  [[ "$mode" == sync ]] && want=sync
  for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
    state=$(psql_node 1 -c "SELECT sync_state FROM pg_stat_replication
      WHERE application_name = 'standby' AND state = 'streaming'")
    [[ "$state" == "$want" ]] && break
    sleep 0.25
  done
  [[ "$state" == "$want" ]] || die "the standby did not reach sync_state $want (saw '$state')"
  trap - EXIT
  cmd_status
}

cmd_kill_primary() {
  load_state
  as_pg "$BIN/pg_ctl" -D "$STATE_DIR/node1" -m immediate -w stop >/dev/null
}

cmd_promote() {
  load_state
  as_pg "$BIN/pg_ctl" -D "$STATE_DIR/node2" -w -t "$WAIT_SECONDS" promote >/dev/null
  local i
  for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
    [[ "$(psql_node 2 -c 'SELECT pg_is_in_recovery()')" == f ]] && return 0
    sleep 0.25
  done
  die "node 2 did not leave recovery"
}

cmd_cut_replication() {
  load_state
  psql_node 2 -c "ALTER SYSTEM SET primary_conninfo = ''" -c "SELECT pg_reload_conf()" >/dev/null
  local i
  for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
    [[ "$(psql_node 2 -c 'SELECT count(*) FROM pg_stat_wal_receiver')" == 0 ]] && return 0
    sleep 0.25
  done
  die "node 2's WAL receiver did not stop"
}

cmd_wait_replayed() {
  load_state
  local target i
  target=$(psql_node 1 -c 'SELECT pg_current_wal_lsn()')
  for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
    [[ "$(psql_node 2 -c "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn")" == t ]] &&
      return 0
    sleep 0.25
  done
  die "node 2 did not replay up to $target"
}

cmd_env() {
  load_state
  local password
  password=$(cat "$STATE_DIR/password")
  printf "export DBLOCK_HA_PG_URL1='postgresql://%s:%s@127.0.0.1:%s/%s'\n" "$DB_USER" "$password" \
    "$PORT_1" "$DB_NAME"
  printf "export DBLOCK_HA_PG_URL2='postgresql://%s:%s@127.0.0.1:%s/%s'\n" "$DB_USER" "$password" \
    "$PORT_2" "$DB_NAME"
  printf "export DBLOCK_HA_PG_MULTI_URL='postgresql://%s:%s@127.0.0.1,127.0.0.1/%s?port=%s,%s&target_session_attrs=read-write'\n" \
    "$DB_USER" "$password" "$DB_NAME" "$PORT_1" "$PORT_2"
  printf "export DBLOCK_HA_PG_PORT1='%s'\nexport DBLOCK_HA_PG_PORT2='%s'\n" "$PORT_1" "$PORT_2"
  printf "export DBLOCK_HA_PG_DIR='%s'\n" "$STATE_DIR"
}

cmd_status() {
  load_state
  local n
  for n in 1 2; do
    if node_running "$n"; then
      printf 'postgresql node %s: running (%s), in recovery: %s\n' "$n" "$MODE" \
        "$(psql_node "$n" -c 'SELECT pg_is_in_recovery()' 2>/dev/null || echo '?')"
    else
      printf 'postgresql node %s: not running\n' "$n"
    fi
  done
}

case "${1:-}" in
  start) cmd_start "${2:-}" ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  status) cmd_status ;;
  kill-primary) cmd_kill_primary ;;
  promote) cmd_promote ;;
  cut-replication) cmd_cut_replication ;;
  wait-replayed) cmd_wait_replayed ;;
  *)
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
    exit 2
    ;;
esac
