"""main.py's lesson, as a learner reads it, against the package's production versions: a reference and its
optimised twin (as micrograd tests its engine against PyTorch). Each pair is held equal to rounding, or, where
the package computes in closed form what main.py counts in a loop, to a bound a 2% error fails."""
import random
import statistics
import unittest

from support import build_deployment, main, run

from rollout import acceptance, records
from rollout.costmodel import eps_decode, FIT, plain_step_ms

ALPHAS = (0.0, 0.05, 0.3, 0.55, 0.7, 0.8, 0.95, 1.0)
KS = (1, 2, 3, 4, 5, 7)


class Formulas(unittest.TestCase):
    def test_tau_and_the_two_speedups(self):
        for alpha in ALPHAS:
            for k in KS:
                with self.subTest(alpha=alpha, k=k):
                    self.assertAlmostEqual(main.tau(alpha, k), acceptance.acceptance_length(alpha, k), places=12)
                    for eps in (0.0, 0.15, 0.6):
                        self.assertAlmostEqual(main.lesson_speedup(alpha, k, eps),
                                               acceptance.lesson_speedup(alpha, k, eps), places=12)
                        self.assertAlmostEqual(main.exact_speedup(alpha, k, eps),
                                               acceptance.exact_speedup(alpha, k, eps), places=12)

    def test_the_break_even_both_ways(self):
        for k in KS:
            for eps in (0.0, 0.1, 0.35, 1.0, 2.5, float(k), k + 0.5):
                with self.subTest(k=k, eps=eps):
                    rate = acceptance.breakeven_rate(k, eps)   # None where eps / K is not below 1: no rate pays
                    if rate is None:
                        self.assertGreaterEqual(main.breakeven_rate(k, eps), 1.0)
                    else:
                        self.assertAlmostEqual(main.breakeven_rate(k, eps), rate, places=12)
                    mine, theirs = main.breakeven_alpha(k, eps), acceptance.exact_breakeven(k, eps)
                    self.assertEqual(mine is None, theirs is None)
                    if mine is not None:
                        self.assertAlmostEqual(mine, theirs, places=9)
                        self.assertAlmostEqual(main.tau(mine, k), 1 + eps, places=9)   # where it breaks even

    def test_the_p99_is_the_records_percentile(self):
        rng = random.Random(3)
        for n in (1, 2, 7, 50, 101, 1000):
            values = [rng.expovariate(1.0) for _ in range(n)]
            with self.subTest(n=n):
                self.assertEqual(main.p99(values), records.percentile(sorted(values), 0.99))
        self.assertAlmostEqual(main.p99(list(range(101))), 99.0)   # by hand: rank 0.99 x 100 = 99


class ToyLoop(unittest.TestCase):
    def test_the_toy_loop_is_the_packages_decode_loop_draw_for_draw(self):
        for alpha, k, tokens, seed in ((0.7, 3, 128, 0), (0.4, 5, 300, 1), (1.0, 2, 10, 2), (0.0, 4, 9, 3)):
            with self.subTest(alpha=alpha, k=k):
                self.assertEqual(main.toy_decode(alpha, k, tokens, random.Random(seed)),
                                 acceptance.decode_request(alpha, k, tokens, random.Random(seed)))

    def test_its_rounds_deliver_the_closed_forms_tau(self):
        for alpha, k in ((0.7, 3), (0.5, 5)):
            rng = random.Random(11)
            kept = [a for _ in range(200) for a in main.toy_decode(alpha, k, 512, rng)[0]]
            with self.subTest(alpha=alpha, k=k):   # s.e. of the mean over ~40k rounds: < 0.5%
                self.assertAlmostEqual(statistics.fmean(kept) + 1, acceptance.acceptance_length(alpha, k),
                                       delta=0.02 * acceptance.acceptance_length(alpha, k))


class TwoPassTail(unittest.TestCase):
    def test_no_rejection_costs_nothing_more_and_every_rejection_one_plain_step(self):
        plain_ms, eps = 20.0, 0.25
        _, spec, two_pass = main.tails(1.0, 3, eps, plain_ms, random.Random(0), requests=30, tokens=64)
        self.assertEqual(two_pass, spec)                        # alpha = 1: every round keeps all K
        _, spec, two_pass = main.tails(0.0, 3, eps, plain_ms, random.Random(0), requests=30, tokens=64)
        self.assertAlmostEqual(two_pass, spec + plain_ms, places=9)   # alpha = 0: a round a token, each rejected

    def test_its_mean_is_the_closed_form_of_a_round(self):
        # Mean TPOT under the two-pass model: ((1 + eps) + P(a round rejects)) plain steps a round over tau tokens a
        # round, P(rejects) = 1 - alpha^K (acceptance.round_distribution's last share is alpha^K).
        plain_ms, eps, alpha, k, tokens = 20.0, 0.2, 0.7, 3, 2048
        rng = random.Random(5)
        tpots = []
        for _ in range(60):
            kept, time = main.toy_decode(alpha, k, tokens, rng)
            tpots.append((time * (1 + eps) + sum(a < k for a in kept)) * plain_ms / tokens)
        keep_all = acceptance.round_distribution(alpha, k)[-1]
        expected = plain_ms * (1 + eps + 1 - keep_all) / acceptance.acceptance_length(alpha, k)
        self.assertAlmostEqual(keep_all, alpha ** k, places=12)
        self.assertAlmostEqual(statistics.fmean(tpots), expected, delta=0.02 * expected)


class TheWalk(unittest.TestCase):
    def test_the_run_prints_the_walk_before_the_grid_at_the_plans_alpha(self):
        # --mix chat:1:0.7 sets the plan's alpha; the walk runs at it and the grid's first K, on B = 1.
        status, text, err = run(["--no-write", "--mix", "chat:1:0.7", "--alphas", "0.7", "--ks", "3",
                                 "--concurrency", "1"])
        self.assertEqual(status, 0, err)
        dep = build_deployment()
        eps = eps_decode(dep, 1, 3, FIT)
        self.assertIn(f"per-token alpha 0.70, K = 3, eps {eps:.3f} ==", text)
        self.assertIn(f"tau = 1 + a + ... + a^K = {acceptance.acceptance_length(0.7, 3):.3f} tokens a round", text)
        self.assertIn(f"exact tau/(1 + eps) = {acceptance.exact_speedup(0.7, 3, eps):.2f}x", text)
        self.assertIn(f"per-token alpha {acceptance.exact_breakeven(3, eps):.3f}", text)
        self.assertIn(f"plain {main.tails(0.7, 3, eps, plain_step_ms(dep, 1, FIT), random.Random(0))[0]:.2f} ms", text)
        self.assertLess(text.index("== The lesson on"), text.index("== K = 3, decode eps"))


if __name__ == "__main__":
    unittest.main()
