"""Byte-level tokenizer, corpora as token streams, batches cut from them, and synthetic
recall tasks.

- `tokenizer`: `encode`, `decode`, `token_byte_lengths` and the special ids.
- `corpus`: `load_corpus` (standard library, text file, directory, pre-tokenised ids).
- `batches`: `train_batch` (random windows, a pure function of seed and step) and
  `eval_batches` (every target once, padded and masked).
- `mqar`: multi-query associative recall as in Zoology.
- `needle`: RULER-style needle-in-a-haystack variants and variable tracking.
- `recall_tasks`: one registry `RECALL_TASKS` of all the recall generators.
"""
