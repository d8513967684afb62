"""Every relative link in the user docs resolves: the file exists and, for a link into a Markdown page with
`#anchor`, the page has that heading (GitHub's anchor rule). Docs are cut and moved; a link that now points at
nothing is a broken page for the reader."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.MULTILINE)
CODE_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def prose(page: Path) -> str:
    """The page without its fenced code blocks (a `# comment` or `[x](y)` in code is neither heading nor link)."""
    return CODE_BLOCK.sub("", page.read_text(encoding="utf-8"))


def anchor_of(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces to
    hyphens; inline code and link marks are removed first."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@lru_cache(maxsize=None)  # a page is linked into many times
def anchors(page: Path) -> frozenset[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in HEADING.findall(prose(page)):
        slug = anchor_of(heading)
        n = seen.get(slug, 0)
        found.add(slug if n == 0 else f"{slug}-{n}")  # GitHub numbers repeated headings
        seen[slug] = n + 1
    return frozenset(found)


def broken_links(pages: list[Path], root: Path = REPO) -> list[str]:
    """`page: target (why)` for each relative link that does not resolve."""
    out = []
    for page in pages:
        for target in LINK.findall(prose(page)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                out.append(f"{page.relative_to(root)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                out.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return out


def user_pages() -> list[Path]:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "results" / "README.md"]
    return [p for p in pages if p.is_file()]


def test_the_check_finds_a_broken_link_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Top\n## The `demo`: runs, seeds\n[ok](#the-demo-runs-seeds) [ok2](b.md)\n"
                                   "[gone](c.md) [bad](b.md#nowhere) [web](https://example.org/x)\n"
                                   "```\n[in code](d.md)\n```\n")
    (tmp_path / "b.md").write_text("# B\n")
    found = broken_links([tmp_path / "a.md"], root=tmp_path)
    assert found == ["a.md: c.md (no such file)", "a.md: b.md#nowhere (no such heading)"]


def test_every_relative_link_in_the_docs_resolves() -> None:
    pages = user_pages()
    assert any(p.name == "demo.md" for p in pages)  # the listing works
    assert broken_links(pages) == []
