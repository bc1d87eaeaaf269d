"""The slow tier: closed forms and the verdict's agreement checked against brute force, counted by sampling or
swept over deployments: MoE expert reads against sampled routing, the closed loop's prefill share against a simulated
loop, and the verdict, the best-K table and the schedule over a sweep of deployments. Run by .ci/run after the
README's command, and by hand:

    python tests/run.py -p "slow_*.py"
"""
import random
import unittest

from support import build_deployment  # (first: puts code/ on the import path)

from rollout import costmodel

from rollout.render.words import subtract
from rollout import experts as moe
from test_first_answer import as_json, schedule_k, SWEEP


class ExpertReadsBySampling(unittest.TestCase):
    def test_expected_experts_against_a_brute_force_count(self):
        rng = random.Random(11)
        for experts, k, tokens in ((128, 8, 4), (16, 1, 32), (256, 8, 9)):
            trials = 3000
            counts = [len({e for _ in range(tokens) for e in rng.sample(range(experts), k)}) for _ in range(trials)]
            mean = sum(counts) / trials
            sd = (sum((c - mean) ** 2 for c in counts) / (trials - 1)) ** 0.5
            expected = moe.expected_experts(experts, k, tokens)
            self.assertLess(abs(mean - expected), 4 * sd / trials ** 0.5 + 1e-9, (experts, k, tokens, mean, expected))

    def test_skewed_expected_experts_against_a_brute_force_count(self):
        # Each token draws k distinct experts with the shares as marginals (systematic sampling: one uniform u,
        # the experts whose cumulative intervals hold u, u + 1, ..., u + k - 1); count the distinct ones.
        rng = random.Random(5)
        experts, k, exponent = 64, 4, 0.9
        shares = moe.expert_shares(experts, k, exponent)
        edges = [sum(shares[:i + 1]) for i in range(experts)]

        def token():
            u = rng.random()
            return {next(i for i, edge in enumerate(edges) if edge > u + j) for j in range(k)}

        for tokens in (1, 8, 32):
            trials = 2000
            counts = [len(set().union(*(token() for _ in range(tokens)))) for _ in range(trials)]
            mean = sum(counts) / trials
            expected = moe.expected_experts(experts, k, tokens, exponent)
            self.assertLess(abs(mean / expected - 1), 0.01, (tokens, mean, expected))
            if tokens > 1:   # and fewer than uniform routing touches
                self.assertLess(expected, 0.95 * moe.expected_experts(experts, k, tokens))

    def test_the_busiest_expert_parallel_gpu_against_a_brute_force_count(self):
        # Tokens take k distinct experts uniformly; expert e lives on GPU e % G (round-robin); count the busiest.
        rng = random.Random(7)
        for experts, k, ranks, tokens in ((256, 8, 8, 1), (128, 8, 4, 1), (16, 1, 4, 1), (256, 8, 8, 4),
                                          (128, 8, 8, 16), (384, 8, 8, 32)):
            trials, total = 3000, 0
            for _ in range(trials):
                seen = set()
                for _ in range(tokens):
                    seen.update(rng.sample(range(experts), k))
                counts = [0] * ranks
                for e in seen:
                    counts[e % ranks] += 1
                total += max(counts)
            model = moe.busiest_rank_experts(experts, k, tokens, 0.0, ranks)
            self.assertLess(abs(total / trials / model - 1), 0.015, (experts, k, ranks, tokens, total / trials, model))


class PrefillShareBySimulation(unittest.TestCase):
    def test_closed_loop_prefill_per_step_by_brute_force(self):
        # B slots; each request decodes its own length (mean O) and is replaced by one with I prompt tokens,
        # prefilled in the next step. A request's TPOT sees the prompts prefilled while it decodes: the others'.
        rng = random.Random(3)
        batch, prompt, mean_out = 25, 5000, 500
        left = [rng.randint(1, 2 * mean_out - 1) for _ in range(batch)]
        arriving = [False] * batch                        # slot i's request is in its prefill step
        seen, decoded = 0, 0
        for _ in range(200_000):
            prefilled = prompt * sum(arriving)
            for i in range(batch):
                if arriving[i]:
                    arriving[i] = False                   # its prompt, not a decode step of its own
                    continue
                seen += prefilled                         # every prompt of this step is another request's
                decoded += 1
                left[i] -= 1
                if left[i] == 0:
                    left[i], arriving[i] = rng.randint(1, 2 * mean_out - 1), True
        dep = build_deployment(input_tokens=prompt, output_tokens=mean_out)
        # 240 a step, not the server's 250: a 2% tolerance tells them apart.
        self.assertAlmostEqual(seen / decoded / costmodel.prefill_tokens(dep, batch), 1, delta=0.02)
        self.assertEqual(costmodel.prefill_tokens(dep, 1), 0.0)   # concurrency 1: no other request


class Agreement(unittest.TestCase):
    """The verdict's ranges, the best-K table's plan column and the schedule say the same at every batch."""

    def test_over_a_sweep_of_deployments(self):
        for argv in SWEEP:
            with self.subTest(argv=" ".join(argv)):
                data = as_json(argv + ["--concurrency", "1,8,32,96,256,512", "--slo", "none", "--input-tokens",
                                       "256", "--output-tokens", "256"])
                plan, v = data["plan"], data["verdict"]
                close = [tuple(c) for c in v["close_calls"]]
                rows = [r for r in data["best_k"] if r["plan"] and r["k"] is not None]
                self.assertGreater(len(rows), 2)
                for r in rows:
                    b = r["concurrency"]
                    self.assertEqual(schedule_k(plan["schedule"], b), r["k"], f"B = {b}")
                    self.assertEqual(any(lo <= b <= hi for lo, hi in close), r["too_close"], f"B = {b}")
                pays = subtract(analysis_paying(plan["schedule"]), close)
                for r in rows:
                    b = r["concurrency"]
                    self.assertEqual(any(lo <= b <= hi for lo, hi in pays), r["k"] > 0 and not r["too_close"])
                at = next(r for r in rows if r["concurrency"] == v["concurrency"])
                # the model's own decode speedup and range, before its class's known error moves them (the table's)
                model = v["modelled"] or {key: v[key] for key in ("decode_speedup", "decode_speedup_interval")}
                if at["k"]:   # the verdict's K is the best K there, and its decode speedup the table's
                    self.assertEqual(v["k"], at["k"])
                    self.assertAlmostEqual(model["decode_speedup"], at["speedup"], places=4)
                # the verdict's own decode range holds 1.0x exactly where the close calls say so (the K it runs there,
                # best or, where that is off, the best with speculation on)
                low, high = model["decode_speedup_interval"]
                self.assertEqual(low < 1.0 < high, any(lo <= v["concurrency"] <= hi for lo, hi in close))


def analysis_paying(schedule):
    from rollout.schedule import paying_ranges
    return paying_ranges([tuple(row) for row in schedule])


if __name__ == "__main__":
    unittest.main()
