"""Tests of train_budget.py (standard library only): python3 -m unittest discover -s tools/goldens"""
import doctest
import unittest

import train_budget
from train_budget import BudgetedSchedule, epochs_of, fit_stages, schedule_seconds, split_at

REQUESTED = [(112, 30), (224, 6)]


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def simulate(budget, probe, actual, steps_per_epoch=40, probe_cost=30.0):
    """Runs a BudgetedSchedule as the trainer does, each epoch taking actual[side] seconds."""
    clock = FakeClock()
    schedule = BudgetedSchedule(REQUESTED, steps_per_epoch, 0.4, budget, clock)
    clock.now += probe_cost
    schedule.fit(probe)
    step, epoch, lrs = 0, 0, []
    while epoch < schedule.total_epochs():
        side = schedule.side(epoch)
        ran = 0
        for _ in range(steps_per_epoch):
            if schedule.out_of_time(step):
                break
            lrs.append(schedule.lr(step))
            clock.now += actual[side] / steps_per_epoch
            step, ran = step + 1, ran + 1
        if ran < steps_per_epoch:
            break
        epoch += 1
        schedule.epoch_done(epoch, side, actual[side])
    return schedule, schedule.record(epoch, step), lrs, clock.now - 1000.0


class FitStagesTest(unittest.TestCase):
    def test_doctests(self):
        self.assertEqual(doctest.testmod(train_budget, verbose=False).failed, 0)

    def test_fits_unchanged_when_there_is_room(self):
        self.assertEqual(fit_stages(REQUESTED, {112: 3.0, 224: 12.0}, 500.0), REQUESTED)

    def test_scaled_plan_fits_and_keeps_the_order_and_last_side(self):
        spe = {112: 3.7, 224: 13.3}
        for budget in (20.0, 45.0, 80.0, 120.0, 150.0, 184.0):
            plan = fit_stages(REQUESTED, spe, budget)
            self.assertLessEqual(schedule_seconds(plan, spe), budget, plan)
            self.assertEqual(plan[-1][0], 224, plan)
            self.assertEqual([s for s, _ in plan], [s for s, _ in REQUESTED][-len(plan):], plan)
            for (side, epochs), (_, wanted) in zip(reversed(plan), reversed(REQUESTED)):
                self.assertLessEqual(epochs, wanted)
            # Nothing more would fit: no stage could take one more epoch.
            spare = budget - schedule_seconds(plan, spe)
            grown = [e for s, e in plan if e < dict(REQUESTED)[s] and spe[s] <= spare]
            self.assertEqual(grown, [], (budget, plan))

    def test_roughly_proportional(self):
        plan = dict(fit_stages(REQUESTED, {112: 3.7, 224: 13.3}, 120.0))
        self.assertAlmostEqual(plan[112] / 30, plan[224] / 6, delta=0.2)

    def test_last_stage_keeps_one_epoch_past_the_budget(self):
        self.assertEqual(fit_stages(REQUESTED, {112: 3.0, 224: 12.0}, 1.0), [(224, 1)])
        self.assertEqual(fit_stages([(224, 4)], {224: 12.0}, 0.0), [(224, 1)])

    def test_split_at(self):
        self.assertEqual(split_at(REQUESTED, 0), ([], REQUESTED))
        self.assertEqual(split_at(REQUESTED, 36), (REQUESTED, []))
        self.assertEqual(split_at(REQUESTED, 31), ([(112, 30), (224, 1)], [(224, 5)]))


class BudgetedScheduleTest(unittest.TestCase):
    def test_without_budget_the_request_runs_as_is(self):
        schedule = BudgetedSchedule(REQUESTED, 10, 0.1)
        schedule.fit({112: 1.0, 224: 4.0})
        self.assertEqual(schedule.plan, REQUESTED)
        self.assertFalse(schedule.out_of_time(0))
        self.assertEqual(schedule.side(29), 112)
        self.assertEqual(schedule.side(30), 224)

    def test_times_as_probed_fit_without_a_cut_and_end_at_lr_zero(self):
        spe = {112: 3.7, 224: 13.3}
        schedule, record, lrs, spent = simulate(160.0, spe, spe)
        self.assertFalse(record["cut"])
        self.assertLessEqual(spent, 160.0)
        self.assertEqual(record["done_epochs"], record["planned_epochs"])
        self.assertLess(record["planned_epochs"], 36)
        self.assertEqual(record["done_stages"][-1][0], 224)
        self.assertLess(lrs[-1], 0.01 * 0.4)
        self.assertAlmostEqual(max(lrs), 0.4, places=6)
        self.assertEqual(record["refits"], [])

    def test_slower_epochs_are_refitted_and_still_end_at_224_with_lr_zero(self):
        probe = {112: 3.7, 224: 13.3}
        actual = {112: 1.3 * 3.7, 224: 1.3 * 13.3}
        schedule, record, lrs, spent = simulate(160.0, probe, actual)
        self.assertTrue(record["refits"])
        self.assertFalse(record["cut"])
        self.assertLessEqual(spent, 160.0)
        self.assertEqual(record["done_stages"][-1][0], 224)
        self.assertLess(lrs[-1], 0.01 * 0.4)
        self.assertEqual(record["measured_seconds_per_epoch"]["112"], round(actual[112], 2))

    def test_a_pessimistic_probe_grows_back_in_the_warm_up_only(self):
        probe = {112: 3.7, 224: 13.3}
        actual = {112: 2.5, 224: 9.0}
        schedule, record, lrs, spent = simulate(160.0, probe, actual)
        self.assertGreater(record["planned_epochs"], epochs_of(record["first_plan"]))
        self.assertEqual([r["after_epoch"] for r in record["refits"]], [1])
        self.assertLessEqual(spent, 160.0)
        self.assertFalse(record["cut"])

    def test_lr_never_rises_after_its_peak(self):
        for actual in ({112: 2.5, 224: 9.0}, {112: 4.8, 224: 17.3}, {112: 3.7, 224: 40.0}):
            _, _, lrs, _ = simulate(160.0, {112: 3.7, 224: 13.3}, actual)
            after_peak = lrs[lrs.index(max(lrs)):]
            self.assertTrue(all(a >= b for a, b in zip(after_peak, after_peak[1:])), actual)

    def test_a_late_surprise_is_cut_at_the_budget_and_says_so(self):
        probe = {112: 3.7, 224: 13.3}
        actual = {112: 3.7, 224: 40.0}  # the 224 epochs turn out 3x slower than probed
        schedule, record, lrs, spent = simulate(160.0, probe, actual)
        self.assertTrue(record["cut"])
        self.assertTrue(record["partial_epoch"])
        self.assertLess(record["done_epochs"], record["planned_epochs"])
        self.assertLessEqual(spent, 160.0 + 40.0 / 40)  # at most one step past the budget
        self.assertEqual(epochs_of(record["done_stages"]), record["done_epochs"])

    def test_budget_smaller_than_the_probe_cuts_at_once(self):
        schedule, record, lrs, spent = simulate(20.0, {112: 3.7, 224: 13.3}, {112: 3.7, 224: 13.3})
        self.assertTrue(record["cut"])
        self.assertEqual(record["steps_done"], 0)
        self.assertEqual(record["planned_stages"], [(224, 1)])


if __name__ == "__main__":
    unittest.main()
