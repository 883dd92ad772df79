# SPDX-License-Identifier: Apache-2.0
"""mkdocs hooks for dblock's site (mkdocs.yml: hooks).

- README.md and CONTRIBUTING.md are pages of the site without a second copy: a page under docs/
  whose text is `<!-- include-root: NAME.md -->` shows that file, its links rewritten to work
  from docs/ (docs/x.md -> x.md; other files of the repository -> their copy on the site).
- A link from a page to a source file outside docs/ (../lib/src/sql/postgresql.cpp) works on
  GitHub as it is; for the site, the file is copied to source/<path> and the link points there.
  A link outside docs/ to something that does not exist, to a directory, or to another Markdown
  file is reported, and fails `mkdocs build --strict`.
- Every page must be in the navigation (mkdocs itself only mentions it).
- A link to a heading (page.md#heading) must name a heading that exists (mkdocs 1.4 does not
  check anchors).
- The build's own files under docs/ (CMakeLists.txt, tools/, test/) are not published.
"""

import html as html_lib
import logging
import os
import posixpath
import re
from urllib.parse import quote, urlsplit

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.plugins.dblock")

ROOT_PAGES = {"README.md": "index.md", "CONTRIBUTING.md": "contributing.md"}
INCLUDE_ROOT = re.compile(r"^<!--\s*include-root:\s*(\S+)\s*-->\s*$", re.M)
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
UNPUBLISHED = ("CMakeLists.txt", "tools/", "test/")
ID = re.compile(r'\sid="([^"]+)"')
HREF = re.compile(r'<a\s[^>]*href="([^"]+)"')

_ids = {}  # page URL (normalised) -> the ids on that page
_anchor_links = []  # (page source, page URL, href) for every link with a #fragment


def _repo_root(config):
    return os.path.dirname(os.path.abspath(config["config_file_path"]))


def _links(text):
    """The relative link targets of a Markdown text, outside fenced code blocks."""
    in_fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for m in LINK.finditer(line):
            target = m.group(2)
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or not parts.path or target.startswith(("/", "#")):
                continue
            yield parts.path


def _root_link(target, page_dir):
    """A link of README.md / CONTRIBUTING.md (relative to the repository's root), as seen from a
    page in docs/<page_dir>."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path or target.startswith(("/", "#")):
        return target
    path = posixpath.normpath(parts.path)
    if path.startswith("docs/"):
        docs_path = path[len("docs/"):]
    elif path in ROOT_PAGES:
        docs_path = ROOT_PAGES[path]
    else:
        docs_path = "../" + path
    rel = posixpath.relpath(docs_path, page_dir or ".")
    return rel + ("#" + parts.fragment if parts.fragment else "")


def _outside_targets(config):
    """(docs-relative target, repository path, where) for every link that leaves docs/."""
    docs_dir = config["docs_dir"]
    root = _repo_root(config)
    for dirpath, _, filenames in os.walk(docs_dir):
        for name in filenames:
            if not name.endswith(".md"):
                continue
            page = os.path.relpath(os.path.join(dirpath, name), docs_dir).replace(os.sep, "/")
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                text = f.read()
            included = INCLUDE_ROOT.search(text)
            page_dir = posixpath.dirname(page)
            if included:
                with open(os.path.join(root, included.group(1)), encoding="utf-8") as f:
                    for target in _links(f.read()):
                        target = urlsplit(_root_link(target, page_dir)).path
                        resolved = posixpath.normpath(posixpath.join(page_dir, target))
                        if resolved.startswith("../"):
                            yield resolved, resolved[3:], included.group(1)
                continue
            for target in _links(text):
                resolved = posixpath.normpath(posixpath.join(page_dir, target))
                if resolved.startswith("../"):
                    repo_path = posixpath.normpath(posixpath.join("docs", page_dir, target))
                    yield resolved, repo_path, "docs/" + page


def on_files(files, config):
    for f in list(files):
        if f.src_uri.startswith(UNPUBLISHED) or f.src_uri in UNPUBLISHED:
            files.remove(f)
    root = _repo_root(config)
    added = set()
    for resolved, repo_path, where in _outside_targets(config):
        if resolved in added:
            continue
        full = os.path.join(root, repo_path)
        if repo_path.endswith(".md") and repo_path not in ROOT_PAGES:
            log.warning(f"{where}: links to {repo_path}, a Markdown file outside docs/: move it "
                        "into docs/ or link a page there")
            continue
        if repo_path in ROOT_PAGES:
            log.warning(f"{where}: links to {repo_path} by its path; link "
                        f"{ROOT_PAGES[repo_path]} (the page that shows it) instead")
            continue
        if os.path.isdir(full):
            log.warning(f"{where}: links to the directory {repo_path}; link a file in it")
            continue
        if not os.path.isfile(full):
            log.warning(f"{where}: links to {repo_path}, which does not exist")
            continue
        source = File(resolved, config["docs_dir"], config["site_dir"],
                      config["use_directory_urls"])
        source.abs_src_path = os.path.normpath(full)
        source.dest_uri = "source/" + repo_path
        source.abs_dest_path = os.path.normpath(os.path.join(config["site_dir"], source.dest_path))
        source.url = quote(source.dest_uri)
        files.append(source)
        added.add(resolved)
    return files


def on_nav(nav, config, files):
    in_nav = {page.file.src_uri for page in nav.pages}
    for f in files.documentation_pages():
        if f.src_uri not in in_nav:
            log.warning(f"docs/{f.src_uri} is not in the navigation (mkdocs.yml nav)")
    return nav


def on_page_markdown(markdown, page, config, files):
    m = INCLUDE_ROOT.search(markdown)
    if not m:
        return markdown
    with open(os.path.join(_repo_root(config), m.group(1)), encoding="utf-8") as f:
        text = f.read()
    page_dir = posixpath.dirname(page.file.src_uri)
    out = []
    in_fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if not in_fence:
            line = LINK.sub(lambda k: k.group(1) + _root_link(k.group(2), page_dir) + k.group(3),
                            line)
        out.append(line)
    return "\n".join(out)


def _norm(url):
    """A page URL as a key: 'locks/unique-key/' -> 'locks/unique-key', './' -> ''."""
    url = posixpath.normpath(url).strip("/")
    return "" if url == "." else url


def on_page_content(html, page, config, files):
    _ids[_norm(page.url)] = set(ID.findall(html))
    for href in HREF.findall(html):
        href = html_lib.unescape(href)
        if "#" in href and not urlsplit(href).scheme:
            _anchor_links.append((page.file.src_uri, page.url, href))
    return html


def on_post_build(config):
    for src, url, href in _anchor_links:
        parts = urlsplit(href)
        if parts.path:
            base = url if url.endswith("/") else posixpath.dirname(url)
            target = _norm(posixpath.join(base, parts.path))
        else:
            target = _norm(url)
        if target not in _ids:
            continue  # not a page (a copied source file); mkdocs checked the path itself
        if parts.fragment not in _ids[target]:
            log.warning(f"docs/{src}: links to '{href}', but that page has no heading "
                        f"'#{parts.fragment}'")
    _ids.clear()
    _anchor_links.clear()
