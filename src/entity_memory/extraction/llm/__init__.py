"""The LLM extractors: chat_models (what we know of each model), chunking (token estimates),
prompt (the words, apart from the logic), schema (the reply's JSON schema), parsing (lenient
reading of replies), chat (chunk / retry / split shared by both backends), and the two
backends, workers_ai and openai_compat."""
