#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# package.systemd: the systemd examples load without a warning (systemd-analyze verify), with
# /usr/bin/dblock replaced by a program that exists here, and the template units instantiated.
# `dblock run` units treat 75 (busy) as success; `dblock lead` units a stop by SIGTERM (143).
# Usage: systemd_check.sh UNIT_DIR
set -euo pipefail
units=$1
analyze=$(command -v systemd-analyze) || {
  echo "systemd-analyze is missing: install systemd (scripts/install-deps.sh does)" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$units"/*; do
  name=${f##*/}
  name=${name/@./@example.}
  sed 's#/usr/bin/dblock#/bin/true#' "$f" >"$work/$name"
done
cd "$work"
out=$(SYSTEMD_LOG_LEVEL=warning "$analyze" verify --man=no ./*.service ./*.timer 2>&1) || {
  echo "$out" >&2
  exit 1
}
if [[ -n "$out" ]]; then
  echo "systemd-analyze verify warns:" >&2
  echo "$out" >&2
  exit 1
fi
grep -q '^SuccessExitStatus=75$' "dblock-run@example.service" ||
  { echo "dblock-run@.service does not treat 75 (busy) as success" >&2; exit 1; }
grep -q '^SuccessExitStatus=143$' "dblock-lead@example.service" ||
  { echo "dblock-lead@.service does not treat a stop by SIGTERM (143) as success" >&2; exit 1; }
ls
