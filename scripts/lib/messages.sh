# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts that speak to the user: messages on stderr with the script's name in
# front (the sourcing script sets script_name first), and its usage, which is the script's header
# comment from line 2 up to `set -euo`.
log() { printf '%s: %s\n' "$script_name" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
print_usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2; }
usage() {
  print_usage
  exit 2
}
