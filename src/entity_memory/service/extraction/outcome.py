"""What one extraction did, as the writer answers it and the HTTP route returns it.

Apart from the pipeline (pipeline.py), so the Worker, which only passes an outcome on from the
user's writer, does not import the extraction stages at start-up.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from entity_memory.extraction.base import Usage


class ExtractionOutcome(BaseModel):
    """What one extraction did; `to_json_dict` is the response body."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    processed: bool
    extractor: str | None
    entities: list[dict[str, Any]] = Field(default_factory=list)
    results: list[dict[str, Any]] = Field(default_factory=list)
    rejected: list[dict[str, Any]] = Field(default_factory=list)
    #: Fields removed from stored candidates (a number the conversation does not state).
    dropped: list[dict[str, Any]] = Field(default_factory=list)
    counts: dict[str, int] | None = None
    usage: Usage | None = None
    reason: str | None = None
    #: Messages an LLM still owes (recorded pending in the ledger).
    pending: bool = False
    degraded_reason: str | None = None

    @classmethod
    def already_processed(cls, pending: bool) -> ExtractionOutcome:
        """A re-sent session: nothing new to read (and what was pending stays pending)."""
        reason = "session already processed"
        if pending:
            reason += "; part of it is pending an LLM retry"
        return cls(processed=False, extractor=None, reason=reason, pending=pending)

    def to_json_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "processed": self.processed,
            "extractor": self.extractor,
            "entities": self.entities,
            "results": self.results,
            # The items whose stored facts changed (contradictions among them), for a quick look.
            "changes": [r for r in self.results if r.get("changes")],
            "rejected": self.rejected,
            "dropped": self.dropped,
            "degraded": self.degraded_reason is not None,
            "pending": self.pending,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.counts is not None:
            body["counts"] = self.counts
        if self.degraded_reason is not None:
            body["degradedReason"] = self.degraded_reason
        if self.usage is not None and (self.usage.input_tokens or self.usage.output_tokens):
            body["usage"] = {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
            }
        return body
