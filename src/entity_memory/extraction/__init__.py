"""Conversation in, typed entity candidates out (SPEC pipeline: extractor -> schema -> scorer).

Extractors share one interface (`base.Extractor`); which one runs is chosen by `[vars]
EXTRACTOR` or per request. Their output is raw candidates; `validate.py` turns them into
pydantic inputs or rejections, and resolution against stored entities happens before upsert.
"""
