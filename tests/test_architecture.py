"""docs/architecture.md's module table against the real imports: each row's "searchrl modules it imports" column
must list exactly the searchrl modules its files import (at the top or inside functions), so the page cannot
drift from the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ARCHITECTURE = REPO / "docs" / "architecture.md"


def module_group(dotted: str) -> str | None:
    """`searchrl.training.loop` -> `training`; `searchrl.integrations.verl.losses` -> `integrations/verl`;
    `searchrl.protocol` -> `protocol`; None for the package root."""
    parts = dotted.split(".")
    if parts[0] != "searchrl" or len(parts) == 1:
        return None
    if parts[1] == "integrations":  # a namespace for the engines searchrl plugs into
        return f"integrations/{parts[2]}" if len(parts) > 2 else None
    return parts[1]


def file_group(path: Path) -> str | None:
    rel = path.relative_to(SRC).with_suffix("")
    return module_group(".".join(rel.parts).removesuffix(".__init__"))


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, absolute names, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(SRC).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)  # `from searchrl import training`
    return out


def actual_imports() -> dict[str, set[str]]:
    """Group -> the other searchrl groups its files import."""
    found: dict[str, set[str]] = {}
    for path in sorted((SRC / "searchrl").rglob("*.py")):
        group = file_group(path)
        if group is None:
            continue
        targets = {module_group(m) for m in imported_modules(path) if m.startswith("searchrl.")}
        found.setdefault(group, set()).update(t for t in targets if t and t != group and _is_module(t))
    return found


def _is_module(group: str) -> bool:
    return (SRC / "searchrl" / group).is_dir() or (SRC / "searchrl" / f"{group}.py").is_file()


def documented_imports() -> dict[str, set[str]]:
    """Group -> the searchrl modules the architecture table says it imports."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if line.startswith("| module |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    where = columns.index("searchrl modules it imports")
    table: dict[str, set[str]] = {}
    for line in text.splitlines():
        if not line.startswith("| `searchrl/"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        listed = set(re.findall(r"`([a-z_/]+)`", cells[where]))
        for path in re.findall(r"`searchrl/([a-z_/.]+?)(?:\.py|/)?`", cells[0]):
            table[path.rstrip("/")] = listed
    return table


def test_the_architecture_table_lists_the_real_imports() -> None:
    documented, actual = documented_imports(), actual_imports()
    missing_rows = sorted(set(actual) - set(documented))
    assert not missing_rows, f"docs/architecture.md has no row for {missing_rows}"
    wrong = {group: (sorted(documented[group]), sorted(actual.get(group, set())))
             for group in documented if documented[group] != actual.get(group, set())}
    assert not wrong, "docs/architecture.md imports column differs from the code (documented, actual): " + str(wrong)


def test_models_and_evaluation_do_not_import_training() -> None:
    actual = actual_imports()
    assert "training" not in actual["models"]
    assert "training" not in actual["evaluation"]
