"""Search-R1's passage conventions: parsing `contents` into title and text, and rendering hits as an observation.

A wiki-18 / FlashRAG passage stores its title and text in one string, ``contents = '"Title"\\ntext'``.
Search-R1 (`search_r1/llm_agent/generation.py::_passages2string`, PeterGriffinJin/Search-R1@a14dc3a) renders
a list of retrieved passages as::

    title = content.split("\\n")[0]
    text = "\\n".join(content.split("\\n")[1:])
    f"Doc {idx+1}(Title: {title}) {text}\\n"

Note that the rendered title is the raw first line, so wiki-18 titles keep their surrounding quotes in the
observation (``Doc 1(Title: "Paris") Paris is ...``). `Hit.title` is the clean title (quotes stripped) for
display and metadata; `render_hits` renders from `contents` so the observation is byte-identical to
Search-R1's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from searchrl.retrieval.base import Hit


def split_contents(contents: str) -> tuple[str, str]:
    """Split ``contents`` as Search-R1 does: (first line, the rest). The first line keeps any quotes."""
    first_line, _, rest = contents.partition("\n")
    return first_line, rest


def strip_title_quotes(first_line: str) -> str:
    """The title of a wiki-18 first line: one pair of surrounding double quotes removed, if present."""
    if len(first_line) >= 2 and first_line[0] == '"' and first_line[-1] == '"':
        return first_line[1:-1]
    return first_line


def parse_contents(contents: str) -> tuple[str, str]:
    """(title, text) of a wiki-18 ``contents`` string: title = first line without its quotes, text = the rest."""
    first_line, text = split_contents(contents)
    return strip_title_quotes(first_line), text


def make_contents(title: str, text: str) -> str:
    """The wiki-18 ``contents`` of a (title, text) pair: ``'"Title"\\ntext'``."""
    return f'"{title}"\n{text}'


def render_hits(hits: list[Hit]) -> str:
    """Render hits as Search-R1 does (`generation.py::_passages2string`).

    One line per hit, numbered from 1: ``Doc {i}(Title: {first line of contents}) {rest of contents}\\n``.
    A hit without ``contents`` is rendered from its ``title`` and ``text``. The rollout wraps the result as
    ``\\n\\n<information>{...}</information>\\n\\n`` (see `searchrl.protocol`), after Search-R1's ``.strip()``.
    """
    parts = []
    for i, hit in enumerate(hits, start=1):
        if hit.contents:
            title, text = split_contents(hit.contents)
        else:
            title, text = hit.title, hit.text
        parts.append(f"Doc {i}(Title: {title}) {text}\n")
    return "".join(parts)
