"""A training schedule of (side, epochs) stages fitted into a wall-clock budget.

The trainer (train_fashion_mnist.py --max-seconds) times a few steps at every side before it commits
to a schedule, fits the requested stages into the budget, and refits the epochs still to come after
every epoch from the epoch times it measured. The one-cycle learning rate spans the fitted schedule,
so it still ends at ~0 on the last epoch, at the evaluation side. Standard library only, so the
planning is tested without torch or a GPU (test_train_budget.py).
"""
import math
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

Stages = List[Tuple[int, int]]

# Share of the seconds left that a fit may plan for: epoch times wander by ~15% from epoch to epoch
# (7.2-9.4 s measured for identical epochs), and a refit after every epoch absorbs the rest.
PLAN_SHARE = 0.95


def epochs_of(stages: Sequence[Tuple[int, int]]) -> int:
    return sum(epochs for _, epochs in stages)


def schedule_seconds(stages: Sequence[Tuple[int, int]], seconds_per_epoch: Dict[int, float]) -> float:
    return sum(epochs * seconds_per_epoch[side] for side, epochs in stages)


def fit_stages(requested: Sequence[Tuple[int, int]], seconds_per_epoch: Dict[int, float],
               budget: float) -> Stages:
    """The requested stages when they fit the budget, else every stage's epochs scaled down by one
    factor (rounded down; the epochs that rounding leaves room for go back, largest remainder first).
    The last stage, at the evaluation side, keeps at least one epoch even past the budget; an earlier
    stage may drop out.

    >>> fit_stages([(112, 30), (224, 6)], {112: 2.0, 224: 8.0}, 200.0)
    [(112, 30), (224, 6)]
    >>> fit_stages([(112, 30), (224, 6)], {112: 2.0, 224: 8.0}, 54.0)
    [(112, 15), (224, 3)]
    >>> fit_stages([(112, 30), (224, 6)], {112: 2.0, 224: 8.0}, 5.0)
    [(224, 1)]
    """
    requested = list(requested)
    costs = [seconds_per_epoch[side] for side, _ in requested]
    if schedule_seconds(requested, seconds_per_epoch) <= budget:
        return requested
    shares = scaled_epochs([e for _, e in requested], costs, budget)
    if math.floor(shares[-1]) == 0:  # the last stage's one epoch comes out of the earlier stages' share
        shares = scaled_epochs([e for _, e in requested[:-1]], costs[:-1], budget - costs[-1]) + [1.0]
    planned = [math.floor(share) for share in shares]
    spent = sum(e * c for e, c in zip(planned, costs))
    by_remainder = sorted(range(len(requested)), key=lambda i: shares[i] - planned[i], reverse=True)
    added = True
    while added:
        added = False
        for i in by_remainder:
            if planned[i] < requested[i][1] and spent + costs[i] <= budget:
                planned[i] += 1
                spent += costs[i]
                added = True
    return [(side, e) for (side, _), e in zip(requested, planned) if e > 0]


def scaled_epochs(epochs: Sequence[int], costs: Sequence[float], budget: float) -> List[float]:
    """Every count times the one factor that makes their cost the budget (at most 1, at least 0)."""
    total = sum(e * c for e, c in zip(epochs, costs))
    factor = min(1.0, max(0.0, budget / total)) if total > 0 else 0.0
    return [e * factor for e in epochs]


def split_at(stages: Sequence[Tuple[int, int]], epochs_done: int) -> Tuple[Stages, Stages]:
    """The stages as the part already run (the first epochs_done epochs) and the part to come.

    >>> split_at([(112, 3), (224, 2)], 4)
    ([(112, 3), (224, 1)], [(224, 1)])
    """
    done, rest, left = [], [], epochs_done
    for side, epochs in stages:
        ran = min(epochs, left)
        left -= ran
        if ran:
            done.append((side, ran))
        if epochs - ran:
            rest.append((side, epochs - ran))
    return done, rest


def joined(stages: Sequence[Tuple[int, int]]) -> Stages:
    """Neighbouring stages at one side as one stage."""
    out: Stages = []
    for side, epochs in stages:
        if out and out[-1][0] == side:
            out[-1] = (side, out[-1][1] + epochs)
        elif epochs:
            out.append((side, epochs))
    return out


def warmup_steps(total_steps: int) -> int:
    """The one-cycle warm-up: the first 15% of the steps."""
    return max(1, int(0.15 * total_steps))


def one_cycle(step: int, total: int, peak: float, warm: Optional[int] = None) -> float:
    """Linear warm-up to `peak` over `warm` steps (default: warmup_steps(total)), then cosine decay to 0
    at step `total`. A refit may shorten `total` after the warm-up was fixed; the decay starts then.

    >>> one_cycle(0, 100, 1.0), one_cycle(14, 100, 1.0), round(one_cycle(100, 100, 1.0), 12)
    (0.06666666666666667, 1.0, 0.0)
    """
    warm = warmup_steps(total) if warm is None else warm
    if step < warm:
        return peak * (step + 1) / warm
    progress = min(1.0, (step - warm) / max(1, total - warm))
    return peak * 0.5 * (1.0 + math.cos(math.pi * progress))


class BudgetedSchedule:
    """The epochs to run, each one's side and the learning rate of each step, within `budget` seconds
    counted from construction (None: the requested stages as they are, no clock).

    Call fit() once with the seconds per epoch measured at each side, epoch_done() after every epoch
    (the epochs still to come are refitted into the seconds left) and out_of_time() before every step:
    when the budget runs out the trainer stops where it is and saves what it has.
    """

    def __init__(self, requested: Sequence[Tuple[int, int]], steps_per_epoch: int, peak_lr: float,
                 budget: Optional[float] = None, clock: Callable[[], float] = time.monotonic):
        self.requested, self.steps_per_epoch, self.peak_lr = list(requested), steps_per_epoch, peak_lr
        self.budget, self.clock, self.started = budget, clock, clock()
        self.plan: Stages = list(requested)
        self.first_plan: Stages = list(requested)
        self.probe_seconds: Dict[int, float] = {}
        self.epoch_seconds: Dict[int, List[float]] = {}
        self.refits: List[dict] = []
        self.cut_at_step: Optional[int] = None
        self.warm = warmup_steps(self.total_steps())

    def elapsed(self) -> float:
        return self.clock() - self.started

    def seconds_left(self) -> float:
        return math.inf if self.budget is None else self.budget - self.elapsed()

    def seconds_per_epoch(self) -> Dict[int, float]:
        """Per side: the mean of the epochs timed there, else the probe's estimate times the ratio of
        measured to probed epoch times where epochs were timed (what made one side slower than its
        probe, a slower clock or a busier host, likely slows the others too)."""
        measured = {side: sum(times) / len(times) for side, times in self.epoch_seconds.items() if times}
        ratios = [measured[side] / self.probe_seconds[side] for side in measured
                  if self.probe_seconds.get(side, 0) > 0]
        ratio = sum(ratios) / len(ratios) if ratios else 1.0
        out = {side: seconds * ratio for side, seconds in self.probe_seconds.items()}
        out.update(measured)
        return out

    def fit(self, probe_seconds_per_epoch: Dict[int, float]) -> Stages:
        self.probe_seconds = dict(probe_seconds_per_epoch)
        if self.budget is not None:
            self.plan = fit_stages(self.requested, self.probe_seconds, PLAN_SHARE * self.seconds_left())
        self.first_plan = list(self.plan)
        self.warm = warmup_steps(self.total_steps())
        return self.plan

    def total_epochs(self) -> int:
        return epochs_of(self.plan)

    def total_steps(self) -> int:
        return self.steps_per_epoch * self.total_epochs()

    def side(self, epoch: int) -> int:
        """The side of epoch `epoch` (0-based) of the plan."""
        for side, epochs in self.plan:
            if epoch < epochs:
                return side
            epoch -= epochs
        raise IndexError(f"epoch {epoch} is past the plan {self.plan}")

    def lr(self, step: int) -> float:
        return one_cycle(step, self.total_steps(), self.peak_lr, self.warm)

    def out_of_time(self, step: int) -> bool:
        if self.seconds_left() > 0:
            return False
        self.cut_at_step = step
        return True

    def epoch_done(self, epochs_done: int, side: int, seconds: float) -> None:
        """Records an epoch's time and refits the epochs still to come when they no longer fit the
        seconds left. Within the warm-up and the first stage a plan made from a pessimistic probe also
        grows back towards the request, by one evaluation-side epoch's worth at least (the warm-up's
        learning rate does not depend on the total); after that a refit only shrinks, so the learning
        rate never rises again."""
        self.epoch_seconds.setdefault(side, []).append(seconds)
        if self.budget is None:
            return
        done, rest = split_at(self.plan, epochs_done)
        if not rest:
            return
        seconds_per_epoch, room = self.seconds_per_epoch(), PLAN_SHARE * self.seconds_left()
        refit = rest
        if schedule_seconds(rest, seconds_per_epoch) > room:
            refit = fit_stages(rest, seconds_per_epoch, room)
        elif self.may_grow(epochs_done, done):
            first_side, first_epochs = self.requested[0]
            wanted = [(first_side, first_epochs - epochs_done)] + self.requested[1:]
            grown = fit_stages(wanted, seconds_per_epoch, room)
            # Only for at least one more epoch at the evaluation side's cost: no churn from rounding.
            gain = schedule_seconds(grown, seconds_per_epoch) - schedule_seconds(rest, seconds_per_epoch)
            if gain >= seconds_per_epoch[self.requested[-1][0]]:
                refit = grown
        if refit != rest:
            self.plan = joined(done + refit)
            self.refits.append(dict(after_epoch=epochs_done, seconds_left=round(self.seconds_left(), 1),
                                    plan=self.plan))

    def may_grow(self, epochs_done: int, done: Stages) -> bool:
        """Whether a refit may give back epochs: in the warm-up, within the first requested stage."""
        first_side, first_epochs = self.requested[0]
        return (epochs_done * self.steps_per_epoch < self.warm and epochs_done < first_epochs
                and done == [(first_side, epochs_done)])

    def record(self, epochs_done: int, steps_done: int) -> dict:
        """What train.json says about the budget: planned and done epochs, timings, whether it was cut."""
        done, _ = split_at(self.plan, epochs_done)
        partial = self.cut_at_step is not None and steps_done > epochs_done * self.steps_per_epoch
        return dict(max_seconds=self.budget, requested_stages=self.requested, first_plan=self.first_plan,
                    planned_stages=self.plan, planned_epochs=self.total_epochs(), done_stages=done,
                    done_epochs=epochs_done, partial_epoch=partial, steps_done=steps_done,
                    planned_steps=self.total_steps(), cut=self.cut_at_step is not None,
                    final_lr=self.lr(steps_done - 1) if steps_done else None,
                    probe_seconds_per_epoch={str(s): round(t, 2) for s, t in self.probe_seconds.items()},
                    measured_seconds_per_epoch={str(s): round(sum(t) / len(t), 2)
                                                for s, t in self.epoch_seconds.items() if t},
                    refits=self.refits, seconds=round(self.elapsed(), 1))
