"""When to stop training before the step cap: the training loss's plateau.

`PlateauRule` is what `loop.fit(stop_rule=...)` applies after each logged step (every
`TrainConfig.log_every` steps). With the losses logged so far L_1 .. L_n, let `recent` be
the mean of the last `window` of them and `previous` the mean of the `window` before:

  stop with "loss_floor" when recent < loss_floor (a solved task: relative changes of a
    loss near zero are noise, not progress);
  stop with "plateau" when (previous - recent) / previous < min_improvement, unless
    recent >= pause_above (a loss resting near chance, as MQAR's does before it falls, is
    a pause, not the end: such a run trains on to the step cap);

never before step `min_steps`, nor with fewer than 2 * window losses logged. Means over
`window` logs smooth the noise of the single-batch losses `fit` logs. The step cap stays
`TrainConfig.steps`, over which the learning-rate schedule is laid out, so a run the rule
stops ends at a learning rate above the schedule's floor.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

PLATEAU = "plateau"
LOSS_FLOOR = "loss_floor"


@dataclasses.dataclass(frozen=True)
class PlateauRule:
  """Stop once the logged training loss stops improving (see the module docstring).

  Attributes:
    window: logged losses per mean (>= 1).
    min_improvement: relative improvement of the mean, from one window to the next, below
      which training stops (>= 0).
    min_steps: the rule never fires before this step. MQAR's loss can sit near chance for
      a long time before it falls, and no rule on the loss alone can tell such a pause from
      the end, so leave room for it.
    loss_floor: stop once the recent mean is below this (0: never).
    pause_above: a plateau whose recent mean is at or above this does not stop the run
      (0: every plateau stops it). Set it just below the chance loss so that a model that
      never left chance trains to the cap instead of being scored as converged.
  """

  window: int = 5
  min_improvement: float = 0.01
  min_steps: int = 0
  loss_floor: float = 0.0
  pause_above: float = 0.0

  def __post_init__(self):
    if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
      raise ValueError(f"PlateauRule.window must be an integer >= 1, got {self.window!r}")
    for name in ("min_improvement", "loss_floor", "pause_above"):
      value = getattr(self, name)
      if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise ValueError(f"PlateauRule.{name} must be a finite number >= 0, got {value!r}")
    if (isinstance(self.min_steps, bool) or not isinstance(self.min_steps, int)
        or self.min_steps < 0):
      raise ValueError(f"PlateauRule.min_steps must be an integer >= 0, got "
                       f"{self.min_steps!r}")

  def __call__(self, history: Sequence[tuple[int, float]]) -> str | None:
    """history: the (step, loss) pairs logged so far, in step order. Returns PLATEAU or
    LOSS_FLOOR when training should stop at the last of them, else None."""
    if len(history) < 2 * self.window or history[-1][0] < self.min_steps:
      return None
    losses = [loss for _, loss in history[-2 * self.window:]]
    previous = sum(losses[:self.window]) / self.window
    recent = sum(losses[self.window:]) / self.window
    if recent < self.loss_floor:
      return LOSS_FLOOR
    if self.pause_above and recent >= self.pause_above:
      return None
    if previous <= 0 or (previous - recent) / previous < self.min_improvement:
      return PLATEAU
    return None
