"""User-facing errors: each names the file, line or field at fault and what to do.

The CLI prints these as one message and exits 2, never a traceback.
"""

from __future__ import annotations


class SearchRLError(Exception):
    """Base class for errors caused by user input (files, config, arguments, servers)."""


class ConfigError(SearchRLError):
    """A configuration key has a bad value: the message names the key and the allowed values."""


class DataError(SearchRLError):
    """A data file is malformed: the message names the file, the line and the field."""


class RetrievalError(SearchRLError):
    """A retriever or retrieval server failed after its retries."""


class SettingError(ConfigError, ValueError):
    """A config key is unknown or has a bad value (raised by `searchrl.settings`, which declares every section).

    The message is `<where>.<key>: <reason>`, the reason naming the allowed values. `where` (the section's dotted
    path) is kept apart from `key` so that a builder can re-home an error a section raised about itself under the
    path the user wrote it at (`rollout.max_turns` in searchrl's config, `searchrl.agent_loop.rollout.max_turns` in
    verl's). It is also a ValueError: the algorithm registry has always promised one for a bad knob.
    """

    def __init__(self, key: str, reason: str, where: str = "") -> None:
        self.key, self.reason, self.where = key, reason, where
        path = ".".join(part for part in (where, key) if part)
        super().__init__(f"{path}: {reason}" if path else reason)

    def __reduce__(self) -> tuple:  # pickles (across processes) with its parts, not only its message
        return SettingError, (self.key, self.reason, self.where)

    def at(self, where: str) -> SettingError:
        """The same error, under section path `where`."""
        return SettingError(self.key, self.reason, where)
