"""The offline extractor."""

from entity_memory.extraction.rules.legacy import RulesExtractor

__all__ = ["RulesExtractor"]
