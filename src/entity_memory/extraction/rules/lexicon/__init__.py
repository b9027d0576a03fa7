"""The words the rules read, one module per language.

Detectors import their cues from this package, never from a language module, so a new language
is a new package defining the same public names as `en`, chosen here. Language-neutral
shapes (punctuation, table layout) live in `shapes`.
"""

from entity_memory.extraction.rules.lexicon.en import *  # noqa: F403
