"""The semantic channel: embedding models, compact vectors in the index, similarity."""
