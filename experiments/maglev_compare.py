"""Maglev against its baselines at equal tokens, and fixed-point against recurrent prefill.

  python -m experiments.maglev_compare --size=tiny                 # CPU minutes
  python -m experiments.maglev_compare --size=small --steps=1200   # one H200, < 10 minutes

See `maglev_jax.baseline_comparison` for what is trained, evaluated and timed.
Prints progress, a table, then one JSON line with everything.
"""

from __future__ import annotations

import tempfile

from absl import flags

from experiments import cli
from experiments import comparison_flags
from experiments.configs import MAGLEV_MODELS, maglev_config_names
from maglev_jax import baseline_comparison
from sdm_jax.training import records

_SIZE = flags.DEFINE_enum("size", "tiny", ["tiny", "small"], "Config family maglev_<size>*.")
_MODELS = flags.DEFINE_list("models", list(MAGLEV_MODELS), f"Which of {MAGLEV_MODELS} to "
                            "train.")
_PREFILL_BATCH = flags.DEFINE_integer("prefill_batch", 8, "Prompts per prefill timing.")
_PREFILL_LEN = flags.DEFINE_integer("prefill_len", None, "Prompt length (default: seq_len).")
_TOL = flags.DEFINE_float("tol", 1e-4, "Fixed-point tolerance on the memories.")
_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed calls per prefill method.")


def main(argv):
  del argv
  size = _SIZE.value
  # maglev_config_names checks the model names before anything is loaded or trained.
  runs, data = comparison_flags.runs_from_flags(maglev_config_names(size, _MODELS.value))
  workdir_root = (comparison_flags.WORKDIR_ROOT.value or
                  tempfile.mkdtemp(prefix=f"maglev_compare_{size}_"))
  summary = baseline_comparison.compare(
      runs, data, workdir_root=workdir_root, prefill_batch=_PREFILL_BATCH.value,
      prefill_len=_PREFILL_LEN.value, tol=_TOL.value, repeats=_REPEATS.value)
  summary["size"] = size
  print(baseline_comparison.format_table(summary))
  print(records.dumps(summary))
  return cli.stop_status(summary.get("stopped_by"))


if __name__ == "__main__":
  cli.run(main)
