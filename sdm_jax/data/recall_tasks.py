"""All synthetic recall generators under one name each, for benchmark harnesses.

Every generator is called as `make(num_examples, *, seq_len, vocab_size, seed, ...)` and
returns {"inputs", "targets"} int32 [num_examples, seq_len], targets -100 except where the
next token is an answer to recall. `mqar` also needs `num_kv_pairs`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from sdm_jax.data._recall_common import IGNORE_LABEL
from sdm_jax.data.mqar import mqar
from sdm_jax.data.needle import (NEEDLE_TASKS, needle_in_haystack, needle_multi_key,
                                 needle_multi_query, needle_multi_value, needle_single,
                                 variable_tracking)

RECALL_TASKS: dict[str, Callable[..., dict[str, np.ndarray]]] = {"mqar": mqar,
                                                                 **NEEDLE_TASKS}

__all__ = ["IGNORE_LABEL", "RECALL_TASKS", "mqar", "needle_in_haystack", "needle_single",
           "needle_multi_key", "needle_multi_value", "needle_multi_query",
           "variable_tracking"]
