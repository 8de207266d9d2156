"""Byte-level tokenizer, corpora as token streams, and batches cut from them.

- `tokenizer`: `encode`, `decode`, `token_byte_lengths` and the special ids.
- `corpus`: `load_corpus` (standard library, text file, directory, pre-tokenised ids).
- `batches`: `train_batch` (random windows, a pure function of seed and step) and
  `eval_batches` (every target once, padded and masked).
"""
