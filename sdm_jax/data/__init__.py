"""Tokenizers, corpora as token streams, batches cut from them, and synthetic recall tasks.

- `tokenizer`: the byte tokenizer (`encode`, `decode`, `token_byte_lengths`, the special
  ids), the `Tokenizer` interface, `tokenizer_named` and `model_vocab_size`.
- `tiktoken_tokenizer`: a tiktoken encoding as a `Tokenizer` (optional dependency).
- `token_bytes`: the bytes-per-token table [vocab] that bits per byte divide by.
- `corpus`: `load_corpus` (standard library, text file, directory, pre-tokenised ids, a
  train.bin/val.bin directory).
- `token_files`: writing a train.bin/val.bin/token_bytes.npy corpus from documents.
- `batches`: `train_batch` (random windows, a pure function of seed and step) and
  `eval_batches` (every target once, padded and masked).
- `mqar`: multi-query associative recall as in Zoology.
- `needle`: RULER-style needle-in-a-haystack variants and variable tracking.
- `recall_tasks`: one registry `RECALL_TASKS` of all the recall generators.
"""
