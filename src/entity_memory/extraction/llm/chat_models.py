"""What we know about the models we call: context window, JSON-mode dialect, reasoning or not.

Workers AI's default is `@cf/zai-org/glm-4.7-flash`, for three reasons read off Cloudflare's
model pages (developers.cloudflare.com/workers-ai/models/):
- window: 131,072 tokens, against 24,000 for `@cf/meta/llama-3.3-70b-instruct-fp8-fast`, so a
  long session fits in a few chunks with its context (earlier turns, known entities) beside it;
- price: $0.06 per M input and $0.40 per M output tokens, against $0.293 / $2.253 for the Llama
  70B fp8-fast, about five times cheaper for a prompt-heavy job like extraction;
- JSON mode: it takes the OpenAI form `{"type": "json_schema", "json_schema": {"name", "schema",
  "strict"}}` (the older Llama models take the schema itself under `json_schema`), and a model
  that refuses JSON mode is asked again without it (error 5025), so the choice is not fragile.
It is a reasoning model: it gets no temperature and a larger output budget. Set `AI_MODEL` to
use another; an unknown model gets a conservative window (`DEFAULT_CONTEXT_TOKENS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from entity_memory.domain.kinds import CAMPAIGN

#: How a model wants the schema: `named` = {"type": "json_schema", "json_schema": {"name",
#: "schema", "strict"}} (OpenAI and newer Workers AI models), `bare` = {"type": "json_schema",
#: "json_schema": <schema>} (older Workers AI models such as Llama 3.x).
SchemaStyle = Literal["named", "bare"]

#: Window assumed for a model we know nothing about (and no LLM_CONTEXT_TOKENS): small but
#: safe; it only makes chunks smaller.
DEFAULT_CONTEXT_TOKENS = 8_192
#: Output budget for reasoning models, whose thinking counts against max_tokens.
REASONING_MAX_TOKENS = 8_192


@dataclass(frozen=True)
class ModelSpec:
    context_tokens: int
    schema_style: SchemaStyle
    #: Reasoning models reject `temperature` (some) and spend output tokens thinking.
    reasoning: bool = False
    #: How extraction asks it (extraction/llm/typed.py). One call per chunk for the large
    #: models: they do every kind at once, and the typed designs cost 5 requests a chunk; a
    #: small model does better with short passes, one kind of fact each (bench_extraction).
    design: str = "single"
    #: The kinds of fact a typed design asks the model for (None: all five). In `union` the
    #: rules still give every kind; a small model is asked only for the kinds it adds
    #: correctly (a missing fact is better than a wrong one).
    passes: tuple[str, ...] | None = None


#: The design for the local 1.5B model, chosen on the dev set (README, "Which extractor you get").
SMALL_MODEL_DESIGN = "union"
#: What it is asked for there: of the facts it added to the rules' on the dev set, campaigns
#: were right 7 times in 9; metrics, decisions, pain points and preferences 3 times in 28.
SMALL_MODEL_PASSES = (CAMPAIGN.type,)

#: Workers AI models we have read the documentation of (window from the model's page).
WORKERS_AI_MODELS: dict[str, ModelSpec] = {
    "@cf/zai-org/glm-4.7-flash": ModelSpec(131_072, "named", reasoning=True),
    "@cf/meta/llama-3.3-70b-instruct-fp8-fast": ModelSpec(24_000, "bare"),
    # The local host's model (local/llm.mjs), in the window its llama-server is started with.
    "local/qwen2.5-coder-1.5b-instruct": ModelSpec(
        8_192, "named", design=SMALL_MODEL_DESIGN, passes=SMALL_MODEL_PASSES
    ),
}

_REASONING_NAMES = re.compile(r"(^|[/:_-])(o\d|gpt-5|gpt-oss|deepseek-r1|qwq|glm-4\.[5-9])|reason")


def workers_ai_spec(model: str) -> ModelSpec:
    spec = WORKERS_AI_MODELS.get(model)
    if spec is not None:
        return spec
    style: SchemaStyle = "bare" if model.startswith("@cf/meta/") else "named"
    return ModelSpec(DEFAULT_CONTEXT_TOKENS, style, bool(_REASONING_NAMES.search(model.lower())))


def openai_spec(model: str, context_tokens: int | None = None) -> ModelSpec:
    """OpenAI-compatible servers all take the named form; the window comes from
    LLM_CONTEXT_TOKENS (a local server's is whatever it was started with)."""
    return ModelSpec(
        context_tokens or DEFAULT_CONTEXT_TOKENS,
        "named",
        bool(_REASONING_NAMES.search(model.lower())),
    )
