"""The offline extractor's English: every cue pattern and word list its detectors read.

Every entry is general English or general advertising usage (the ads words themselves live in
domain/vocab.py); none exists because one conversation happened to use it. A detector that needs
a new cue adds it here, where all of them can be read at once. Another language is a sibling
package defining the same names (lexicon/__init__.py chooses the one in use).
"""

from entity_memory.extraction.rules.lexicon.en.complaints import *  # noqa: F403
from entity_memory.extraction.rules.lexicon.en.cues import *  # noqa: F403
from entity_memory.extraction.rules.lexicon.en.words import *  # noqa: F403
