"""User-facing errors: each names the file, line or field at fault and what to do.

The CLI prints these as one message and exits 2, never a traceback.
"""


class SearchRLError(Exception):
    """Base class for errors caused by user input (files, config, arguments, servers)."""


class ConfigError(SearchRLError):
    """A configuration key has a bad value: the message names the key and the allowed values."""


class DataError(SearchRLError):
    """A data file is malformed: the message names the file, the line and the field."""


class RetrievalError(SearchRLError):
    """A retriever or retrieval server failed after its retries."""
