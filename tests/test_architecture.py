"""docs/architecture.md's module table against the real imports.

- Each row's "searchrl modules it imports" column lists exactly the searchrl modules its files import (at the top
  or inside functions), so the page cannot drift from the code.
- The rows are in data-flow order, bottom to top: a module imports only modules of earlier rows. So no import goes
  back up the data flow, and there is no cycle between modules.
- Command-line entry points (`cli.py`, `cli_*.py` in any package) form the top row, `cli`: they may import
  anything, and nothing imports them.
- No cycle among the single modules either (a package's files included), counting the imports that run (not
  those under `if TYPE_CHECKING:`).
"""

from __future__ import annotations

import ast
import sys
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ARCHITECTURE = REPO / "docs" / "architecture.md"


def module_group(dotted: str) -> str | None:
    """`searchrl.training.loop` -> `training`; `searchrl.integrations.verl.losses` -> `integrations/verl`;
    `searchrl.protocol` -> `protocol`; any `cli` / `cli_*` module -> `cli`; None for the package root."""
    parts = dotted.split(".")
    if parts[0] != "searchrl" or len(parts) == 1:
        return None
    if parts[-1] == "cli" or parts[-1].startswith("cli_"):
        return "cli"
    if parts[1] == "integrations":  # a namespace for the engines searchrl plugs into
        return f"integrations/{parts[2]}" if len(parts) > 2 else None
    return parts[1]


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


def imported_modules(path: Path, *, runtime_only: bool = False) -> set[str]:
    """Every module a file imports, absolute names, relative imports resolved; with `runtime_only`, not those
    under `if TYPE_CHECKING:` (type names only, never executed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(SRC).with_suffix("").parts[:-1])
    skipped: set[int] = set()
    if runtime_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
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


def _is_group(group: str) -> bool:
    return group == "cli" or (SRC / "searchrl" / group).is_dir() or (SRC / "searchrl" / f"{group}.py").is_file()


def actual_imports() -> dict[str, set[str]]:
    """Group -> the other searchrl groups its files import."""
    found: dict[str, set[str]] = {}
    for path in sorted((SRC / "searchrl").rglob("*.py")):
        group = module_group(module_name(path))
        if group is None:
            continue
        targets = {module_group(m) for m in imported_modules(path) if m.startswith("searchrl.")}
        found.setdefault(group, set()).update(t for t in targets if t and t != group and _is_group(t))
    return found


def documented_table() -> list[tuple[str, set[str]]]:
    """The table's rows in order: (group, the searchrl modules the table says it imports)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if line.startswith("| module |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    where = columns.index("searchrl modules it imports")
    rows = []
    for line in text.splitlines():
        if not line.startswith("| `searchrl/") and not line.startswith("| `cli"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        listed = set(re.findall(r"`([a-z_/]+)`", cells[where]))
        name = re.search(r"`(?:searchrl/)?([a-z_/.*]+?)(?:\.py|/)?`", cells[0]).group(1).rstrip("/")
        rows.append(("cli" if name.startswith("cli") else name, listed))
    return rows


def test_the_architecture_table_lists_the_real_imports() -> None:
    documented, actual = dict(documented_table()), actual_imports()
    missing_rows = sorted(set(actual) - set(documented))
    assert not missing_rows, f"docs/architecture.md has no row for {missing_rows}"
    wrong = {group: (sorted(documented[group]), sorted(actual.get(group, set())))
             for group in documented if documented[group] != actual.get(group, set())}
    assert not wrong, "docs/architecture.md imports column differs from the code (documented, actual): " + str(wrong)


def test_no_import_goes_back_up_the_data_flow() -> None:
    """Every group imports only groups of earlier rows (the table is in data-flow order, bottom to top)."""
    order = [group for group, _ in documented_table()]
    assert order[-1] == "cli", "the command-line entry points are the top row"
    position = {group: i for i, group in enumerate(order)}
    upward = {group: sorted(t for t in targets if position[t] >= position[group])
              for group, targets in actual_imports().items() if any(position[t] >= position[group] for t in targets)}
    assert not upward, f"imports of a later row (back up the data flow): {upward}"


def test_no_import_cycle_between_modules() -> None:
    graph: dict[str, set[str]] = {}
    paths = {module_name(p): p for p in (SRC / "searchrl").rglob("*.py")}
    for name, path in paths.items():
        graph[name] = set()
        for target in imported_modules(path, runtime_only=True):
            # `from searchrl.algorithms import sapo` names the package (its __init__) or one of its modules
            while target and target not in paths and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in paths and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_cycle_check_finds_a_cycle(tmp_path, monkeypatch) -> None:
    """The checks above can fail: a module that imports its importer is reported."""
    pkg = tmp_path / "searchrl"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from searchrl import b\n")
    (pkg / "b.py").write_text("import searchrl.a\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    try:
        test_no_import_cycle_between_modules()
    except AssertionError as exc:
        assert "searchrl.a" in str(exc) and "searchrl.b" in str(exc)
    else:
        raise AssertionError("the cycle check missed a -> b -> a")
