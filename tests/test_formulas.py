"""Acceptance mathematics and break-even against closed forms and published values."""
import doctest
import importlib
import json
import random
import unittest

from support import ROOT, build_deployment

import main
import rollout
from rollout import acceptance, costmodel, simulation


PUBLISHED = ROOT / "bench" / "published.json"          # a copy of shared/calibration/published.json
SHARED_COPY = ROOT.parent / "shared" / "calibration" / "published.json"


def published_entry(entry_id):
    entries = json.loads(PUBLISHED.read_text())["entries"]
    return next(e for e in entries if e["id"] == entry_id)


class PublishedData(unittest.TestCase):
    @unittest.skipUnless(SHARED_COPY.exists(), "the team's shared/ folder is not beside this checkout")
    def test_repository_copy_matches_shared(self):
        self.assertEqual(json.loads(PUBLISHED.read_text()), json.loads(SHARED_COPY.read_text()))


class Doctests(unittest.TestCase):
    def test_docstring_examples(self):
        # A docstring's example(...) is the reference deployment main.py's constants build (the package keeps no
        # default of its own): rollout/__init__.py says so.
        attempted = 0
        for module in [main, rollout] + [importlib.import_module(f"rollout.{name}") for name in rollout.MODULES]:
            result = doctest.testmod(module, extraglobs={"example": main.SETTINGS.deployment.build})
            self.assertEqual(result.failed, 0, module.__name__)
            attempted += result.attempted
        self.assertGreaterEqual(attempted, 61)   # as many as before the split, and the package's own


class AcceptanceLength(unittest.TestCase):
    def test_against_the_explicit_sum(self):
        for alpha in (0.0, 0.3, 0.55, 0.8, 0.99, 1.0):
            for k in (1, 3, 5, 8):
                self.assertAlmostEqual(acceptance.acceptance_length(alpha, k), sum(alpha ** i for i in range(k + 1)))

    def test_edges_are_exact(self):
        self.assertEqual(acceptance.acceptance_length(0.0, 5), 1.0)
        self.assertEqual(acceptance.acceptance_length(1.0, 5), 6.0)
        self.assertEqual(acceptance.acceptance_rate(1.0, 4), 1.0)
        self.assertEqual(acceptance.acceptance_rate(0.0, 4), 0.0)

    def test_leviathan_table_1(self):
        # Draft cost c = 0, so the speedup is tau itself; the table prints two decimals.
        for point in published_entry("leviathan-table1-theory")["points"]:
            got = acceptance.exact_speedup(point["alpha"], point["k"], 0.0)
            self.assertAlmostEqual(got, point["speedup"], delta=0.006, msg=point)

    def test_reference_worked_example(self):
        # By hand: K = 5, a = 0.7 gives 1 + K*a = 4.5, tau = 2.94 and r = 0.39.
        self.assertAlmostEqual(acceptance.lesson_speedup(0.7, 5, 0.0), 4.5)
        self.assertAlmostEqual(acceptance.acceptance_length(0.7, 5), 2.9412, places=4)
        self.assertAlmostEqual(acceptance.acceptance_rate(0.7, 5), 0.3882, places=4)


class ThreeAlphas(unittest.TestCase):
    def test_rate_055_in_per_token_units(self):
        # By bisection on tau(a, K) = 1 + K r: rate 0.55 is a = 0.73 at K = 3 and a = 0.807 at K = 5.
        self.assertAlmostEqual(acceptance.alpha_from_rate(0.55, 3), 0.730, delta=0.001)
        self.assertAlmostEqual(acceptance.alpha_from_rate(0.55, 5), 0.807, delta=0.001)

    def test_round_trips(self):
        for alpha in (0.05, 0.3, 0.6, 0.9):
            for k in (1, 3, 7):
                tau = acceptance.acceptance_length(alpha, k)
                self.assertAlmostEqual(acceptance.alpha_from_length(tau, k), alpha, places=9)
                self.assertAlmostEqual(acceptance.alpha_from_rate(acceptance.acceptance_rate(alpha, k), k), alpha, places=9)
                self.assertAlmostEqual(1 + k * acceptance.acceptance_rate(alpha, k), tau)

    def test_lesson_formula_is_exact_for_the_rate(self):
        # (1 + K*r) is tau when alpha means vLLM's rate r; it overestimates with the per-token a.
        alpha, k, eps = 0.7, 5, 0.2
        r = acceptance.acceptance_rate(alpha, k)
        self.assertAlmostEqual(acceptance.lesson_speedup(r, k, eps), acceptance.exact_speedup(alpha, k, eps))
        self.assertGreater(acceptance.lesson_speedup(alpha, k, eps), acceptance.exact_speedup(alpha, k, eps))

    def test_vllm_ci_acceptance_length(self):
        # vLLM's CI expects tau about 2.81 at K = 3; by hand 1 + .768 + .768^2 + .768^3 = 2.811.
        tau = published_entry("vllm-ci-eagle3-k3")["points"][0]["acceptance_length"]
        alpha = acceptance.alpha_from_length(tau, 3)
        self.assertAlmostEqual(acceptance.acceptance_length(alpha, 3), tau, places=9)
        self.assertAlmostEqual(alpha, 0.768, delta=0.001)


class BreakEven(unittest.TestCase):
    def test_lesson_hand_worked(self):
        self.assertAlmostEqual(acceptance.breakeven_rate(5, 0.15), 0.03)

    def test_exact_root(self):
        for k in (1, 3, 5):
            for eps in (0.05, 0.4, 0.99):
                alpha = acceptance.exact_breakeven(k, eps)
                self.assertAlmostEqual(acceptance.acceptance_length(alpha, k), 1 + eps, places=9)
                self.assertAlmostEqual(acceptance.exact_speedup(alpha, k, eps), 1.0, places=9)

    def test_lessons_breakeven_is_the_break_even_rate(self):
        for k, eps in ((3, 0.5), (5, 0.15), (4, 2.0)):
            self.assertAlmostEqual(acceptance.acceptance_rate(acceptance.exact_breakeven(k, eps), k), acceptance.breakeven_rate(k, eps))

    def test_required_rate_by_hand(self):
        self.assertAlmostEqual(acceptance.required_rate(3, 1.5, 0.1), 0.6)        # 1.5 / 3 + 0.1
        self.assertAlmostEqual(acceptance.required_rate(3, 2.7, 0.1), 1.0)        # 0.9 + 0.1: only alpha = 1 passes
        self.assertIsNone(acceptance.required_rate(3, 2.8, 0.1))                  # 0.933 + 0.1 > 1: nothing passes
        self.assertIsNone(acceptance.required_rate(3, 3.0, 0.0))                  # no break-even at all

    def test_no_break_even_when_a_round_costs_more_than_k_plus_1_steps(self):
        self.assertIsNone(acceptance.exact_breakeven(3, 3.0))
        self.assertIsNone(acceptance.exact_breakeven(3, 4.5))
        self.assertIsNone(acceptance.breakeven_rate(3, 4.5))
        self.assertIsNotNone(acceptance.exact_breakeven(3, 2.99))


class DecodeLoop(unittest.TestCase):
    def test_accepted_drafts_follow_the_truncated_geometric(self):
        # P(A = j) = (1 - a) a^j for j < K, P(A = K) = a^K; each share within 4 standard errors.
        alpha, k = 0.6, 4
        accepted, _ = acceptance.decode_request(alpha, k, 200_000, random.Random(5))
        n = len(accepted)
        for j in range(k + 1):
            p = (1 - alpha) * alpha ** j if j < k else alpha ** k
            self.assertLess(abs(accepted.count(j) / n - p), 4 * (p * (1 - p) / n) ** 0.5, msg=j)

    def test_tokens_and_jitter(self):
        accepted, jitter = acceptance.decode_request(0.7, 3, 1000, random.Random(1))
        emitted = sum(a + 1 for a in accepted)
        self.assertGreaterEqual(emitted, 1000)
        self.assertLess(emitted - 1000, 4)                      # the last round overshoots by at most K
        self.assertAlmostEqual(jitter / len(accepted), 1.0, delta=4 * 0.03 / len(accepted) ** 0.5)

    def test_round_moments_by_enumeration(self):
        for alpha in (0.0, 0.3, 0.77, 0.999, 1.0):
            for k in (1, 3, 8):
                probs = [(1 - alpha) * alpha ** j for j in range(k)] + [alpha ** k]
                tau, square, full = acceptance.round_moments(alpha, k)
                self.assertAlmostEqual(tau, sum((j + 1) * p for j, p in enumerate(probs)), places=9)
                self.assertAlmostEqual(square, sum((j + 1) ** 2 * p for j, p in enumerate(probs)), places=6)
                self.assertAlmostEqual(full, probs[k], places=12)
                self.assertAlmostEqual(tau, acceptance.acceptance_length(alpha, k), places=9)

    def test_one_round_process(self):
        """round_distribution is the truncated geometric written out by hand; round_mix's rounds per token are it
        over tau; round_moments are its moments; the loop draws from it
        (test_accepted_drafts_follow_the_truncated_geometric)."""
        for alpha in (0.0, 0.45, 1.0):
            for k in (1, 4):
                probs = [(1 - alpha) * alpha ** j for j in range(k)] + [alpha ** k]
                got = acceptance.round_distribution(alpha, k)
                self.assertEqual(len(got), k + 1)
                for p, q in zip(got, probs):
                    self.assertAlmostEqual(p, q, places=15)
                tokens = [(a + 1, p) for a, p in enumerate(got)]          # T = A + 1 tokens a round
                moments = acceptance.round_moments(alpha, k)
                self.assertAlmostEqual(moments[0], sum(t * p for t, p in tokens), places=12)
                self.assertAlmostEqual(moments[1], sum(t * t * p for t, p in tokens), places=12)
                self.assertAlmostEqual(moments[2], got[-1], places=15)
                tau, per_token = simulation.round_mix(((1.0, alpha, 100),), k, 0.0)
                self.assertAlmostEqual(tau, acceptance.acceptance_length(alpha, k), places=12)
                for p, q in zip(per_token, probs):
                    self.assertAlmostEqual(p, q / tau, places=12)

    def test_one_speedup_with_the_prefill_share(self):
        """For one tau the token-cost form (best K, the mix) and the eps form (the cells) are the same speedup:
        tau (D + q) / ((1 + eps) D + tau q), D the decode step and q its prefill share, worked out by hand."""
        dep = build_deployment(input_tokens=4000, output_tokens=400)
        for batch, k, alpha in ((1, 3, 0.7), (64, 5, 0.5)):
            d, q = costmodel.decode_step_ms(dep, batch), costmodel.prefill_share_ms(dep, batch)
            eps, tau = costmodel.eps_decode(dep, batch, k), acceptance.acceptance_length(alpha, k)
            by_hand = tau * (d + q) / ((1 + eps) * d + tau * q)
            self.assertAlmostEqual(acceptance.speedup(tau, costmodel.eps_seen(eps, tau, dep, batch)), by_hand, places=12)
            self.assertAlmostEqual(costmodel.tpot_speedup(dep, batch, 1 / tau, costmodel.round_ms(dep, batch, k)), by_hand, places=12)


if __name__ == "__main__":
    unittest.main()
