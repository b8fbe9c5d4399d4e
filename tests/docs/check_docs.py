#!/usr/bin/env python3
"""README.md stays short and the documentation's links lead somewhere.

    check_docs.py REPO_ROOT

Fails (exit 1, one line per problem) when README.md is longer than 350 lines, or when a relative link in
README.md or docs/*.md ([text](path), ![alt](path), [ref]: path; not inside code) names a file or
directory that does not exist, or a #fragment that is no heading of the Markdown file it points to
(GitHub's anchors: lowercase, punctuation dropped, spaces as hyphens, a repeated heading numbered -1, -2).
"""
import re
import sys
from pathlib import Path

MAX_README_LINES = 350

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def prose_lines(text):
    """(line number, line) outside fenced code blocks, with inline code blanked."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        found = set()
        fenced = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if FENCE.match(line):
                fenced = not fenced
                continue
            match = None if fenced else HEADING.match(line)
            if match:
                base = slug(match.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def link_problems(root, page):
    problems = []
    shown = page.relative_to(root)
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
        reference = REFERENCE_LINK.match(line)
        if reference:
            targets.append(reference.group(1))
        for target in targets:
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
                continue  # https:, mailto: ...: not a file here
            file_part, _, fragment = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            if not linked.exists():
                problems.append(f"{shown}:{number}: the link to {target} names {file_part}, which does not exist")
            elif fragment and linked.suffix == ".md" and linked.is_file() and fragment not in anchors(linked):
                problems.append(f"{shown}:{number}: the link to {target} names #{fragment}, no heading of {linked.relative_to(root)}")
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_docs.py REPO_ROOT")
    root = Path(sys.argv[1]).resolve()
    readme = root / "README.md"
    problems = []
    lines = len(readme.read_text(encoding="utf-8").splitlines())
    if lines > MAX_README_LINES:
        problems.append(f"README.md has {lines} lines, more than {MAX_README_LINES}: move details to docs/ and link them")
    for page in [readme, *sorted((root / "docs").glob("*.md"))]:
        problems += link_problems(root, page)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"README.md: {lines} lines (at most {MAX_README_LINES}); every relative link of README.md and docs/*.md leads somewhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())
