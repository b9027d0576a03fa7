"""The offline extractor: precision first, explicit statements only (see extractor.py)."""

from entity_memory.extraction.rules.extractor import RulesExtractor, extract_candidates

__all__ = ["RulesExtractor", "extract_candidates"]
