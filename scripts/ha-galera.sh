#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A throwaway MariaDB Galera cluster of three nodes on loopback ports, for tests/ha.
#
# Usage:
#   scripts/ha-galera.sh start        # bootstraps node 1, joins nodes 2 and 3 (rsync SST)
#   scripts/ha-galera.sh stop         # stops every node and removes the state directory
#   scripts/ha-galera.sh env          # prints `export ...` lines; use with eval
#   scripts/ha-galera.sh kill N       # SIGKILL node N (1-3)
#   scripts/ha-galera.sh rejoin N     # starts node N again; returns once it is Synced
#   scripts/ha-galera.sh status
#
# Each node gets four free ports on 127.0.0.1: client, group communication (gcomm), incremental
# state transfer (IST) and snapshot state transfer (SST). Everything (data, sockets, logs) lives
# in ${DBLOCK_HA_GALERA_DIR:-${TMPDIR:-/tmp}/dblock-ha-galera-$(id -u)}. When run as root the
# nodes run as the `mysql` user (rsync SST refuses to run as root).
#
# The env command prints DBLOCK_HA_GALERA_URL1..3 (mysql:// URLs of the nodes, one user
# `dblock` with all privileges, database dblock_test).
set -euo pipefail

readonly STATE_DIR="${DBLOCK_HA_GALERA_DIR:-${TMPDIR:-/tmp}/dblock-ha-galera-$(id -u)}"
readonly MARKER="$STATE_DIR/.dblock-ha-galera"
readonly NODES=3
readonly PROVIDER=${DBLOCK_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
readonly DB_NAME=dblock_test
readonly DB_USER=dblock
readonly WAIT_SECONDS=120

# shellcheck disable=SC2034 # read by lib/messages.sh
script_name=ha-galera
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/messages.sh"
is_root() { ((EUID == 0)); }

find_prog() {
  local name dir
  for name in "$@"; do
    command -v "$name" 2>/dev/null && return 0
    for dir in /usr/sbin /usr/local/sbin /sbin; do
      [[ -x "$dir/$name" ]] && { printf '%s\n' "$dir/$name"; return 0; }
    done
  done
  return 1
}

source "$(dirname -- "${BASH_SOURCE[0]}")/lib/ports.sh"

node_dir() { printf '%s/node%s\n' "$STATE_DIR" "$1"; }
node_pid() {
  local pid comm
  pid=$(cat "$(node_dir "$1")/mariadbd.pid" 2>/dev/null) || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ "$comm" =~ ^(mariadbd|mysqld)$ ]] || return 1
  printf '%s\n' "$pid"
}

client() {
  local n=$1
  shift
  "$(find_prog mariadb mysql)" --no-defaults --socket="$(node_dir "$n")/mariadbd.sock" -u root \
    --batch --skip-column-names "$@"
}

# Prints node N's wsrep_local_state_comment (Synced, Joining, ...) or nothing.
node_state() {
  client "$1" -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2 || true
}

# Writes node N's option file from the ports chosen at start.
write_config() {
  local n=$1 dir peers="" i
  dir=$(node_dir "$n")
  # shellcheck source=/dev/null
  . "$STATE_DIR/ports"
  for ((i = 1; i <= NODES; i++)); do
    local g="GCOMM_$i"
    peers+="${peers:+,}127.0.0.1:${!g}"
  done
  local port="PORT_$n" gcomm="GCOMM_$n" ist="IST_$n" sst="SST_$n"
  cat >"$dir/my.cnf" <<CNF
[mariadbd]
datadir=$dir/data
socket=$dir/mariadbd.sock
pid-file=$dir/mariadbd.pid
log-error=$dir/mariadbd.err
port=${!port}
bind-address=127.0.0.1
skip-name-resolve
max-connections=300
innodb-buffer-pool-size=64M
innodb-log-file-size=48M
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=$PROVIDER
wsrep_cluster_name=dblock_ha
wsrep_cluster_address=gcomm://$peers
wsrep_node_name=node$n
wsrep_node_address=127.0.0.1:${!gcomm}
wsrep_node_incoming_address=127.0.0.1:${!port}
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:${!gcomm};ist.recv_addr=127.0.0.1:${!ist};gcache.size=128M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:${!sst}
[sst]
CNF
  is_root && chown mysql: "$dir/my.cnf"
  return 0
}

# Starts node N in the background (bootstrapping a new cluster with `new`).
launch() {
  local n=$1 mode=${2:-} dir server args
  dir=$(node_dir "$n")
  server=$(find_prog mariadbd mysqld) || die "mariadbd not found (run scripts/install-deps.sh)"
  args=(--defaults-file="$dir/my.cnf")
  is_root && args+=(--user=mysql)
  [[ "$mode" == new ]] && args+=(--wsrep-new-cluster)
  (cd "$STATE_DIR" && exec "$server" "${args[@]}" </dev/null >>"$dir/mariadbd.out" 2>&1) &
  echo $! >"$dir/launched.pid"
}

wait_synced() {
  local n=$1 i
  for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
    [[ "$(node_state "$n")" == Synced ]] && return 0
    # A server that died on the way (its pid file appears only after a state transfer) stops
    # the wait.
    if ! kill -0 "$(cat "$(node_dir "$n")/launched.pid")" 2>/dev/null; then
      log "node $n exited"
      break
    fi
    sleep 0.25
  done
  log "---- last lines of node $n's log ----"
  tail -n 40 "$(node_dir "$n")/mariadbd.err" "$(node_dir "$n")/mariadbd.out" >&2 || true
  die "node $n did not reach Synced within ${WAIT_SECONDS}s"
}

stop_node() {
  local n=$1 pid i
  pid=$(node_pid "$n") || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    node_pid "$n" >/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cmd_stop() {
  [[ -e "$STATE_DIR" ]] || return 0
  [[ -f "$MARKER" ]] || die "$STATE_DIR was not created by ha-galera.sh; refusing to touch it"
  local n
  # Last node first, so the others leave the cluster in order.
  for ((n = NODES; n >= 1; n--)); do stop_node "$n"; done
  rm -rf -- "$STATE_DIR"
}

cmd_start() {
  is_root && { id mysql >/dev/null 2>&1 || die "no mysql user (install mariadb-server)"; }
  [[ -r "$PROVIDER" ]] || die "no Galera provider at $PROVIDER (run scripts/install-deps.sh)"
  command -v rsync >/dev/null || die "rsync is needed for SST (run scripts/install-deps.sh)"
  cmd_stop
  mkdir -p -- "$(dirname -- "$STATE_DIR")"
  mkdir -m 755 -- "$STATE_DIR"
  : >"$MARKER"
  trap 'rc=$?; if ((rc != 0)); then log "start failed; stopping"; for n in 3 2 1; do stop_node $n; done; fi' EXIT

  local n install password
  install=$(find_prog mariadb-install-db mysql_install_db) || die "mariadb-install-db not found"
  password=$(head -c 64 /dev/urandom | LC_ALL=C tr -dc 'A-Za-z0-9' | head -c 20)
  (umask 077 && printf '%s\n' "$password" >"$STATE_DIR/password")
  {
    for ((n = 1; n <= NODES; n++)); do
      for kind in PORT GCOMM IST SST; do
        pick_port
        printf '%s_%s=%s\n' "$kind" "$n" "$PORT"
      done
    done
  } >"$STATE_DIR/ports"
  for ((n = 1; n <= NODES; n++)); do
    local dir
    dir=$(node_dir "$n")
    mkdir -m 755 "$dir"
    ((n == 1)) || mkdir -m 750 "$dir/data"
    is_root && chown -R mysql: "$dir"
    write_config "$n"
  done
  # The nodes run as mysql: a parent of the state directory that others may not search (a
  # TMPDIR made with mode 700, say) would fail mariadb-install-db with a message about the data
  # directory only.
  if is_root && ! runuser -u mysql -- test -w "$(node_dir 1)"; then
    die "the mysql user cannot reach $STATE_DIR (a parent directory is not searchable by others);" \
      "set DBLOCK_HA_GALERA_DIR (or TMPDIR) to a directory under one that is, such as /tmp"
  fi

  dir=$(node_dir 1)
  local install_args=(--no-defaults --datadir="$dir/data" --auth-root-authentication-method=socket
    --skip-test-db --skip-name-resolve)
  if is_root; then install_args+=(--user=mysql); else install_args+=(--auth-root-socket-user=root); fi
  (cd "$STATE_DIR" && "$install" "${install_args[@]}") >"$dir/install.log" 2>&1 ||
    { tail -n 20 "$dir/install.log" >&2; die "mariadb-install-db failed"; }

  launch 1 new
  wait_synced 1
  client 1 <<SQL || die "user/database setup failed"
CREATE DATABASE $DB_NAME CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$password';
GRANT ALL ON *.* TO '$DB_USER'@'127.0.0.1' WITH GRANT OPTION;
SQL
  # Joiners start from an empty data directory and receive node 1's by SST, one at a time.
  for ((n = 2; n <= NODES; n++)); do
    launch "$n"
    wait_synced "$n"
  done
  trap - EXIT
  cmd_status
}

cmd_kill() {
  local n=$1 pid
  pid=$(node_pid "$n") || die "node $n is not running"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

cmd_rejoin() {
  local n=$1
  node_pid "$n" >/dev/null && die "node $n is running"
  launch "$n"
  wait_synced "$n"
}

cmd_env() {
  [[ -r "$STATE_DIR/ports" ]] || die "no cluster in $STATE_DIR (run: scripts/ha-galera.sh start)"
  local password n
  password=$(cat "$STATE_DIR/password")
  # shellcheck source=/dev/null
  . "$STATE_DIR/ports"
  for ((n = 1; n <= NODES; n++)); do
    local port="PORT_$n"
    printf "export DBLOCK_HA_GALERA_URL%s='mysql://%s:%s@127.0.0.1:%s/%s'\n" "$n" "$DB_USER" \
      "$password" "${!port}" "$DB_NAME"
  done
  printf "export DBLOCK_HA_GALERA_DIR='%s'\n" "$STATE_DIR"
}

cmd_status() {
  local n pid
  for ((n = 1; n <= NODES; n++)); do
    if pid=$(node_pid "$n"); then
      printf 'galera node %s: pid %s, %s, cluster size %s\n' "$n" "$pid" "$(node_state "$n")" \
        "$(client "$n" -e "SHOW STATUS LIKE 'wsrep_cluster_size'" 2>/dev/null | cut -f2)"
    else
      printf 'galera node %s: not running\n' "$n"
    fi
  done
}

check_node() { [[ "${1:-}" =~ ^[1-3]$ ]] || die "node must be 1, 2 or 3"; }

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  status) cmd_status ;;
  kill) check_node "${2:-}" && cmd_kill "$2" ;;
  rejoin) check_node "${2:-}" && cmd_rejoin "$2" ;;
  *)
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
    exit 2
    ;;
esac
