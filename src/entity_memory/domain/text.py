"""Text normalisation shared by ids, ranking and (later) entity resolution.

One tokenizer for indexing and querying, so a task that says "cost per acquisition" meets an
entity that says "tCPA": ads acronyms and their long forms are folded to the same terms.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from entity_memory.domain.vocab import ACRONYM_PHRASES, COST_PER_THING, KPI_EXPANSIONS, NO_STEM

_PHRASE_RES = [(re.compile(p), r) for p, r in ACRONYM_PHRASES]
_COST_PER_THING = re.compile(COST_PER_THING[0])

STOP_WORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just let lets
    me more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself please help need want like get got make going go know think
    today week weeks tomorrow yesterday last next new one two ok okay yes yeah sure
    thanks""".split()
)

#: Scripts written without spaces (Han, kana, Hangul, their compatibility and full-width forms).
CJK_CHARS = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
)
_CJK_CHAR = re.compile(f"[{CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
#: Characters per token outside CJK scripts (English and other Latin text, numbers, JSON).
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Tokens `text` costs a model, without a tokenizer: one per CJK character (those scripts
    are dense) and one per four other characters. It errs high, which a budget wants."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + -(-(len(text) - cjk) // CHARS_PER_TOKEN)


def has_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping character bigrams of every CJK run (a lone character is its own term), as
    Lucene's CJK analyzer indexes text that has no spaces between words."""
    terms: list[str] = []
    for run in _CJK_RUN.findall(text):
        if len(run) == 1:
            terms.append(run)
        else:
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms


_TOKEN_RE = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")


def fold(text: str) -> str:
    """Lowercase, NFKC, accents stripped: the form every comparison is made in."""
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return text.lower()


def normalize_name(name: str) -> str:
    """Canonical form of an entity name: folded, punctuation to spaces, whitespace collapsed."""
    return " ".join(re.sub(r"[\W_]+", " ", fold(name)).split())


def stem(token: str) -> str:
    """Plural folding only: aggressive stemming merges KPI names that must stay apart."""
    if token in NO_STEM:
        return token
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


@lru_cache(maxsize=16384)
def name_terms(name: str) -> tuple[str, ...]:
    """Tokens of an entity name, cached: ranking needs them for every entry on every query."""
    return tuple(tokenize(name))


def _acronyms(text: str) -> str:
    folded = fold(text)
    for pattern, replacement in _PHRASE_RES:
        folded = pattern.sub(f" {replacement} ", folded)
    return folded


def costs_per_thing(text: str) -> bool:
    """Whether `text` names a cost per something other than a KPI's own unit ("cost per
    trial", not "cost per click"): what tokenize reads as that thing and `cpa`."""
    return _COST_PER_THING.search(_acronyms(text)) is not None


def tokenize(text: str) -> list[str]:
    """Terms for lexical matching: folded, acronyms unified, stop words dropped, plurals folded."""
    folded = _COST_PER_THING.sub(f" {COST_PER_THING[1]} ", _acronyms(text))
    terms: list[str] = []
    for raw in _TOKEN_RE.findall(folded):
        token = raw.replace("'", "")
        if token in STOP_WORDS or (len(token) < 2 and not token.isdigit()):
            continue
        terms.extend(KPI_EXPANSIONS.get(token, (stem(token),)))
    terms.extend(cjk_bigrams(folded))
    return terms
