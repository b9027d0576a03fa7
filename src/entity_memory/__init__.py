"""entity-memory: long-term memory of named, typed entities for AI agents."""

__version__ = "0.1.0"
