"""The Maglev study of issue 18: Maglev settings against SWA at an equal decoder, equal tokens.

  python -m experiments.maglev_study --config=experiments/configs/maglev_study.py:h200_shared
  python -m experiments.maglev_study --config=experiments/configs/maglev_study.py:tiny \
      --out=/tmp/maglev_study_tiny.json                                             # CPU
  python -m experiments.maglev_study --config=experiments/configs/maglev_study.py:h200_long \
      --config.settings=swa,shared_l0.3                                # settings by flag
  python -m experiments.maglev_study --replot=experiments/results/maglev_study_h200.json
  python -m experiments.maglev_study --merge=/tmp/a.json,/tmp/b.json --out=study.json

Settings are `experiments/configs/maglev_study.py:<preset>`, any field overridden with
`--config.<field>=value` (`--config.seeds=0,1,2`, `--config.train.eval_tokens=65536`).
Each run's record is appended to --out as soon as it finishes; runs already recorded there
are skipped, so running a preset again finishes it. The PNGs of
`maglev_jax.study_plots` are drawn next to --out at the end (`--replot` redraws them);
then the table and, last on stdout, one JSON line: the names trained and skipped and the
new records. What is trained and recorded: `maglev_jax.study`.
"""

from __future__ import annotations

from absl import flags

from experiments import cli
from experiments import common
from experiments.configs import maglev_study as study_config
from maglev_jax import study
from maglev_jax import study_plots
from sdm_jax.training import records

_CONFIG = common.define_config_flag(
    "maglev_study", arg="h200_shared",
    help_string="Study settings: experiments/configs/maglev_study.py:<preset>, each field "
    "overridable with --config.<field>=value.",
    # The model and train sections take any field of the configs (checked when built).
    accept_new_attributes=True)
_OUT = flags.DEFINE_string("out", "experiments/results/maglev_study_h200.json",
                           "The study file: a JSON list of run records, appended to.")
_WORKDIR_ROOT = flags.DEFINE_string("workdir_root", None, "Checkpoints go to <root>/<run> "
                                    "(default: a new temporary directory); keep it to resume "
                                    "a run a signal stopped.")
_REPLOT = flags.DEFINE_string("replot", None, "Train nothing: redraw the plots next to this "
                              "study file and print its table.")
_MERGE = flags.DEFINE_list("merge", None, "Train nothing: add the records of these study "
                           "files to --out (runs already there are kept), then replot.")


def _check_fields(settings) -> None:
  unknown = sorted(set(settings.keys()) - set(study_config.FIELDS))
  if unknown:
    raise ValueError(f"unknown Maglev study fields {unknown}; known fields: "
                     f"{list(study_config.FIELDS)}")


def _replot(path: str) -> None:
  study_records = study.read_records(path)
  written = study_plots.write_plots(study_records, path)
  print(study_plots.format_table(study_records))
  print("wrote", ", ".join(written))


def main(argv):
  del argv
  if _REPLOT.value:
    return _replot(_REPLOT.value)
  if _MERGE.value:
    merged = study.read_records(_OUT.value)
    for path in _MERGE.value:
      merged, added = study.merge_records(merged, study.read_records(path))
      print(f"{path}: {added} new records")
    study.write_records(_OUT.value, merged)
    return _replot(_OUT.value)
  settings = common.loaded_config(_CONFIG)
  _check_fields(settings)
  names = (settings.maglev_config, settings.baseline_config)
  overrides = {"model": settings.model.to_dict(), "train": settings.train.to_dict(),
               "data": {} if settings.data is None else {"path": settings.data}}
  # Every setting name is checked before the data is loaded.
  chosen = study.parse_settings(settings.settings)
  runs, data = common.build_runs(list(names), steps=settings.steps,
                                 model_overrides=overrides["model"],
                                 train_overrides=overrides["train"],
                                 data_overrides=overrides["data"])
  study_runs = study.study_runs(runs[names[0]], runs[names[1]], chosen, settings.seeds,
                                config_names=names,
                                overrides={k: v for k, v in overrides.items() if v})
  summary = study.run_study(study_runs, data, out=_OUT.value, workdir_root=_WORKDIR_ROOT.value)
  study_records = study.read_records(_OUT.value)
  if study_records and not summary["stopped_by"]:
    summary["plots"] = study_plots.write_plots(study_records, _OUT.value)
    print(study_plots.format_table(study_records))
  print(records.dumps(summary))
  return cli.stop_status(summary["stopped_by"])


if __name__ == "__main__":
  cli.run(main)
