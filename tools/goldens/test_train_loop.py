"""The trainer's budgeted loop (train_fashion_mnist.train) on the CPU with a small network: no timm
needed, torch, numpy and PIL are (skipped without them).

    python3 -m unittest discover -s tools/goldens -p 'test_train*.py'
"""
import time
import unittest

missing = ""
try:
    import numpy as np
    import torch
    import train_fashion_mnist as trainer
except ImportError as e:  # the training modules need torch, numpy and PIL
    trainer, missing = None, str(e)


def small_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10))


@unittest.skipIf(trainer is None, f"the trainer cannot be imported here: {missing}")
class TrainLoopTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(0)
        self.images = rng.integers(0, 256, (1024, 28, 28), dtype=np.uint8)
        self.labels = rng.integers(0, 10, 1024, dtype=np.uint8)
        self.spec = trainer.TrainSpec("small", "none", {}, size=28, epochs=6, lr=0.1, batch=128,
                                      stages=[(16, 4), (28, 2)])

    def train(self, max_seconds):
        model = small_net()
        start = time.monotonic()
        history, budget = trainer.train(model, self.spec, self.images, self.labels, torch.device("cpu"), 1,
                                        max_seconds)
        return model, history, budget, time.monotonic() - start

    def test_without_a_budget_the_stages_run_as_given(self):
        _, history, budget, _ = self.train(None)
        self.assertIsNone(budget)
        self.assertEqual([h["side"] for h in history], [16] * 4 + [28] * 2)
        self.assertTrue(all(h["steps"] == 8 for h in history))

    def test_a_generous_budget_runs_every_epoch_and_restores_the_probed_state(self):
        reference = small_net().state_dict()
        _, history, budget, _ = self.train(600.0)
        self.assertFalse(budget["cut"])
        self.assertEqual(budget["planned_stages"], [(16, 4), (28, 2)])
        self.assertEqual(budget["done_epochs"], 6)
        self.assertEqual(sorted(budget["probe"]), ["16", "28"])
        self.assertLess(budget["final_lr"], 0.01 * self.spec.lr)
        # The probe's steps are undone: without a budget the same seed gives the same weights.
        model_free, _, _, _ = self.train(None)
        model_budget, _, _, _ = self.train(600.0)
        for key, value in model_free.state_dict().items():
            self.assertTrue(torch.equal(value, model_budget.state_dict()[key]), key)
        self.assertFalse(torch.equal(reference["0.weight"], model_free.state_dict()["0.weight"]))

    def test_a_tight_budget_shrinks_the_plan_and_keeps_to_it(self):
        # The probe says 0.1 s per step at 16 and 1 s at 28 (19.2 s for the request): 10 s fit one
        # epoch of each. The real steps are far quicker, so no refit or cut follows.
        real_probe = trainer.probe_sides
        probed = {16: dict(seconds_per_step=0.1, warmup_seconds=0.0, micro_batches=1),
                  28: dict(seconds_per_step=1.0, warmup_seconds=0.0, micro_batches=1)}
        trainer.probe_sides = lambda *args: probed
        try:
            _, history, budget, spent = self.train(10.0)
        finally:
            trainer.probe_sides = real_probe
        self.assertEqual(budget["planned_stages"], [(16, 1), (28, 1)])
        self.assertEqual(budget["done_stages"], [(16, 1), (28, 1)])
        self.assertEqual([h["side"] for h in history], [16, 28])
        self.assertFalse(budget["cut"])
        self.assertLess(spent, 10.0)
        self.assertEqual(budget["steps_done"], budget["planned_steps"])
        self.assertLess(budget["final_lr"], 0.05 * self.spec.lr)  # the shortened one-cycle ran to its end

    def test_a_batch_out_of_memory_in_the_probe_trains_in_micro_batches(self):
        real_step, calls = trainer.train_step, []

        def step_short_of_memory(model, optimizer, images_u8, target, side, lr, micro, generator):
            calls.append((side, micro))
            if side == 28 and micro == 1:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
            return real_step(model, optimizer, images_u8, target, side, lr, micro, generator)

        trainer.train_step = step_short_of_memory
        try:
            _, history, budget, _ = self.train(600.0)
        finally:
            trainer.train_step = real_step
        self.assertEqual(budget["probe"]["16"]["micro_batches"], 1)
        self.assertEqual(budget["probe"]["28"]["micro_batches"], 2)
        self.assertIn((28, 2), calls)
        self.assertEqual(len(history), 6)
        self.assertTrue(all(h["loss"] == h["loss"] for h in history))  # no NaN from the split batches

    def test_a_budget_spent_by_the_probe_still_returns(self):
        _, history, budget, _ = self.train(1e-3)
        self.assertTrue(budget["cut"])
        self.assertEqual(budget["steps_done"], 0)
        self.assertEqual(history, [])


if __name__ == "__main__":
    unittest.main()
