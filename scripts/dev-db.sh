#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Throwaway PostgreSQL and MariaDB servers for development and tests.
#
# Usage:
#   scripts/dev-db.sh start [--pg-only|--mysql-only]
#   scripts/dev-db.sh stop
#   scripts/dev-db.sh env       # prints `export ...` lines; use with eval
#   scripts/dev-db.sh status
#
# Both servers listen on free random ports on 127.0.0.1 and keep all their
# files (data, sockets, logs) in one state directory:
#   ${DBLOCK_DEV_DB_DIR:-${TMPDIR:-/tmp}/dblock-dev-db-$(id -u)}
# `start` recreates it from scratch, `stop` stops the servers and removes it.
# No system service is involved.
#
# When run as root the servers run as the `postgres` and `mysql` system users
# (created by the Debian packages); otherwise as the current user.
#
# Optional overrides:
#   DBLOCK_PG_BINDIR   PostgreSQL binaries (default: highest version found in
#                      /usr/lib/postgresql/<ver>/bin)
#   DBLOCK_DEV_DB_MYSQL_ARGS
#                      extra mariadbd options, space-separated, after the
#                      defaults (e.g. --innodb-buffer-pool-size=1G)
set -euo pipefail

readonly STATE_DIR="${DBLOCK_DEV_DB_DIR:-${TMPDIR:-/tmp}/dblock-dev-db-$(id -u)}"
readonly MARKER="$STATE_DIR/.dblock-dev-db"
readonly PASSWORD_FILE="$STATE_DIR/password"
readonly PG_DIR="$STATE_DIR/pg"
readonly MYSQL_DIR="$STATE_DIR/mysql"

readonly DB_NAME=dblock_test
readonly DB_USER=dblock

# Longest usable unix socket path (sun_path is 108 bytes including the NUL).
readonly MAX_SOCKET_PATH=107

# How long to wait for a server to start or stop, in seconds.
readonly WAIT_SECONDS=60

# shellcheck disable=SC2034 # read by lib/messages.sh
script_name=dev-db
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/messages.sh"

is_root() { ((EUID == 0)); }

# Run a command as the given system user when we are root, else as ourselves.
# Runs from the state directory so the target user never needs access to the
# caller's working directory.
as_user() {
  local user=$1
  shift
  if is_root; then
    (cd "$STATE_DIR" && runuser -u "$user" -- "$@")
  else
    (cd "$STATE_DIR" && "$@")
  fi
}

# Print the last lines of a log file (if readable) to stderr.
show_log() {
  local file=$1
  if [[ -r "$file" ]]; then
    log "---- last lines of $file ----"
    tail -n 40 "$file" >&2 || true
    log "---- end of $file ----"
  else
    log "(no log at $file)"
  fi
}

# Find a program in PATH or in the sbin directories that normal users'
# PATH often lacks.
find_prog() {
  local name dir
  for name in "$@"; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
    for dir in /usr/sbin /usr/local/sbin /sbin; do
      if [[ -x "$dir/$name" ]]; then
        printf '%s\n' "$dir/$name"
        return 0
      fi
    done
  done
  return 1
}

# Directory with the PostgreSQL server binaries (highest installed version).
pg_bindir() {
  if [[ -n "${DBLOCK_PG_BINDIR:-}" ]]; then
    [[ -x "$DBLOCK_PG_BINDIR/initdb" ]] || die "no initdb in DBLOCK_PG_BINDIR=$DBLOCK_PG_BINDIR"
    printf '%s\n' "$DBLOCK_PG_BINDIR"
    return 0
  fi
  local ver
  ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null |
    grep -E '^[0-9]+(\.[0-9]+)?$' | sort -V | tail -n 1 || true)
  if [[ -z "$ver" || ! -x "/usr/lib/postgresql/$ver/bin/initdb" ]]; then
    die "no PostgreSQL server found in /usr/lib/postgresql/<version>/bin (run scripts/install-deps.sh)"
  fi
  printf '%s\n' "/usr/lib/postgresql/$ver/bin"
}

# Random alphanumeric password of 20 characters.
random_password() {
  local pw=""
  while ((${#pw} < 20)); do
    pw+=$(head -c 64 /dev/urandom | LC_ALL=C tr -dc 'A-Za-z0-9')
  done
  printf '%s\n' "${pw:0:20}"
}

source "$(dirname -- "${BASH_SOURCE[0]}")/lib/ports.sh"

check_socket_path() {
  local path=$1
  if ((${#path} > MAX_SOCKET_PATH)); then
    die "socket path too long (${#path} > $MAX_SOCKET_PATH bytes): $path; set DBLOCK_DEV_DB_DIR to a shorter directory"
  fi
}

# Make a server subdirectory owned by the user the server runs as, and check
# that user can actually reach it (every parent must be traversable). It is
# world-readable so logs and sockets can be reached by the caller; the data
# directories inside stay private.
make_server_dir() {
  local dir=$1 user=$2
  mkdir -m 755 "$dir"
  if is_root; then
    chown "$user:" "$dir"
    if ! runuser -u "$user" -- test -w "$dir" 2>/dev/null; then
      die "user '$user' cannot reach $dir (a parent directory is not traversable); set DBLOCK_DEV_DB_DIR elsewhere, e.g. under /tmp"
    fi
  fi
}

# True when the pid is alive and its command name matches the pattern.
pid_is() {
  local pid=$1 pattern=$2 comm
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ "$comm" =~ $pattern ]]
}

readonly PG_COMM='^(postgres|postmaster)$'
readonly MYSQL_COMM='^(mariadbd|mysqld)$'

pg_pid() {
  local pid
  pid=$(head -n 1 "$PG_DIR/data/postmaster.pid" 2>/dev/null) || return 1
  pid_is "$pid" "$PG_COMM" || return 1
  printf '%s\n' "$pid"
}

mysql_pid() {
  local pid
  pid=$(head -n 1 "$MYSQL_DIR/mariadbd.pid" 2>/dev/null) || return 1
  pid_is "$pid" "$MYSQL_COMM" || return 1
  printf '%s\n' "$pid"
}

# Send signals to a process until it exits: each (signal, seconds) pair is
# tried in turn. Returns non-zero if it is still alive at the end.
stop_pid() {
  local pid=$1 pattern=$2
  shift 2
  local sig secs i
  while (($# >= 2)); do
    sig=$1 secs=$2
    shift 2
    pid_is "$pid" "$pattern" || return 0
    kill "-$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < secs * 10; i++)); do
      pid_is "$pid" "$pattern" || return 0
      sleep 0.1
    done
  done
  ! pid_is "$pid" "$pattern"
}

# ---------------------------------------------------------------- PostgreSQL

start_pg() {
  local bin user port sock data logfile pwfile
  bin=$(pg_bindir)
  user=$(id -un)
  is_root && user=postgres
  data="$PG_DIR/data"
  sock="$PG_DIR/run"
  logfile="$PG_DIR/postgresql.log"
  pwfile="$PG_DIR/pwfile"
  check_socket_path "$sock/.s.PGSQL.65535"

  make_server_dir "$PG_DIR" "$user"
  as_user "$user" mkdir -m 755 "$sock"

  # Superuser password file for initdb; removed right after.
  (umask 077 && cat "$PASSWORD_FILE" >"$pwfile")
  is_root && chown "$user:" "$pwfile"
  if ! as_user "$user" "$bin/initdb" -D "$data" -U postgres --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C --no-sync >"$PG_DIR/initdb.log" 2>&1; then
    rm -f "$pwfile"
    show_log "$PG_DIR/initdb.log"
    die "PostgreSQL initdb failed"
  fi
  rm -f "$pwfile"

  pick_port
  port=$PORT
  if ! as_user "$user" "$bin/pg_ctl" -D "$data" -l "$logfile" -w -t "$WAIT_SECONDS" start \
    -o "-p $port -k '$sock' -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=128MB" \
    >"$PG_DIR/pg_ctl.log" 2>&1; then
    show_log "$PG_DIR/pg_ctl.log"
    show_log "$logfile"
    die "PostgreSQL did not start"
  fi

  local password
  password=$(cat "$PASSWORD_FILE")
  # SQL goes through stdin so the password never shows up in `ps`.
  # Server-only builds (scripts/pg-versions.sh) have no psql: the client package's one talks to
  # every supported server version.
  local psql="$bin/psql"
  [[ -x "$psql" ]] || psql=$(command -v psql) || die "no psql in $bin or on PATH"
  if ! "$psql" -X -q -v ON_ERROR_STOP=1 -h "$sock" -p "$port" -U postgres -d postgres \
    >"$PG_DIR/setup.log" 2>&1 <<SQL; then
CREATE ROLE $DB_USER LOGIN SUPERUSER PASSWORD '$password';
CREATE DATABASE $DB_NAME OWNER $DB_USER;
SQL
    show_log "$PG_DIR/setup.log"
    show_log "$logfile"
    die "PostgreSQL setup (role/database) failed"
  fi

  {
    printf 'PG_PORT=%q\n' "$port"
    printf 'PG_BIN=%q\n' "$bin"
    printf 'PG_OS_USER=%q\n' "$user"
  } >"$STATE_DIR/pg.state"
  printf 'postgresql: 127.0.0.1:%s (pid %s, data %s)\n' "$port" "$(pg_pid || echo '?')" "$data"
}

# ------------------------------------------------------------------- MariaDB

# Arguments for mariadbd; shared by `start` and the exported restart hint.
mysql_server_args() {
  local port=$1 user=$2
  local args=(
    --no-defaults
    --datadir="$MYSQL_DIR/data"
    --socket="$MYSQL_DIR/mariadbd.sock"
    --port="$port"
    --bind-address=127.0.0.1
    --pid-file="$MYSQL_DIR/mariadbd.pid"
    --log-error="$MYSQL_DIR/mariadbd.err"
    --skip-name-resolve
    --max-connections=500
    --innodb-buffer-pool-size=256M
    --skip-log-bin
    --tmpdir="$MYSQL_DIR/tmp"
  )
  local extra=()
  read -r -a extra <<<"${DBLOCK_DEV_DB_MYSQL_ARGS:-}"
  args+=("${extra[@]}")
  is_root && args+=(--user="$user")
  printf '%s\n' "${args[@]}"
}

# Run the mariadb client as the MariaDB root account over the unix socket.
# The socket-authenticated admin account is `root` when we are root, else the
# account named after the current user (see --auth-root-socket-user).
mysql_admin_client() {
  local client admin
  client=$(find_prog mariadb mysql) || die "mariadb client not found"
  admin=root
  is_root || admin=$(id -un)
  "$client" --no-defaults --socket="$MYSQL_DIR/mariadbd.sock" -u "$admin" "$@"
}

start_mysql() {
  local server install admin_tool user port sock pid i
  server=$(find_prog mariadbd mysqld) ||
    die "mariadbd not found (run scripts/install-deps.sh)"
  install=$(find_prog mariadb-install-db mysql_install_db) ||
    die "mariadb-install-db not found (run scripts/install-deps.sh)"
  admin_tool=$(find_prog mariadb-admin mysqladmin) ||
    die "mariadb-admin not found (run scripts/install-deps.sh)"
  user=$(id -un)
  is_root && user=mysql
  sock="$MYSQL_DIR/mariadbd.sock"
  check_socket_path "$sock"

  make_server_dir "$MYSQL_DIR" "$user"
  # Its temporary files in a directory of its own: the caller's TMPDIR may be one the server's
  # user cannot write to (InnoDB then fails to start).
  make_server_dir "$MYSQL_DIR/tmp" "$user"

  local install_args=(
    --no-defaults
    --datadir="$MYSQL_DIR/data"
    --tmpdir="$MYSQL_DIR/tmp"
    --auth-root-authentication-method=socket
    --skip-test-db
    --skip-name-resolve
  )
  if is_root; then
    install_args+=(--user="$user")
  else
    # Lets the current OS user log in as a MariaDB admin over the socket.
    install_args+=(--auth-root-socket-user="$user")
  fi
  # mariadb-install-db runs as root with --user (it chowns the data dir
  # itself), or as the current user.
  if ! (cd "$STATE_DIR" && "$install" "${install_args[@]}") >"$MYSQL_DIR/install.log" 2>&1; then
    show_log "$MYSQL_DIR/install.log"
    die "mariadb-install-db failed"
  fi

  pick_port
  port=$PORT
  local args
  mapfile -t args < <(mysql_server_args "$port" "$user")
  # As root, mariadbd switches to --user itself. Output goes to files so the
  # server never holds the caller's stdout/stderr (e.g. a CI pipe) open.
  (cd "$STATE_DIR" && exec "$server" "${args[@]}" </dev/null >>"$MYSQL_DIR/mariadbd.out" 2>&1) &
  pid=$!

  for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
    if "$admin_tool" --no-defaults --socket="$sock" --connect-timeout=2 ping >/dev/null 2>&1; then
      break
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      show_log "$MYSQL_DIR/mariadbd.err"
      show_log "$MYSQL_DIR/mariadbd.out"
      die "MariaDB exited during startup"
    fi
    sleep 0.25
  done
  if ((i >= WAIT_SECONDS * 4)); then
    show_log "$MYSQL_DIR/mariadbd.err"
    die "MariaDB did not answer within ${WAIT_SECONDS}s"
  fi

  local password
  password=$(cat "$PASSWORD_FILE")
  # Tests create databases and kill connections, hence ALL ON *.* with GRANT.
  if ! mysql_admin_client --batch >"$MYSQL_DIR/setup.log" 2>&1 <<SQL; then
CREATE DATABASE $DB_NAME CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$password';
CREATE USER '$DB_USER'@'localhost' IDENTIFIED BY '$password';
GRANT ALL ON *.* TO '$DB_USER'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL ON *.* TO '$DB_USER'@'localhost' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
    show_log "$MYSQL_DIR/setup.log"
    show_log "$MYSQL_DIR/mariadbd.err"
    die "MariaDB setup (user/database) failed"
  fi

  {
    printf 'MYSQL_PORT=%q\n' "$port"
    printf 'MYSQL_SERVER=%q\n' "$server"
    printf 'MYSQL_OS_USER=%q\n' "$user"
  } >"$STATE_DIR/mysql.state"
  printf '%s\n' "${args[@]}" >"$STATE_DIR/mysql.args"
  printf 'mariadb:    127.0.0.1:%s (pid %s, data %s)\n' "$port" "$(mysql_pid || echo "$pid")" "$MYSQL_DIR/data"
}

# ------------------------------------------------------------------ commands

# Stop whatever servers run from the state directory (leaves the directory).
stop_servers() {
  local pid ok=0
  if pid=$(pg_pid); then
    # SIGINT = fast shutdown, SIGQUIT = immediate, then SIGKILL.
    stop_pid "$pid" "$PG_COMM" INT "$WAIT_SECONDS" QUIT 10 KILL 5 ||
      {
        log "PostgreSQL (pid $pid) did not stop"
        ok=1
      }
  fi
  if pid=$(mysql_pid); then
    stop_pid "$pid" "$MYSQL_COMM" TERM "$WAIT_SECONDS" KILL 5 ||
      {
        log "MariaDB (pid $pid) did not stop"
        ok=1
      }
  fi
  return "$ok"
}

# Refuse to operate on a directory this script did not create.
check_ours() {
  [[ -f "$MARKER" ]] ||
    die "$STATE_DIR exists but was not created by dev-db.sh; refusing to touch it"
}

cmd_stop() {
  if [[ ! -e "$STATE_DIR" && ! -L "$STATE_DIR" ]]; then
    return 0
  fi
  check_ours
  stop_servers || die "could not stop the servers in $STATE_DIR"
  rm -rf -- "$STATE_DIR"
}

# Set when `start` is under way, so a failure stops what was started.
STARTING=0
on_start_exit() {
  local rc=$?
  if ((STARTING && rc != 0)); then
    log "start failed; stopping any server it started (logs kept in $STATE_DIR)"
    stop_servers || true
  fi
  exit "$rc"
}

cmd_start() {
  local want_pg=1 want_mysql=1 arg
  for arg in "$@"; do
    case "$arg" in
      --pg-only) want_mysql=0 ;;
      --mysql-only) want_pg=0 ;;
      *) die "unknown start option: $arg" ;;
    esac
  done
  ((want_pg || want_mysql)) || die "--pg-only and --mysql-only exclude each other"

  if is_root; then
    command -v runuser >/dev/null 2>&1 || die "runuser (util-linux) is needed when running as root"
  fi

  # A previous instance from the same directory is stopped and wiped first.
  cmd_stop

  mkdir -p -- "$(dirname -- "$STATE_DIR")"
  # Plain mkdir (not -p): fails if someone else created it in the meantime.
  mkdir -m 755 -- "$STATE_DIR"
  : >"$MARKER"

  STARTING=1
  trap on_start_exit EXIT

  (umask 077 && random_password >"$PASSWORD_FILE")

  if ((want_pg)); then start_pg; fi
  if ((want_mysql)); then start_mysql; fi
  STARTING=0
}

# Print one `export NAME='value'` line, single-quoting the value.
emit() {
  local name=$1 value=$2
  printf "export %s='%s'\n" "$name" "${value//\'/\'\\\'\'}"
}

# Print `export` lines for the running servers.
cmd_env() {
  local any=0 password=""
  [[ -r "$PASSWORD_FILE" ]] && password=$(cat "$PASSWORD_FILE")
  if pg_pid >/dev/null && [[ -r "$STATE_DIR/pg.state" ]]; then
    local PG_PORT PG_BIN PG_OS_USER
    # shellcheck source=/dev/null
    . "$STATE_DIR/pg.state"
    emit DBLOCK_TEST_PG_URL "postgresql://$DB_USER:$password@127.0.0.1:$PG_PORT/$DB_NAME"
    emit DBLOCK_TEST_PG_PORT "$PG_PORT"
    emit DBLOCK_TEST_PG_SOCKET_DIR "$PG_DIR/run"
    emit DBLOCK_TEST_PG_BIN "$PG_BIN"
    emit DBLOCK_TEST_PG_DATA "$PG_DIR/data"
    emit DBLOCK_TEST_PG_LOG "$PG_DIR/postgresql.log"
    emit DBLOCK_TEST_PG_OS_USER "$PG_OS_USER"
    # shellcheck disable=SC2016 # the $VARs are meant literally here
    printf '# restart: "$DBLOCK_TEST_PG_BIN/pg_ctl" -D "$DBLOCK_TEST_PG_DATA" -l "$DBLOCK_TEST_PG_LOG" -w restart  (as %s)\n' "$PG_OS_USER"
    any=1
  fi
  if mysql_pid >/dev/null && [[ -r "$STATE_DIR/mysql.state" ]]; then
    local MYSQL_PORT MYSQL_SERVER MYSQL_OS_USER
    # shellcheck source=/dev/null
    . "$STATE_DIR/mysql.state"
    emit DBLOCK_TEST_MYSQL_URL "mysql://$DB_USER:$password@127.0.0.1:$MYSQL_PORT/$DB_NAME"
    emit DBLOCK_TEST_MYSQL_PORT "$MYSQL_PORT"
    emit DBLOCK_TEST_MYSQL_SOCKET "$MYSQL_DIR/mariadbd.sock"
    emit DBLOCK_TEST_MYSQL_DATA "$MYSQL_DIR/data"
    emit DBLOCK_TEST_MYSQL_BIN "$MYSQL_SERVER"
    emit DBLOCK_TEST_MYSQL_PID_FILE "$MYSQL_DIR/mariadbd.pid"
    emit DBLOCK_TEST_MYSQL_LOG "$MYSQL_DIR/mariadbd.err"
    emit DBLOCK_TEST_MYSQL_OS_USER "$MYSQL_OS_USER"
    # The exact mariadbd arguments, one per line, for restarts.
    emit DBLOCK_TEST_MYSQL_ARGS_FILE "$STATE_DIR/mysql.args"
    # shellcheck disable=SC2016 # the $VARs are meant literally here
    printf '# restart: kill "$(cat "$DBLOCK_TEST_MYSQL_PID_FILE")"; then run "$DBLOCK_TEST_MYSQL_BIN" with the arguments in "$DBLOCK_TEST_MYSQL_ARGS_FILE" in the background\n'
    any=1
  fi
  if ((any)); then
    emit DBLOCK_DEV_DB_DIR "$STATE_DIR"
  else
    log "no dev databases running in $STATE_DIR (run: scripts/dev-db.sh start)"
    return 1
  fi
}

cmd_status() {
  local pid port
  printf 'state dir:  %s%s\n' "$STATE_DIR" "$([[ -d "$STATE_DIR" ]] || echo ' (absent)')"
  if pid=$(pg_pid); then
    port=$(sed -n 's/^PG_PORT=//p' "$STATE_DIR/pg.state" 2>/dev/null || true)
    printf 'postgresql: running, pid %s, 127.0.0.1:%s\n' "$pid" "${port:-?}"
  else
    printf 'postgresql: not running\n'
  fi
  if pid=$(mysql_pid); then
    port=$(sed -n 's/^MYSQL_PORT=//p' "$STATE_DIR/mysql.state" 2>/dev/null || true)
    printf 'mariadb:    running, pid %s, 127.0.0.1:%s\n' "$pid" "${port:-?}"
  else
    printf 'mariadb:    not running\n'
  fi
}

main() {
  local cmd=${1:-}
  (($# > 0)) && shift
  case "$cmd" in
    start) cmd_start "$@" ;;
    stop) cmd_stop ;;
    env) cmd_env ;;
    status) cmd_status ;;
    -h | --help | help) print_usage ;;
    *) usage ;;
  esac
}

main "$@"
