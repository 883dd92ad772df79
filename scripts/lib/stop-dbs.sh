# SPDX-License-Identifier: Apache-2.0
# Sourced by test.sh and bench.sh from the checkout's root: the throwaway servers a run starts
# (scripts/dev-db.sh start, after setting started_dbs=1) are stopped on every way out, Ctrl-C
# and kill included; the run keeps its exit status, or ends with 1 when stopping them failed.
started_dbs=0
stop_dbs() {
  local rc=$?
  if ((started_dbs)); then
    started_dbs=0
    scripts/dev-db.sh stop || rc=1
  fi
  exit "$rc"
}
trap stop_dbs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
