#!/usr/bin/env python3
"""README.md stays short, the documentation's links lead somewhere, and its transcripts are what the
programs print.

    check_docs.py REPO_ROOT
    check_docs.py REPO_ROOT --transcripts BUILD_DIR

Fails (exit 1, one line per problem) when README.md is longer than 350 lines, or when a relative link in
README.md or docs/*.md ([text](path), ![alt](path), [ref]: path; not inside code) names a file or
directory that does not exist, or a #fragment that is no heading of the Markdown file it points to
(GitHub's anchors: lowercase, punctuation dropped, spaces as hyphens, a repeated heading numbered -1, -2).

With --transcripts, instead: every fenced block of README.md and docs/*.md that follows a comment

    <!-- transcript
    build/release/examples/lab --cell 4
    omit: ^The attention lab|^4\. |^$|passed, \d+ failed$
    -->

is what its commands print: they run in order in bash, in an empty scratch directory, with
build/release/ meaning BUILD_DIR; the ones before the last make what it reads and must exit 0; the last
must exit N when the block ends with "(exit N)", 0 otherwise, and the block is its output (stdout and
stderr) line for line, trailing spaces ignored, but the lines an `omit:` regular expression finds (a
heading the page gives in prose). Only cheap commands (seconds) get a transcript comment.
"""
import re
import subprocess
import sys
import tempfile
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


TRANSCRIPT_START = re.compile(r"^<!-- transcript\s*$")
EXIT_LINE = re.compile(r"^\(exit (\d+)\)$")


def transcripts(page):
    """(line number of the block's fence, commands, omit patterns, the block's lines) of each transcript comment."""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if not TRANSCRIPT_START.match(lines[i]):
            i += 1
            continue
        commands, omit = [], []
        i += 1
        while i < len(lines) and lines[i].strip() != "-->":
            if lines[i].startswith("omit: "):
                omit.append(re.compile(lines[i][len("omit: "):]))
            elif lines[i].strip():
                commands.append(lines[i])
            i += 1
        i += 1
        if i >= len(lines) or not FENCE.match(lines[i]):
            yield i + 1, commands, omit, None  # no block after the comment
            continue
        start, block = i + 1, []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            block.append(lines[i])
            i += 1
        yield start, commands, omit, block


def run_bash(script, cwd, build):
    return subprocess.run(["bash", "-c", script.replace("build/release/", f"{build}/")], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


def transcript_problems(root, build, page):
    problems = []
    shown = page.relative_to(root)
    for number, commands, omit, block in transcripts(page):
        if block is None:
            problems.append(f"{shown}:{number}: a transcript comment without a fenced block after it")
            continue
        expected_status = 0
        if block and EXIT_LINE.match(block[-1]):
            expected_status = int(EXIT_LINE.match(block[-1]).group(1))
            block = block[:-1]
        with tempfile.TemporaryDirectory(prefix="docs-transcript-") as scratch:
            setup = run_bash("set -e\n" + "".join(f"{c}\n" for c in commands[:-1]), scratch, build)
            result = run_bash(commands[-1], scratch, build) if setup.returncode == 0 else None
        if result is None:
            problems.append(f"{shown}:{number}: the commands before the last failed (exit {setup.returncode}): "
                            f"{setup.stdout.strip().splitlines()[-1:] or ''}")
            continue
        said = f"`{commands[-1]}`"
        if result.returncode != expected_status:
            problems.append(f"{shown}:{number}: {said} exited {result.returncode}, not {expected_status}: "
                            f"{result.stdout.strip().splitlines()[-1:] or ''}")
            continue
        want = [line.rstrip() for line in block]
        got = [line.rstrip() for line in result.stdout.splitlines() if not any(p.search(line) for p in omit)]
        if got == want:
            continue
        n = 0  # the first line where they part
        while n < len(got) and n < len(want) and got[n] == want[n]:
            n += 1
        printed = got[n] if n < len(got) else "nothing more"
        shows = want[n] if n < len(want) else "nothing more"
        problems.append(f"{shown}:{number + 1 + n}: {said} prints {printed!r} where the doc shows {shows!r}")
    return problems


def check_transcripts(root, build):
    problems, count = [], 0
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        problems += transcript_problems(root, build, page)
        count += sum(1 for _ in transcripts(page))
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{count} transcripts in README.md and docs/*.md: each is what its commands print")
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[2] == "--transcripts":
        return check_transcripts(Path(sys.argv[1]).resolve(), Path(sys.argv[3]).resolve())
    if len(sys.argv) != 2:
        sys.exit("usage: check_docs.py REPO_ROOT [--transcripts BUILD_DIR]")
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
