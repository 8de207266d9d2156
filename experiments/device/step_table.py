"""The step figures of device calls as one table (run here, on the calls' returned logs).

`common.sh`'s `step_rounds` appends one line per timed run to a call's calls.log:

  /tmp/out/s_<tree>_<round>.log:"config": "sdm_small", ... "step_back_to_back_ms": 43.64

(`s_gdn.log`, without a round, is `gdn_small`'s baseline run). This prints, per config and
tree, each round's back-to-back ms, their mean, and the mean's difference from the
baseline tree's (negative: faster), so that what wins is read off, not added up by eye:

  python experiments/device/step_table.py CALLS_LOG... [--baseline=m49]
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics

_LINE = re.compile(r"s_(?P<run>[\w.-]+?)\.log:.*\"config\": \"(?P<config>[^\"]+)\".*"
                   r"\"step_back_to_back_ms\": (?P<ms>[0-9.]+)")


def step_figures(lines) -> dict:
  """{(config, tree): {round: ms}} from calls.log lines; a run named without a round
  (`s_gdn.log`) has round "-"."""
  figures = collections.defaultdict(dict)
  for line in lines:
    match = _LINE.search(line)
    if not match:
      continue
    tree, _, round_name = match["run"].rpartition("_")
    if not tree:
      tree, round_name = round_name, "-"
    figures[(match["config"], tree)][round_name] = float(match["ms"])
  return dict(figures)


def table(figures: dict, baseline: str | None, reference_config: str = "gdn_small"
          ) -> list[str]:
  """Rows: config, tree, each round's ms, mean, mean - the baseline tree's mean (same
  config), and mean / reference_config's mean over its runs (the step target's ratio),
  in the order the runs first appear."""
  rounds = sorted({r for runs in figures.values() for r in runs})
  means = {key: statistics.mean(runs.values()) for key, runs in figures.items()}
  reference = [m for (config, _), m in means.items() if config == reference_config]
  reference_ms = statistics.mean(reference) if reference else None
  rows = ["config      tree      " + "".join(f"{r:>8}" for r in rounds)
          + "    mean   vs base  ratio"]
  for (config, tree), runs in figures.items():
    mean = means[(config, tree)]
    base = means.get((config, baseline)) if baseline else None
    diff = f"{mean - base:+8.2f}" if base is not None else f"{'':8}"
    ratio = (f"{mean / reference_ms:6.2f}x"
             if reference_ms and config != reference_config else "")
    cells = "".join(f"{runs[r]:8.2f}" if r in runs else f"{'':8}" for r in rounds)
    rows.append(f"{config:<11} {tree:<9} {cells}{mean:8.2f}  {diff} {ratio}".rstrip())
  return rows


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("calls_logs", nargs="+", help="calls.log files of device calls")
  parser.add_argument("--baseline", default="m49", help="the tree others are compared to")
  args = parser.parse_args()
  lines = []
  for path in args.calls_logs:
    with open(path) as f:
      lines.extend(f)
  print("\n".join(table(step_figures(lines), args.baseline)))


if __name__ == "__main__":
  main()
