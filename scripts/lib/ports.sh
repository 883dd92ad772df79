# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts that start throwaway servers (dev-db.sh, ha-galera.sh, ha-postgres.sh):
# free loopback ports for them. The sourcing script defines die().
# Ports already handed out by this run, so PostgreSQL and MariaDB never get
# the same one.
PICKED_PORTS=" "

# True when something accepts connections (or listens) on the loopback port.
port_in_use() {
  local port=$1
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    return 0
  fi
  if command -v ss >/dev/null 2>&1 &&
    [[ -n "$(ss -Htln "sport = :$port" 2>/dev/null || true)" ]]; then
    return 0
  fi
  return 1
}

# Set PORT to a random free TCP port from 10000 up to the kernel's ephemeral
# range (not a command substitution, so PICKED_PORTS survives). Below that
# range, no outgoing connection can take the port between the check and the
# server's bind (seen with tests that open many connections at once).
PORT=
pick_port() {
  local attempt port low=32768
  read -r low _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  ((low > 11000)) || low=32768
  for ((attempt = 0; attempt < 100; attempt++)); do
    port=$((10000 + (RANDOM * 32768 + RANDOM) % (low - 10000)))
    [[ "$PICKED_PORTS" == *" $port "* ]] && continue
    port_in_use "$port" && continue
    PICKED_PORTS+="$port "
    PORT=$port
    return 0
  done
  die "could not find a free port in 10000-$((low - 1)); free some ports or stop old servers"
}
