"""Safe file input and output.

- Atomic writes: a temporary file in the target's folder, then `os.replace`, so a crash never leaves a
  half-written checkpoint, report or config behind.
- `check_writable` and `check_output_path`: refuse, before any work, an output that cannot be written or whose
  writing would lose data (a file the command did not create, one of its own inputs).
- `load_yaml`: PyYAML's safe loader that also refuses a key given twice and aliases that expand too far.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from searchrl.errors import ConfigError


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and `os.replace`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600 files; give the result the permissions a plain open() would (0666 & ~umask).
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def give_umask_permissions(path: str | Path) -> None:
    """Give a file, or every file below a folder, the permissions a plain open() would (0666 & ~umask).

    Why: safetensors' `save_file` (and so `save_pretrained`) creates its files 0600, readable by their owner only.
    """
    path = Path(path)
    mode = 0o666 & ~current_umask()
    for file in [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]:
        os.chmod(file, mode)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_failure(exc: BaseException) -> str | None:
    """Why a write failed, for a message, when `exc` is a failed write (a full disk, no permission); else None.

    torch.save reports a full disk as a RuntimeError and safetensors as a SafetensorError ("... os error 28")."""
    from safetensors import SafetensorError  # local: this module stays light

    if isinstance(exc, OSError):
        return exc.strerror or f"write failed: {str(exc)[:200]}"
    if isinstance(exc, (RuntimeError, SafetensorError)):
        return f"write failed: {str(exc)[:200]}"
    return None


def check_writable(path: str | Path, what: str, *, folder: bool = False) -> Path:
    """Fail now, not after hours of work, if `path` (a file, or a folder with `folder=True`) cannot be written.

    Raises `ConfigError` naming `what` (e.g. "--out") when a folder stands where the file goes (or a file where
    the folder goes), when a parent is a file, or when the folder is not writable (tried with a temporary file,
    so read-only mounts and permissions are caught, for root too). Missing folders are created, as the write
    would create them anyway. Returns the path.
    """
    path = Path(path).expanduser()
    if folder and path.exists() and not path.is_dir():
        raise ConfigError(f"{what} {path}: a file stands where a folder is expected; remove it or choose another path")
    if not folder and path.is_dir():
        raise ConfigError(f"{what} {path}: is a folder; give a file name such as {path / 'results.json'}")
    target = path if folder else path.parent
    existing = next(p for p in (target, *target.parents) if p.exists() or p == p.parent)
    if not existing.is_dir():
        raise ConfigError(f"{what} {path}: {existing} is a file, not a folder; choose another path")
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".searchrl-write-test.", dir=target)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot write in {target} ({exc.strerror or exc}); "
                          "choose a writable location") from None
    return path


def _same_path(a: Path, b: Path) -> bool:
    """Whether `a` and `b` name one file (symlinks resolved, hard links compared by inode)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _holds(folder: Path, path: Path) -> bool:
    """Whether `path` is `folder` or lies below it (symlinks resolved)."""
    try:
        folder, path = folder.resolve(), path.resolve()
    except OSError:
        return False
    return path == folder or folder in path.parents


def check_output_path(path: str | Path, what: str, *, inputs: Iterable[str | Path | None] = (),
                      overwrite: bool = False, ours: str | Callable[[Path], bool] | None = None,
                      kind: str = "", folder: bool = False, flag: str = "--overwrite", writable: bool = True) -> Path:
    """Refuse, before any work, an output whose writing would lose data; then (`writable`) `check_writable`'s.

    Refused, `overwrite` or not (`ConfigError` naming `what`, the path and what to do):

    - an output that is one of `inputs` (the same file, through links too) or, for a `folder`, holds one:
      the command would replace what it reads;
    - an output that exists (a file, or a folder holding anything) and is not `ours`: the command did not
      write it. `ours` is a predicate on the path or, for a folder, the name of a file in it that marks the
      folder as the command's own (a manifest, a marker); `kind` names that output in messages.

    An output that is `ours` is replaced only with `overwrite` (the message names `flag`). Returns the path.
    """
    path = Path(path).expanduser()
    for source in filter(None, inputs):
        source = Path(source).expanduser()
        if not source.exists():  # a model or benchmark name, not a file
            continue
        if _same_path(path, source) or (folder and _holds(path, source)):
            relation = "is" if _same_path(path, source) else "holds"
            raise ConfigError(f"{what} {path}: {relation} {source}, which this command reads and would replace; "
                              f"choose another {what}")
    kind = kind or "file this command wrote"
    try:
        exists = path.is_file() or (path.is_dir() and any(path.iterdir()))
    except OSError:  # an unreadable folder: check_writable names the problem
        exists = False
    if exists and (folder == path.is_dir()):
        if isinstance(ours, str):
            mine = (path / ours).is_file()
        else:
            mine = ours is not None and ours(path)
        if not mine:
            also = f" ({flag} replaces only a {kind})" if overwrite else ""
            raise ConfigError(f"{what} {path}: exists and is not a {kind}, so it is not replaced{also}; choose "
                              f"another {what}, or move it away first")
        if not overwrite:
            raise ConfigError(f"{what} {path}: already exists (a {kind}); pass {flag} to replace it, or choose "
                              f"another {what}")
    return check_writable(path, what, folder=folder) if writable else path


def read_small_json(path: Path, max_bytes: int = 64 * 1024 * 1024) -> Any:
    """The JSON value of a file of at most `max_bytes`, else None (unreadable, too large, not JSON): for
    recognising a command's own output before replacing it."""
    try:
        if path.stat().st_size > max_bytes:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def first_jsonl_row(path: Path) -> Any:
    """The first non-blank line of a JSONL file, parsed (None if there is none, or it is not JSON)."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return json.loads(line)
    except (OSError, ValueError):
        return None
    return None


# ---------------------------------------------------------------------------------------------- YAML

# Nodes that aliases may add to a YAML document beyond its own: a config file holds a few hundred nodes, and a
# "billion laughs" file of 1 KB expands to 10^9 (which anything that walks the loaded value then takes minutes on).
MAX_ALIAS_NODES = 100_000


def yaml_input_error() -> type:
    """The exception class `load_yaml` raises for a document it refuses (a `yaml.MarkedYAMLError`, whose
    `problem_mark` is the offending line; `problem` says what is wrong and what to do)."""
    return _yaml_classes()[0]


@functools.lru_cache(maxsize=None)
def _yaml_classes() -> tuple[type, type]:
    import yaml  # local: ~30 ms to import, and most commands that import this module read no YAML

    class YAMLInputError(yaml.MarkedYAMLError):
        """A document that parses but is refused: a key given twice, aliases that expand too far."""

    class Strict:
        """Mixed into a PyYAML loader: refuses a mapping key given twice (naming both lines; `<<` merges may
        still override) and aliases whose expansion adds more than `MAX_ALIAS_NODES` nodes, or refers to itself."""

        def compose_document(self):  # type: ignore[no-untyped-def]
            self._aliases: list = []  # (node, alias event) per alias, in document order
            node = super().compose_document()
            _check_aliases(self._aliases, YAMLInputError)
            return node

        def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
            event = self.peek_event() if self.check_event(yaml.AliasEvent) else None
            node = super().compose_node(parent, index)
            if event is not None:
                self._aliases.append((node, event))
            return node

        def flatten_mapping(self, node):  # type: ignore[no-untyped-def]
            # Called on every mapping before it is built, and before its `<<` merges are spliced into its keys.
            checked = self.__dict__.setdefault("_checked", set())
            if id(node) not in checked:
                checked.add(id(node))
                marks: dict = {}
                for key_node, _ in node.value:
                    if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node)
                    if key in marks:
                        first, again = marks[key], key_node.start_mark
                        where = (f"on lines {first.line + 1} and {again.line + 1}" if first.line != again.line else
                                 f"on line {again.line + 1}, columns {first.column + 1} and {again.column + 1}")
                        raise YAMLInputError(None, None, f"key {key!r} is given twice, {where} (YAML would keep the "
                                                         "last silently); keep one", again)
                    marks[key] = key_node.start_mark
            return super().flatten_mapping(node)

    return YAMLInputError, Strict


def _check_aliases(aliases: list, error: type) -> None:
    import yaml

    class Cycle(Exception):
        pass

    sizes: dict[int, int] = {}  # id(node) -> nodes it expands to
    open_nodes: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise Cycle
        open_nodes.add(key)
        if isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in node.value)
        else:
            total = 1
        open_nodes.discard(key)
        sizes[key] = total
        return total

    added = 0
    for node, event in aliases:
        try:
            added += size(node)
        except Cycle:
            raise error(None, None, f"alias *{event.anchor} refers to a value that contains itself; write the "
                                    "value out", event.start_mark) from None
        if added > MAX_ALIAS_NODES:
            raise error(None, None, f"aliases expand to more than {MAX_ALIAS_NODES} values by alias *{event.anchor} "
                                    "(an alias bomb?); write the values out or use fewer aliases", event.start_mark)


@functools.lru_cache(maxsize=None)
def strict_yaml_loader(base: type | None = None) -> type:
    """`base` (default `yaml.SafeLoader`) with the checks of `load_yaml` mixed in."""
    import yaml

    return type(f"Strict{(base or yaml.SafeLoader).__name__}", (_yaml_classes()[1], base or yaml.SafeLoader), {})


def load_yaml(text: str, loader: type | None = None) -> Any:
    """Parse YAML text with `loader` (a `yaml.SafeLoader` subclass; default SafeLoader), refusing a key given
    twice and alias expansion beyond `MAX_ALIAS_NODES` with the error class `yaml_input_error()`. Other syntax
    errors are PyYAML's own `yaml.YAMLError`s."""
    import yaml

    return yaml.load(text, Loader=strict_yaml_loader(loader))  # noqa: S506 - a SafeLoader subclass
