"""bench/calibrate.py against the published points and served runs: costmodel.FIT is a minimum of the script's loss
(the whole fit from its start, which reproduces FIT exactly, is the manual tier's: EAGLE3_ROLLOUT_SLOW=1), the fit
reproduces the points within their bounds, each plain-step source left out is predicted within its bound, and
bench/gemm_kernels.py's choice of a GEMM's transition is FIT's."""
import functools
import importlib.util
import json
import math
import os
import statistics
import sys
import unittest

from support import ROOT

from rollout import costmodel


def load_calibrate():
    spec = importlib.util.spec_from_file_location("eagle3_calibrate", ROOT / "bench" / "calibrate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["eagle3_calibrate"] = module
    spec.loader.exec_module(module)
    return module


HELD_OUT = ("TensorRT-LLM 0.9 static batch", "NIM closed loop")


def load_bench(name):
    spec = importlib.util.spec_from_file_location(f"eagle3_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def refit():
    """bench/calibrate.py's fit of every point (the held-out fits are bench/intervals.py's, in held_out_errors.json)."""
    cal = load_calibrate()
    return tuple(cal.fit_constants(cal.all_points()))


@functools.lru_cache(maxsize=None)
def refitted():
    """The whole fit from the search's start: about 40 s of one core, so the manual tier's (EAGLE3_ROLLOUT_SLOW=1)."""
    return refit()


def loss_around(cal, points, fit, names):
    """The script's loss at fit, and at each constant in names moved by 1% of its search box either way."""
    moved = {}
    for name in names:
        low, high = cal.BOUNDS[name]
        for sign in (1, -1):
            value = min(high, max(low, getattr(fit, name) + sign * 0.01 * (high - low)))
            moved[name, sign] = cal.loss(fit._replace(**{name: value}), points)
    return cal.loss(fit, points), moved


class Calibration(unittest.TestCase):
    """bench/calibrate.py against the published points: the fit reproduces them within the bounds."""

    @classmethod
    def setUpClass(cls):
        cls.cal = load_calibrate()
        cls.points = cls.cal.all_points()
        cls.rows = cls.cal.errors(costmodel.FIT, cls.points)

    @unittest.skipUnless(os.environ.get("EAGLE3_ROLLOUT_SLOW"), "manual tier: the whole fit from its start (~40 s)")
    def test_fitted_constants_in_main_are_what_the_script_fits(self):
        self.assertEqual(costmodel.Fit(*refitted()), costmodel.FIT)

    def test_speculative_points_within_bound(self):
        errors = [abs(r["error"]) for r in self.rows if self.cal.in_bound(r)]
        self.assertEqual(len(errors), 17)
        self.assertLessEqual(statistics.median(errors), 0.10)
        self.assertLessEqual(max(errors), 0.20)

    def test_plain_steps_within_goal_by_source_tp_and_dtype(self):
        plain = [r for r in self.rows if r["kind"] in ("decode", "tpot")]   # not the slopes: a view of NIM's points
        self.assertEqual(len(plain), 191 + 2)
        errors = [abs(r["error"]) for r in plain]
        self.assertLessEqual(statistics.median(errors), 0.10)
        self.assertLessEqual(max(errors), 0.25)
        for key in (lambda r: r["source"], lambda r: r["tp"], lambda r: r["dtype"]):
            for group, (n, median, worst) in self.cal.summary(plain, key).items():
                self.assertLessEqual(median, 0.10, group)

    def test_out_of_sample_each_plain_step_source_predicted_by_a_fit_without_it(self):
        # The physics must carry from one source to the other: TensorRT-LLM 0.9's static batches
        # predicted from a fit without them, and NIM's closed loop likewise (6.8% and 10.8% now).
        rows = json.loads((ROOT / "code" / "rollout" / "held_out_errors.json").read_text())["rows"]
        for source in HELD_OUT:
            errors = [abs(math.expm1(r["log_error"])) for r in rows if r["source"] == source]
            self.assertGreater(len(errors), 90, source)
            self.assertLessEqual(statistics.median(errors), 0.15, source)

    def test_a_point_by_hand(self):
        # Llama 3.1 8B bf16 on one H100 at batch 1, 200 in / 200 out (NIM): 7.386 ms measured.
        row = next(r for r in self.rows if r["what"] == "llama-3.1-8b h100-sxm TP1 bf16 B=1 200/200")
        self.assertEqual(row["published"], 7.386)
        f = costmodel.FIT
        # Closed loop at B = 1: no other request, so no prompt rides along (prefill_tokens). Mean context 300.
        bw = 3.35e9 * f.bw_hopper                                             # bytes per ms
        weights = 16_060_522_496 / bw
        attention = max(300 * 131_072 / bw, 32 * 300 * f.attn_ns / 1e6) + 131_072 / bw
        gemm = 2 * 8_030_261_248 / (989e9 * f.flop_eff)
        attending = 4 * 32 * 4096 * 300 / (989e9 * f.flop_eff)
        pair = lambda read, math_ms: (read ** f.overlap + math_ms ** f.overlap) ** (1 / f.overlap)   # overlapped
        compute = pair(weights, gemm) - weights + pair(attention, attending) - attention
        activations = 32 * 2 * (8 * 4096 + 3 * 14336) / bw     # two add-RMSNorms and SiLU-and-mul, one token a layer
        # the engine: one decoded token (the prompt token is not sampled) and one served sequence
        by_hand = (weights + attention + compute + activations + f.pass_fixed_ms_trtllm + 32 * f.layer_us / 1e3
                   + f.token_us_vllm / 1e3 + f.seq_us_trtllm / 1e3)   # vLLM's cost per token
        self.assertAlmostEqual(row["predicted"], by_hand, places=9)
        self.assertLess(abs(row["error"]), 0.10)


if __name__ == "__main__":
    unittest.main()
