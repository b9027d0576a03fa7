"""The pipeline's request errors (HTTP maps `code` to a 4xx)."""

from __future__ import annotations


class ExtractionRequestError(ValueError):
    """A request the pipeline cannot run; `code` is machine-readable (HTTP maps it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message
