#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that keep the documentation's code honest (ctest docs.check).

- README.md has at most 250 lines.
- Each C++ block of README.md follows a `<!-- snippet: docs/snippets/NAME.cpp -->` line and
  equals that file byte for byte (GitHub shows README.md without includes, so the text is kept
  there and checked here; the file is what the build compiles).
- A C++ block in docs/ holds nothing but an include of a snippet file
  (`--8<-- "docs/snippets/NAME.cpp"`), which mkdocs replaces by the file.
- No other fenced block (sh, cmake, ...) carries C++ that includes a dblock header.
- Every file under docs/snippets/ is shown somewhere, and every snippet named exists.
- The snippet files are clang-formatted (when clang-format is given).

Exit status 0 when everything holds; otherwise each problem on a line of its own and 1.
"""

import argparse
import pathlib
import re
import subprocess
import sys

README_MAX_LINES = 250
CPP_LANGS = {"cpp", "c++", "cxx", "cc"}
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
MARKER = re.compile(r"^<!--\s*snippet:\s*(\S+)\s*-->\s*$")
INCLUDE = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')


def blocks(text):
    """Yields (start line index, language, body lines) for each fenced block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group(2)
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        yield start, m.group(3).lower(), body, lines
        i += 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True, help="the repository's root")
    parser.add_argument("--clang-format", default="", help="clang-format to check snippets with")
    args = parser.parse_args()
    root = pathlib.Path(args.root)
    problems = []
    used = set()

    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    count = text.count("\n")
    if count > README_MAX_LINES:
        problems.append(f"README.md: {count} lines; keep it to {README_MAX_LINES} and move the "
                        "rest to a page under docs/")
    for start, lang, body, lines in blocks(text):
        if "#include <dblock/" in "\n".join(body) and lang not in CPP_LANGS:
            problems.append(f"README.md:{start + 1}: C++ in a block marked '{lang}': mark it cpp")
        if lang not in CPP_LANGS:
            continue
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        m = MARKER.match(lines[prev]) if prev >= 0 else None
        if not m:
            problems.append(f"README.md:{start + 1}: a C++ block needs a "
                            "'<!-- snippet: docs/snippets/NAME.cpp -->' line before it")
            continue
        path = root / m.group(1)
        used.add(path.resolve())
        if not path.is_file():
            problems.append(f"README.md:{prev + 1}: {m.group(1)} does not exist")
            continue
        if "\n".join(body) + "\n" != path.read_text(encoding="utf-8"):
            problems.append(f"README.md:{start + 1}: the block differs from {m.group(1)}; copy "
                            "the file into the block (the file is what the build compiles)")

    for page in sorted((root / "docs").rglob("*.md")):
        rel = page.relative_to(root)
        for start, lang, body, _ in blocks(page.read_text(encoding="utf-8")):
            code = [line for line in body if line.strip()]
            if lang not in CPP_LANGS:
                if any("#include <dblock/" in line for line in code):
                    problems.append(f"{rel}:{start + 1}: C++ in a block marked '{lang}'")
                continue
            m = INCLUDE.match(code[0]) if len(code) == 1 else None
            if not m:
                problems.append(f"{rel}:{start + 1}: a C++ block must only include a snippet "
                                "file (--8<-- \"docs/snippets/NAME.cpp\"), so that it is compiled")
                continue
            path = root / m.group(1)
            used.add(path.resolve())
            if not m.group(1).startswith("docs/snippets/") or not path.is_file():
                problems.append(f"{rel}:{start + 1}: {m.group(1)} is not a file under "
                                "docs/snippets/")

    snippets = sorted((root / "docs" / "snippets").glob("*.cpp"))
    for snippet in snippets:
        if snippet.resolve() not in used:
            problems.append(f"{snippet.relative_to(root)}: shown on no page; include it or remove "
                            "it")

    if args.clang_format and pathlib.Path(args.clang_format).is_file():
        for snippet in snippets + sorted((root / "docs" / "test").glob("*.cpp")):
            rc = subprocess.run([args.clang_format, "--dry-run", "--Werror", str(snippet)],
                                cwd=root, capture_output=True).returncode
            if rc != 0:
                problems.append(f"{snippet.relative_to(root)}: not clang-formatted (run "
                                "clang-format -i on it, then copy it into README.md if shown there)")
    else:
        print("check_docs: clang-format not given; the snippets' formatting is not checked")

    for p in problems:
        print(p)
    print(f"check_docs: {len(snippets)} snippet files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
