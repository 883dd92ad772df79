#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# format.spdx_script: scripts/spdx.sh on a scratch tree. --check lists the source files without
# an SPDX line and fails; a run adds the line in each file's comment syntax (after a shebang,
# keeping the file's mode), leaves migrations, test data, the docs' snippets and non-source files alone, and
# changes nothing when run again; --check then passes.
# Usage: spdx_script_check.sh SPDX_SH WORK_DIR
set -euo pipefail
spdx=$1
work=$2
rm -rf "$work"
mkdir -p "$work"/{lib,scripts,schema,migrations/postgresql,man,tests/fuzz/corpus/url,docs/snippets}
cd "$work"
printf '#include <string>\n' >lib/a.cpp
printf '#pragma once\n' >lib/a.hpp
printf '// SPDX-License-Identifier: Apache-2.0\nint x;\n' >lib/done.cpp
printf 'add_library(a a.cpp)\n' >lib/CMakeLists.txt
printf '#!/usr/bin/env bash\necho hi\n' >scripts/tool.sh
chmod 755 scripts/tool.sh
printf '#!/bin/sh\nexit 0\n' >scripts/run
printf 'CREATE TABLE t (k int);\n' >schema/postgresql.sql
printf 'CREATE TABLE t (k int);\n' >migrations/postgresql/0001_t.sql
printf '.TH A 1\n' >man/a.1
printf 'postgresql://x\n' >tests/fuzz/corpus/url/seed
printf '# Title\n' >docs/page.md
printf 'int main() {}\n' >docs/snippets/shown.cpp

fail() {
  echo "FAILED: $*" >&2
  exit 1
}
expect_first() {  # FILE LINE_NO TEXT
  [[ "$(sed -n "$2p" "$1")" == "$3" ]] || fail "$1 line $2 is '$(sed -n "$2p" "$1")', not '$3'"
}

if out=$(bash "$spdx" --check "$work" 2>&1); then fail "--check passed on files without the line"; fi
for f in lib/a.cpp lib/a.hpp lib/CMakeLists.txt scripts/tool.sh scripts/run schema/postgresql.sql man/a.1; do
  grep -qF "  $f" <<<"$out" || fail "--check does not list $f:
$out"
done
for f in lib/done.cpp migrations/postgresql/0001_t.sql tests/fuzz/corpus/url/seed docs/page.md \
  docs/snippets/shown.cpp; do
  if grep -qF "  $f" <<<"$out"; then fail "--check lists $f"; fi
done

bash "$spdx" "$work" >/dev/null
id='SPDX-License-Identifier: Apache-2.0'
expect_first lib/a.cpp 1 "// $id"
expect_first lib/a.cpp 2 '#include <string>'
expect_first lib/a.hpp 1 "// $id"
expect_first lib/CMakeLists.txt 1 "# $id"
expect_first scripts/tool.sh 1 '#!/usr/bin/env bash'
expect_first scripts/tool.sh 2 "# $id"
expect_first scripts/tool.sh 3 'echo hi'
[[ -x scripts/tool.sh ]] || fail "scripts/tool.sh lost its executable bit"
expect_first scripts/run 2 "# $id"
expect_first schema/postgresql.sql 1 "-- $id"
expect_first man/a.1 1 ".\\\" $id"
expect_first lib/done.cpp 2 'int x;'
expect_first migrations/postgresql/0001_t.sql 1 'CREATE TABLE t (k int);'
expect_first tests/fuzz/corpus/url/seed 1 'postgresql://x'
expect_first docs/page.md 1 '# Title'
expect_first docs/snippets/shown.cpp 1 'int main() {}'

before=$(cat lib/a.cpp scripts/tool.sh)
bash "$spdx" "$work" >/dev/null
[[ "$(cat lib/a.cpp scripts/tool.sh)" == "$before" ]] || fail "a second run changed the files"
bash "$spdx" --check "$work" || fail "--check fails after the lines were added"
echo "spdx.sh: --check, add, idempotent: ok"
