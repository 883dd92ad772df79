#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gives every source file of the checkout an SPDX licence line as its first line (after a
# shebang), in the file's own comment syntax:
#   // SPDX-License-Identifier: Apache-2.0      C++ (.cpp .hpp .h .cc, .hpp.in)
#   # SPDX-License-Identifier: Apache-2.0       CMake, shell, Python, bash completion, systemd units
#   -- SPDX-License-Identifier: Apache-2.0      SQL
#   .\" SPDX-License-Identifier: Apache-2.0     man pages
#
# Usage: scripts/spdx.sh [--check] [DIR]
#   (default)  add the line to each file that lacks it, and list the files changed
#   --check    change nothing; list the files without it and exit 1 if there are any (the ctest
#              test format.spdx runs this)
#   DIR        the checkout to work on (default: the one this script is in)
#
# Left alone: migrations/ (the migrator records each migration's checksum, so a new first line
# would make every applied migration look changed), test data (tests/fuzz/corpus), the docs'
# snippets (docs/snippets: shown whole on the pages and in the README, as a reader copies them)
# and files that are not source (Markdown, .clang-format, .gitignore, sanitizer suppressions).
set -euo pipefail

mode=add
if [[ "${1:-}" == "--check" ]]; then
  mode=check
  shift
fi
root=${1:-$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)}
cd -- "$root"

readonly kId='SPDX-License-Identifier: Apache-2.0'

# The comment that starts the SPDX line of `path`, or nothing when the file is not source.
comment_for() {
  local path=$1 name=${1##*/}
  case "$path" in
    migrations/* | */migrations/* | tests/fuzz/corpus/* | docs/snippets/*) return ;;
  esac
  case "$name" in
    *.cpp | *.hpp | *.h | *.cc | *.hpp.in) echo '//' ;;
    CMakeLists.txt | *.cmake | *.cmake.in) echo '#' ;;
    *.sh | *.py | *.bash | *.service | *.timer) echo '#' ;;
    *.sql) echo '--' ;;
    *.[1-8]) echo '.\"' ;;
    *.*) ;;
    *)
      # Extension-less programs and the completion script: those that start with a shebang,
      # and what lives in contrib/bash-completion.
      if [[ "$path" == contrib/bash-completion/* ]] || head -c 2 -- "$path" | grep -q '^#!'; then
        echo '#'
      fi
      ;;
  esac
}

# Whether the SPDX line is where it belongs: line 1, or line 2 after a shebang.
has_line() {
  local path=$1 first second
  first=$(sed -n 1p -- "$path")
  second=$(sed -n 2p -- "$path")
  if [[ "$first" == '#!'* ]]; then
    [[ "$second" == *"$kId"* ]]
  else
    [[ "$first" == *"$kId"* ]]
  fi
}

add_line() {
  local path=$1 comment=$2 tmp
  tmp=$(mktemp "${path}.spdx.XXXXXX")
  if [[ "$(sed -n 1p -- "$path")" == '#!'* ]]; then
    { sed -n 1p -- "$path"; printf '%s %s\n' "$comment" "$kId"; sed 1d -- "$path"; } >"$tmp"
  else
    { printf '%s %s\n' "$comment" "$kId"; cat -- "$path"; } >"$tmp"
  fi
  chmod --reference="$path" "$tmp"
  mv -- "$tmp" "$path"
}

# The checkout's files: git's list (tracked and new, not ignored) when DIR is the top of a git
# checkout, else every file outside build directories.
list_files() {
  if [[ "$(git rev-parse --show-toplevel 2>/dev/null)" == "$(pwd -P)" ]]; then
    git ls-files --cached --others --exclude-standard
  else
    find . -type f -not -path './.git/*' -not -path './build*' -not -path './.cache/*' |
      sed 's|^\./||'
  fi
}

missing=()
while IFS= read -r path; do
  [[ -f "$path" && ! -L "$path" ]] || continue
  comment=$(comment_for "$path")
  [[ -n "$comment" ]] || continue
  has_line "$path" && continue
  missing+=("$path")
  if [[ "$mode" == add ]]; then
    add_line "$path" "$comment"
  fi
done < <(list_files | LC_ALL=C sort)

if [[ "$mode" == check ]]; then
  if ((${#missing[@]} > 0)); then
    echo "spdx: ${#missing[@]} source file(s) without an SPDX-License-Identifier line" \
      "(run scripts/spdx.sh to add it):" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
  fi
  exit 0
fi
if ((${#missing[@]} > 0)); then
  printf 'spdx: added the SPDX line to %s\n' "${missing[@]}"
fi
