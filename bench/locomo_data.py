"""LoCoMo (snap-research/locomo) as the retrieval bench reads it, and how its answers score.

LoCoMo holds 10 long conversations between two people, the facts a reader noted per session
(`session_N_observation`, each with the turn ids it rests on) and questions whose evidence is
turn ids. The bench plays a perfect extractor: every observation is stored as one entity,
so what is measured is ranking alone, as the dev part of bench_retrieval stores the expected
entities directly. Scoring maps the ranked entities back to turn ids.

The data is not in this repository and is never committed (it is the dataset authors', under
their own terms); the bench reads it from `--locomo-dir` and says how to get it when it is
missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from entity_memory.domain.kinds import DecisionInput, DecisionMetadata
from entity_memory.domain.models import MAX_NAME_LENGTH, ProvenanceInput

DEFAULT_DIR = (
    Path.home()
    / ".cache"
    / "entity-memory"
    / "locomo"
    / "data"
    / "multimodal_dialog"
    / "locomo10_v2"
)
HOW_TO_GET = (
    "git clone https://github.com/snap-research/locomo ~/.cache/entity-memory/locomo-src && "
    "mkdir -p ~/.cache/entity-memory/locomo && "
    "unzip ~/.cache/entity-memory/locomo-src/data/locomo10.zip -d ~/.cache/entity-memory/locomo"
)
#: LoCoMo's question categories, named as in its paper's evaluation; 5 (adversarial: the
#: answer is not in the conversation) has no evidence to retrieve and is left out.
CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: metadata.action's limit (models.ShortText).
MAX_ACTION_LENGTH = 500
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")


def dia_ids(raw: object) -> list[str]:
    """Turn ids in their one form ("D1:3"), from what the data holds: a string, a list, and a
    few typos ("D:11:26", "D30:05", "D8:6; D9:17", "D9:1 D4:4"); a bare "D" gives none."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        for session, turn in _DIA_ID.findall(str(item)):
            found = f"D{int(session)}:{int(turn)}"
            if found not in out:
                out.append(found)
    return out


@dataclass(frozen=True)
class Observation:
    """One noted fact: stored as one entity whose id leads back to its turns."""

    entity_id: str
    text: str
    turns: frozenset[str]
    session: int
    #: The session's date, epoch ms (kept as provenance: the API sets updatedAt itself).
    at: int

    def as_input(self) -> DecisionInput:
        """The entity a perfect extractor would store: a decision, the one type ranking
        treats like any other (preferences and pain points are always injected, campaigns
        bring companions, metrics need a KPI). Name, action and content all carry the text:
        the name is what ranking weighs most, the content what the context shows."""
        return DecisionInput(
            type="decision",
            id=self.entity_id,
            name=self.text[:MAX_NAME_LENGTH],
            content=self.text,
            importance=0.5,
            metadata=DecisionMetadata(action=self.text[:MAX_ACTION_LENGTH]),
            provenance=[ProvenanceInput(session_id=f"session-{self.session}", at=self.at)],
        )


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    sample: str
    speakers: tuple[str, str]
    observations: list[Observation]
    questions: list[Question]
    #: Questions of categories 1-4 left out because their evidence names no turn.
    no_evidence: int = 0
    #: entity id -> the turns its observation rests on.
    by_id: dict[str, frozenset[str]] = field(default_factory=dict)
    #: Every turn some observation rests on: what a perfect ranking could reach.
    reachable: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.by_id = {o.entity_id: o.turns for o in self.observations}
        self.reachable = frozenset().union(*(o.turns for o in self.observations))

    @property
    def user(self) -> str:
        return f"locomo-{self.sample}"


def _date_ms(text: str) -> int:
    """ "1:56 pm on 8 May, 2023" as epoch ms (UTC; the data has no zone)."""
    moment = datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _entity_id(turns: Sequence[str], taken: set[str]) -> str:
    """An id from the turns ("D1.3", "D22.21+D22.23"), numbered when turns repeat: ids allow
    no colon (`^[A-Za-z0-9._@+-]{1,128}$`)."""
    base = "+".join(t.replace(":", ".") for t in turns)[:120] or "none"
    found, n = base, 1
    while found in taken:
        n += 1
        found = f"{base}-{n}"
    taken.add(found)
    return found


def parse(sample: str, raw: dict[str, object]) -> Conversation:
    """One conversation file's observations and scorable questions."""
    sessions = sorted(int(m[1]) for key in raw if (m := _SESSION_KEY.fullmatch(key)) and raw[key])
    taken: set[str] = set()
    observations: list[Observation] = []
    for n in sessions:
        at = _date_ms(str(raw[f"session_{n}_date_time"]))
        noted = raw.get(f"session_{n}_observation") or {}
        assert isinstance(noted, dict)
        for rows in noted.values():
            for text, where in rows:
                turns = dia_ids(where)
                observations.append(
                    Observation(_entity_id(turns, taken), text, frozenset(turns), n, at)
                )
    questions: list[Question] = []
    skipped = 0
    qa = raw["qa"]
    assert isinstance(qa, list)
    for q in qa:
        if q["category"] not in CATEGORIES:
            continue
        evidence = frozenset(dia_ids(q.get("evidence", [])))
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(q["question"], q["category"], evidence))
    speakers = (str(raw["speaker_a"]), str(raw["speaker_b"]))
    return Conversation(sample, speakers, observations, questions, skipped)


def load(folder: Path, limit: int | None = None) -> list[Conversation]:
    """The conversations in `folder` (26.json ... 50.json), the first `limit` of them."""
    paths = sorted(folder.glob("*.json"), key=lambda p: (len(p.stem), p.stem))[:limit]
    return [parse(p.stem, json.loads(p.read_text())) for p in paths]


@dataclass(frozen=True)
class Answer:
    """How one question's context scored."""

    category: int
    #: Share of the evidence turns covered by the top 5 / top 10 entities returned.
    recall5: float
    recall10: float
    #: Share of the evidence turns any observation covers (the ceiling of recall).
    ceiling: float
    returned: int
    fallback: bool
    #: The returned entity ids in rank order (to compare two runs).
    ids: tuple[str, ...]

    @property
    def hit5(self) -> float:
        return float(self.recall5 > 0)

    @property
    def hit10(self) -> float:
        return float(self.recall10 > 0)


def score(
    conversation: Conversation, question: Question, ids: Sequence[str], fallback: bool
) -> Answer:
    """Recall of the question's evidence turns by the entities returned, in rank order."""

    def recall(k: int) -> float:
        turns = frozenset().union(*(conversation.by_id.get(i, frozenset()) for i in ids[:k]))
        return len(question.evidence & turns) / len(question.evidence)

    reachable = len(question.evidence & conversation.reachable) / len(question.evidence)
    return Answer(
        question.category, recall(5), recall(10), reachable, len(ids), fallback, tuple(ids)
    )


@dataclass(frozen=True)
class Summary:
    questions: int
    recall5: float
    recall10: float
    hit5: float
    hit10: float
    ceiling: float
    returned: float
    fallback: float


def summarise(answers: Iterable[Answer]) -> Summary:
    rows = list(answers)
    n = len(rows) or 1

    def mean(values: Iterable[float]) -> float:
        return sum(values) / n

    return Summary(
        len(rows),
        mean(a.recall5 for a in rows),
        mean(a.recall10 for a in rows),
        mean(a.hit5 for a in rows),
        mean(a.hit10 for a in rows),
        mean(a.ceiling for a in rows),
        mean(a.returned for a in rows),
        mean(a.fallback for a in rows),
    )
