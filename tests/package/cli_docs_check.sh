#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# package.cli_docs: the man pages and the bash completion keep up with the program. For dblock
# and each command: every long option `dblock <command> --help` lists is an option of the
# command's man page and a completion of `dblock <command> --`; every option the man page lists
# exists (a command with subcommands shares its page with them: any of theirs). Every command
# has a man page and is a completion of `dblock `.
# Usage: cli_docs_check.sh DBLOCK_PROGRAM SOURCE_DIR
set -euo pipefail
dblock=$1
src=$2
failures=0
fail() {
  echo "FAILED: $*" >&2
  failures=$((failures + 1))
}

# The long options of a --help text: the names that start an "Options:" line.
help_options() {
  "$dblock" "$@" --help | sed -nE 's/^ +(-[A-Za-z],)?(--[a-z][a-z0-9-]*).*/\2/p' | sort -u
}
# The commands of a --help text: the names under "Subcommands:".
help_commands() {
  "$dblock" "$@" --help | sed -n '/^Subcommands:/,/^$/p' | sed -nE 's/^ +([a-z]+) .*/\1/p' |
    sort -u
}
# The options a man page lists: the tags of its .TP items (\- is a plain - in roff).
man_options() {
  awk 'tp { print; tp = 0 } /^\.TP/ { tp = 1 }' "$src/man/$1" | sed 's/\\-/-/g' |
    grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}
# What the bash completion offers after `dblock WORDS... <cur>`.
completions() {
  local cur=$1
  shift
  (
    # shellcheck source=/dev/null
    source "$src/contrib/bash-completion/dblock"
    COMP_WORDS=(dblock "$@" "$cur")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _dblock
    printf '%s\n' "${COMPREPLY[@]}"
  ) | sort -u
}

check_command() {  # PAGE WORDS...: the command dblock WORDS... documented in man/PAGE
  local page=$1
  shift
  local want have offered opt
  want=$(help_options "$@")
  [[ -n "$want" ]] || fail "dblock $* --help lists no options"
  have=$(man_options "$page")
  offered=$(completions -- "$@")
  for opt in $want; do
    grep -qxF -- "$opt" <<<"$have" || fail "man/$page does not list $opt (dblock $* --help does)"
    grep -qxF -- "$opt" <<<"$offered" ||
      fail "bash completion does not offer $opt after 'dblock $*' (dblock $* --help lists it)"
  done
  # A command with subcommands (and options of its own) shares one page with them: the page may
  # list what any of them has (allowed).
  for opt in $have; do
    grep -qxF -- "$opt" <<<"${allowed:-$want}" ||
      fail "man/$page lists $opt, which dblock $* does not have"
  done
  echo "dblock $*: $(wc -w <<<"$want") options, in man/$page and the completion"
}

check_command dblock.1
commands=$(help_commands)
[[ -n "$commands" ]] || fail "dblock --help lists no commands"
offered=$(completions "")
for command in $commands; do
  [[ -f "$src/man/dblock-$command.1" ]] || fail "dblock $command has no man page man/dblock-$command.1"
  grep -qE "^\.B $command( |$)" "$src/man/dblock.1" || fail "man/dblock.1 does not list $command"
  grep -qxF -- "$command" <<<"$offered" || fail "bash completion does not offer '$command'"
  subcommands=$(help_commands "$command")
  if [[ -n "$subcommands" ]]; then
    allowed=$({
      help_options "$command"
      for sub in $subcommands; do help_options "$command" "$sub"; done
    } | sort -u)
    check_command "dblock-$command.1" "$command"
    for sub in $subcommands; do
      grep -qxF -- "$sub" <<<"$(completions "" "$command")" ||
        fail "bash completion does not offer '$sub' after 'dblock $command'"
      grep -qE "^\.B $sub$" "$src/man/dblock-$command.1" ||
        fail "man/dblock-$command.1 does not describe '$command $sub'"
      check_command "dblock-$command.1" "$command" "$sub"
    done
    allowed=""
  else
    check_command "dblock-$command.1" "$command"
  fi
done
for page in "$src"/man/dblock-*.1; do
  command=${page##*/dblock-}
  command=${command%.1}
  grep -qxF -- "$command" <<<"$commands" || fail "man/${page##*/} documents no command of dblock's"
done

if ((failures > 0)); then
  echo "$failures problem(s): update man/ and contrib/bash-completion/dblock" >&2
  exit 1
fi
