"""Train named configs for equal tokens and compare val BPB, step time, parameters and state.

  python -m experiments.compare --configs=hybrid_attn_tiny,gdn_tiny,sdm_tiny,sdm_tiny_no_m0
  python -m experiments.compare --configs=hybrid_attn_small,gdn_small,sdm_small,sdm_small_no_m0
      # one H200, < 10 minutes
  python -m experiments.compare --configs=gdn_tiny,sdm_tiny --config.model.d_model=64 \
      --config.train.peak_lr=1e-3   # overrides applied to every config

See `maglev_jax.equal_tokens` for what is trained, evaluated and reported. Prints progress,
a table, then one JSON line with everything (also written to --summary_file if given).
"""

from __future__ import annotations

from absl import flags

from experiments import cli
from experiments import comparison_flags
from maglev_jax import equal_tokens
from sdm_jax.training import records

_CONFIGS = flags.DEFINE_list("configs", None, "Config names to train, e.g. "
                             "hybrid_attn_small,gdn_small,sdm_small.", required=True)
_SUMMARY_FILE = flags.DEFINE_string("summary_file", None, "Also write the JSON summary here.")


def main(argv):
  del argv
  runs, data = comparison_flags.runs_from_flags(_CONFIGS.value)
  summary = equal_tokens.compare(runs, data, workdir_root=comparison_flags.WORKDIR_ROOT.value)
  print(equal_tokens.format_table(summary))
  if _SUMMARY_FILE.value:
    with open(_SUMMARY_FILE.value, "w") as f:
      f.write(records.dumps(summary, indent=1))
  print(records.dumps(summary))
  return cli.stop_status(summary.get("stopped_by"))


if __name__ == "__main__":
  cli.run(main)
