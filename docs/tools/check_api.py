#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that the API reference carries the headers' text (ctest docs.api_text, after docs.api).

For each declaration in CHECKS, the first sentence of its /// comment in the header (for a file,
of the header's @file comment) must appear where Doxygen documents it: on its page, found through
the tag file, and for a member in its own entry of that page. The sentences are read from the
headers, so the check follows their text; a header whose comments are plain // again has no
sentence to give and fails, as does a reference that lost the text.

Exit status 0 when every sentence is found; otherwise each problem on a line of its own and 1.
"""

import argparse
import html
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

# (header, kind, name): kind as in Doxygen's tag file. UniqueKeyLock and Semaphore are described
# by their header's opening comment, so their file pages carry the text.
CHECKS = [
    ("lock.hpp", "class", "dblock::Lock"),
    ("unique_key_lock.hpp", "file", "unique_key_lock.hpp"),
    ("semaphore.hpp", "file", "semaphore.hpp"),
    ("open.hpp", "file", "open.hpp"),
    ("open.hpp", "function", "dblock::open_pool"),
    ("release_outcome.hpp", "enumvalue", "dblock::ReleaseOutcome::kNotHeld"),  # a trailing ///<
]

DOC = re.compile(r"^\s*///<?(?: (.*))?$")


def doc_text(line):
    """The text of a /// or ///< line, or None for any other line."""
    m = DOC.match(line)
    return None if m is None else (m.group(1) or "")


def first_sentence(texts):
    """The first sentence of a comment's lines, up to its first paragraph or @code block."""
    words = []
    for t in texts:
        if not t.strip() or t.strip().startswith("@code"):
            break
        words.append(t.strip())
    text = " ".join(words)
    m = re.match(r"(.+?[.!?])(?:\s|$)", text)
    return m.group(1) if m else text


def comment_above(lines, i):
    """The /// lines directly above line i (past a `template <...>` line), top first."""
    i -= 1
    if i >= 0 and lines[i].lstrip().startswith("template"):
        i -= 1
    texts = []
    while i >= 0 and doc_text(lines[i]) is not None and "///<" not in lines[i]:
        texts.insert(0, doc_text(lines[i]))
        i -= 1
    return texts


def header_sentence(lines, kind, name):
    """(sentence, None) read from the header, or (None, what is missing)."""
    leaf = name.split("::")[-1]
    if kind == "file":
        for i, line in enumerate(lines):
            if line.strip() == "/// @file":
                texts = []
                for after in lines[i + 1:]:
                    t = doc_text(after)
                    if t is None:
                        break
                    texts.append(t)
                return first_sentence(texts), None
        return None, "no /// @file comment"
    if kind in ("class", "struct"):
        decl = re.compile(rf"^\s*(class|struct)\s+(\w+\s+)*{leaf}\b(?!.*;\s*$)")
    elif kind == "function":
        decl = re.compile(rf"^(?!\s*//).*\b{leaf}\s*\(")
    elif kind == "enumvalue":
        decl = re.compile(rf"^\s*{leaf}\b\s*[,=]?")
    else:
        return None, f"unknown kind {kind}"
    for i, line in enumerate(lines):
        if not decl.match(line):
            continue
        texts = comment_above(lines, i)
        if not texts and "///<" in line:  # a trailing comment and its continuation lines
            texts = [line.split("///<", 1)[1].strip()]
            for after in lines[i + 1:]:
                if not after.lstrip().startswith("///<"):
                    break
                texts.append(after.split("///<", 1)[1].strip())
        if texts:
            return first_sentence(texts), None
        return None, f"no /// comment on {kind} {name}"
    return None, f"no declaration of {kind} {name}"


def normalize_source(text):
    """Comment text as Doxygen renders it: no escapes, no Markdown backticks, one-space gaps."""
    text = re.sub(r"\\([^\w\s])", r"\1", text).replace("`", "")
    return " ".join(text.split())


def normalize_html(text):
    """Page text: no scripts, tags or entities, one-space gaps."""
    text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
    text = html.unescape(re.sub(r"<[^>]*>", "", text))
    return " ".join(text.split())


def find_page(tags, kind, name):
    """(page file name, anchor or None) for a declaration, or None when the tag file lacks it."""
    compounds = tags.getroot().findall("compound")
    if kind in ("class", "struct", "file", "namespace"):
        for c in compounds:
            if c.get("kind") == kind and c.findtext("name") == name:
                return c.findtext("filename"), None
        return None
    scope, _, leaf = name.rpartition("::")
    if kind == "enumvalue":
        scope = scope.rpartition("::")[0]  # the enum's scope
    for c in compounds:
        if c.get("kind") == "file" or c.findtext("name") != scope:
            continue
        for m in c.findall("member"):
            if kind == "enumvalue":
                for v in m.findall("enumvalue"):
                    if v.text == leaf:
                        return v.get("file"), v.get("anchor")
            elif m.get("kind") == kind and m.findtext("name") == leaf:
                return m.findtext("anchorfile"), m.findtext("anchor")
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--headers", required=True, help="lib/include/dblock")
    parser.add_argument("--html", required=True, help="Doxygen's HTML output directory")
    parser.add_argument("--tagfile", required=True, help="Doxygen's tag file (GENERATE_TAGFILE)")
    args = parser.parse_args()
    headers = pathlib.Path(args.headers)
    html_dir = pathlib.Path(args.html)
    problems = []
    try:
        tags = ET.parse(args.tagfile)
    except (OSError, ET.ParseError) as e:
        print(f"{args.tagfile}: {e} (run docs.api, or the dblock_docs target, first)")
        return 1

    for header, kind, name in CHECKS:
        lines = (headers / header).read_text(encoding="utf-8").split("\n")
        sentence, missing = header_sentence(lines, kind, name)
        if sentence is None:
            problems.append(f"{header}: {missing}")
            continue
        sentence = normalize_source(sentence)
        if len(sentence.split()) < 3:
            problems.append(f"{header}: the first sentence on {name} is too short to look for: "
                            f"'{sentence}'")
            continue
        found = find_page(tags, kind, name)
        if found is None:
            problems.append(f"{args.tagfile}: no {kind} {name}")
            continue
        page, anchor = found
        path = html_dir / page
        if not path.is_file():
            problems.append(f"{path}: missing (the page of {name})")
            continue
        text = path.read_text(encoding="utf-8")
        if anchor is not None:
            start = text.find(f'id="{anchor}"')
            if start < 0:
                problems.append(f"{page}: no entry #{anchor} for {name}")
                continue
            end = text.find('<a id="', start + 1)
            text = text[start:end if end >= 0 else len(text)]
        if sentence not in normalize_html(text):
            where = page if anchor is None else f"{page}#{anchor}"
            problems.append(f"{where}: {name} lacks its header's text: '{sentence}'")

    for p in problems:
        print(p)
    if not problems:
        print(f"{len(CHECKS)} declarations carry their headers' text in the API reference")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
