"""Cost model and decode simulation against closed forms, numerical integration and the decode loop."""
import json
import math
import random
import statistics
import unittest

from load_main import ROOT, load_main

m = load_main()
DEP = m.make_deployment()


def default_result(seed=m.SEED):
    grid = m.Grid(m.ALPHAS, m.KS, m.VERIFY_OVERHEADS, m.CONCURRENCIES)
    return grid, m.analyse(grid, DEP, seed)


class CostModel(unittest.TestCase):
    def test_parameter_counts_match_published_totals(self):
        for name, billions in (("llama-3.2-1b", 1.236), ("llama-3.1-8b", 8.030), ("llama-3.3-70b", 70.554),
                               ("llama-3.1-405b", 405.853), ("qwen3-32b", 32.76)):
            self.assertAlmostEqual(m.model_params(m.MODELS[name]) / 1e9, billions, delta=0.006, msg=name)

    def test_kv_bytes_per_token(self):
        self.assertEqual(m.kv_bytes_per_token(m.MODELS["llama-3.1-8b"], "bf16"), 131_072)
        self.assertEqual(m.kv_bytes_per_token(m.MODELS["llama-3.3-70b"], "bf16"), 327_680)
        self.assertEqual(m.kv_bytes_per_token(m.MODELS["llama-3.3-70b"], "fp8"), 163_840)

    def test_default_memory_budget_by_hand(self):
        # vLLM's 0.92 of 4 x 80 GiB = 316,109,592,985.6 B. Weights: 70,553,706,496 parameters, of which
        # embeddings + lm_head 2 x 128,256 x 8,192 = 2,101,346,304 stay bf16: 72,655,052,800 B; the
        # EAGLE-3 head 1,403,027,456 x 2 B. KV: a mean context of 1024 + 1024 / 2 = 1536 tokens x
        # (327,680 + 4,096) B = 509,607,936 B a sequence.
        free = 316_109_592_985.6 - 72_655_052_800 - 2 * 1_403_027_456
        self.assertEqual(DEP.context, 1536)
        self.assertEqual(m.max_concurrency(DEP), 472)
        self.assertEqual(m.max_concurrency(DEP), int(free // 509_607_936))
        self.assertAlmostEqual(m.memory_budget_bytes(DEP), 316_109_592_985.6, delta=1.0)

    def test_engines_share_memory_their_own_way(self):
        # SGLang: 0.85 of all memory; TensorRT-LLM: weights + 0.9 of what they leave free.
        total = 4 * 80 * 2 ** 30
        static = 72_655_052_800 + 2 * 1_403_027_456
        sglang = m.make_deployment(engine="sglang")
        trtllm = m.make_deployment(engine="trtllm")
        self.assertAlmostEqual(m.memory_budget_bytes(sglang), 0.85 * total, delta=1.0)
        self.assertAlmostEqual(m.memory_budget_bytes(trtllm), static + 0.9 * (total - static), delta=1.0)
        self.assertEqual(m.max_concurrency(sglang), 425)     # 216,596,668,416 B / 509,607,936 B
        self.assertEqual(m.max_concurrency(trtllm), 473)     # 241,322,648,371 B / 509,607,936 B

    def test_fp8_keeps_embeddings_and_lm_head_in_bf16(self):
        m70 = m.MODELS["llama-3.3-70b"]
        self.assertEqual(m.weight_bytes(m70, "fp8"), 72_655_052_800)
        self.assertEqual(m.weight_bytes(m70, "bf16"), 2 * 70_553_706_496)
        # Tied embeddings (Llama 3.2 1B) count once: 1,235,814,400 parameters, 128,256 x 2,048 embedded.
        m1 = m.MODELS["llama-3.2-1b"]
        self.assertEqual(m.weight_bytes(m1, "fp8"), 1_235_814_400 + 128_256 * 2_048)

    def test_eps_rises_with_batch(self):
        for k in (1, 3, 5):
            eps = [m.model_overhead(DEP, b, k) for b in (32, 64, 128, 256, 512)]
            self.assertEqual(eps, sorted(eps), msg=f"K={k}")

    def test_given_overhead_is_kept_at_batch_one_and_auto_is_the_model(self):
        self.assertAlmostEqual(m.effective_overhead(0.1, DEP, 1, 3), 0.1)
        for b in (1, 64, 256):
            self.assertAlmostEqual(m.effective_overhead("auto", DEP, b, 3), m.model_overhead(DEP, b, 3))

    def test_given_overhead_never_undercuts_the_verify_pass(self):
        # At 32k context the model's own eps falls with B; a small given eps must not go below
        # what the verify pass over K+1 tokens costs beyond a plain step, nor below zero.
        long = m.make_deployment("llama-3.1-8b", "h200", 1, "bf16", "bf16", 32768, "eagle3")
        for b in (1, 4, 16):
            verify_only = m.pass_ms(long.target, long, b, 4, m.engine_pass_ms(long)) / m.decode_step_ms(long, b) - 1
            eps = m.effective_overhead(0.1, long, b, 3)
            self.assertGreaterEqual(eps, verify_only - 1e-12)
            self.assertGreaterEqual(eps, 0.0)

    def test_break_even_rises_with_concurrency(self):
        grid, result = default_result()
        for k in grid.ks:
            for eps in grid.overheads:
                alphas = [b["exact"] for b in result["breakeven"] if b["k"] == k and b["verify_overhead"] == eps]
                self.assertEqual(alphas, sorted(alphas), msg=(k, eps))


NORMAL = statistics.NormalDist()


def simpson(f, lo, hi, n=800):
    """Composite Simpson's rule: an integrator independent of main.py's midpoint quadrature."""
    h = (hi - lo) / n
    return h / 3 * sum(f(lo + i * h) * (1 if i in (0, n) else 4 if i % 2 else 2) for i in range(n + 1))


def clip(alpha):
    return min(1.0, max(0.0, alpha))


def inverse_tau_mean(alpha, k, spread):
    """E[1/tau] over requests whose alpha is alpha + spread * z, z standard normal, clipped to [0, 1]."""
    if spread == 0:
        return 1 / m.acceptance_length(alpha, k)
    return simpson(lambda z: NORMAL.pdf(z) / m.acceptance_length(clip(alpha + spread * z), k), -8, 8)


def tpot_p99(alpha, k, spread, tokens):
    """P99 of a request's rounds per token, by integration: given its alpha, rounds over N tokens are normal
    (renewal theory) with the jitter's variance added; P(TPOT <= x) = E_z[Phi((x - mu(z)) / sd(z))]."""
    def moments(a):
        tau, square, _ = m.round_moments(a, k)
        mean = (tokens / tau + (square - tau) / (2 * tau * tau)) / tokens
        return mean, math.sqrt(tokens * (square - tau * tau) / tau ** 3 + 0.03 ** 2 * tokens / tau) / tokens

    def cdf_given(x, a):
        mean, sd = moments(a)
        return NORMAL.cdf((x - mean) / sd) if sd > 0 else float(x >= mean)

    def cdf(x):
        if spread == 0:
            return cdf_given(x, alpha)
        return simpson(lambda z: NORMAL.pdf(z) * cdf_given(x, clip(alpha + spread * z)), -8, 8, 400)

    lo, hi = 0.0, 2.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < 0.99 else (lo, mid)
    return (lo + hi) / 2


class Quantiles(unittest.TestCase):
    def test_percentile_is_numpys_linear_rule(self):
        # numpy.percentile([1, 2, 3, 5], 99) = 3 + 0.97 * (5 - 3) = 4.94, by hand.
        self.assertAlmostEqual(m.percentile([1.0, 2.0, 3.0, 5.0], 0.99), 4.94, places=12)
        self.assertEqual(m.percentile([7.0], 0.99), 7.0)
        rng = random.Random(3)
        for n in (2, 5, 128, 1000):
            values = [rng.random() for _ in range(n)]
            self.assertAlmostEqual(m.percentile_top(values, 0.99), m.percentile(sorted(values), 0.99), places=12)

    def test_mixture_quantile_by_hand(self):
        s = m.ROUND_JITTER
        # One lognormal: its own quantile, exp(ln 2 - s^2/2 + s z_q).
        for q in (0.01, 0.5, 0.99):
            self.assertAlmostEqual(m.mixture_quantile(q, [(2.0, 1.0)]),
                                   2.0 * math.exp(-s * s / 2 + s * NORMAL.inv_cdf(q)), places=9)
        # 98% of the weight far below, 2% at scale 10: P99 is the upper component's median, 10 exp(-s^2/2).
        self.assertAlmostEqual(m.mixture_quantile(0.99, [(1.0, 0.98), (10.0, 0.02)]), 10 * math.exp(-s * s / 2),
                               places=9)
        # Two equal halves at 1 and 2: the median lies between, where the shares sum to one half.
        x = m.mixture_quantile(0.5, [(1.0, 1.0), (2.0, 1.0)])
        self.assertAlmostEqual(m.mixture_share(x, [(1.0, 1.0), (2.0, 1.0)]), 0.5, places=12)
        self.assertTrue(1.0 < x < 2.0)


class DecodeSimulation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.grid, cls.result = default_result()
        cls.cells = [c for c in cls.result["cells"] if c["feasible"]]
        cls.small = m.Grid((0.3, 0.6, 0.8), (1, 3, 5), ("auto",), (1, 32, 256))
        cls.alike = m.analyse(cls.small, DEP, 0, spread=0.0)["cells"]
        cls.spread = m.analyse(cls.small, DEP, 0, spread=0.15)["cells"]

    def test_without_spread_the_simulated_speedup_is_the_closed_form(self):
        for c in self.alike:
            error = c["speedup_mc"] - c["speedup_exact"]
            self.assertLess(abs(error), 4 * c["speedup_mc_se"], msg=c)
            self.assertLess(abs(error) / c["speedup_exact"], 0.005, msg=c)

    def test_with_spread_the_speedup_is_one_over_the_mean_of_one_over_tau(self):
        # Numerical integration over the alpha distribution, independent of main.py's quadrature.
        for c in self.spread:
            expected = 1 / inverse_tau_mean(c["alpha"], c["k"], 0.15) / (1 + c["eps_eff"])
            self.assertAlmostEqual(c["speedup_requests"] / expected, 1, delta=1e-3, msg=c)
            self.assertLess(abs(c["speedup_mc"] - expected), 4 * c["speedup_mc_se"], msg=c)
            self.assertLess(abs(c["speedup_mc"] / expected - 1), 0.01, msg=c)
            if 0.15 < c["alpha"] < 0.85:
                self.assertLess(c["speedup_mc"], c["speedup_exact"], msg=c)

    def test_spread_raises_p99_tpot(self):
        # The case: alpha 0.6, K 3, B 32.
        grid = m.Grid((0.6,), (3,), ("auto",), (32,))
        wide = m.analyse(grid, DEP, 0, spread=0.15)["cells"][0]
        alike = m.analyse(grid, DEP, 0, spread=0.0)["cells"][0]
        self.assertGreater(wide["tpot_spec_p99_ms"], 1.1 * alike["tpot_spec_p99_ms"])
        self.assertLess(wide["speedup_mc"], alike["speedup_mc"])

    def test_p99_tpot_against_integration(self):
        # Fixed lengths (--output-spread 0): a request's rounds per token is normal given its alpha.
        for spread in (0.0, 0.11):
            decode = m.decoder(0, spread, 0.0, 1024)
            for alpha, k in ((0.6, 3), (0.8, 5), (0.3, 1)):
                dec = decode(alpha, k)
                self.assertAlmostEqual(m.percentile(dec.tpot_spec, 0.99) / tpot_p99(alpha, k, spread, 1023), 1,
                                       delta=0.015, msg=(spread, alpha, k))

    def test_renewal_draws_match_the_decode_loop(self):
        # Just past EXACT_TOKENS, where the normal limit is least accurate: rounds and full rounds.
        tokens = m.EXACT_TOKENS + 1
        draws = [m.draw_requests(512, 7, r, 0.0) for r in range(16)]
        for alpha, k in ((0.7, 3), (0.4, 1), (0.9, 5)):
            rng = random.Random(3)
            loop = [m.decode_request(alpha, k, tokens, rng)[0] for _ in range(8000)]
            rounds = [len(a) for a in loop]
            drawn = [r for d in draws for r in m.run_requests(((1.0, alpha, tokens + 1),), k, 0.0, d)]
            self.assertTrue(all(r[1] == tokens for r in drawn))
            se = statistics.stdev(rounds) / len(rounds) ** 0.5
            self.assertLess(abs(statistics.fmean(r[2] for r in drawn) - statistics.fmean(rounds)), 4 * se)
            self.assertAlmostEqual(statistics.stdev(r[2] for r in drawn) / statistics.stdev(rounds), 1, delta=0.06)
            self.assertAlmostEqual(m.percentile(sorted(r[2] for r in drawn), 0.99) /
                                   m.percentile(sorted(rounds), 0.99), 1, delta=0.03)
            full = [a.count(k) for a in loop]
            se = statistics.stdev(full) / len(full) ** 0.5
            self.assertLess(abs(statistics.fmean(r[3] for r in drawn) - statistics.fmean(full)), 4 * se + 0.02)

    def test_mean_tpot_and_itl_are_round_time_over_the_requests_tau(self):
        for c in self.cells:
            per_token = c["round_ms"] / c["acceptance_length_requests"]
            self.assertAlmostEqual(c["itl_spec_mean_ms"] / per_token, 1, delta=0.01, msg=c)
            self.assertAlmostEqual(c["tpot_spec_mean_ms"] / per_token, 1, delta=0.01, msg=c)
            self.assertAlmostEqual(c["itl_plain_mean_ms"] / c["plain_step_ms"], 1, delta=0.001)
            self.assertAlmostEqual(c["tpot_plain_mean_ms"] / c["plain_step_ms"], 1, delta=0.001)

    def test_two_pass_speedup_closed_form(self):
        # Without spread a round pays one plain step more unless all B sequences accept all K: 1 - a^(K*B).
        for c in self.alike:
            p = 1 - c["alpha"] ** (c["k"] * c["concurrency"])
            expected = c["acceptance_length"] / (1 + c["eps_eff"] + p)
            self.assertAlmostEqual(c["speedup_two_pass_mc"] / expected, 1, delta=0.005, msg=c)

    def test_p99_ordering_and_precision(self):
        for c in self.cells:
            self.assertGreaterEqual(c["itl_spec_two_pass_p99_ms"], c["itl_spec_p99_ms"], msg=c)
            self.assertGreaterEqual(c["tpot_spec_two_pass_p99_ms"], c["tpot_spec_p99_ms"], msg=c)
            self.assertLessEqual(c["itl_spec_p99_ms"], c["round_itl_spec_p99_ms"] * (1 + 1e-12), msg=c)
            self.assertTrue(c["tpot_p99_halfwidth"] <= m.PRECISION
                            or c["simulated_requests"] == m.MAX_REPLICATES * m.REPLICATE_REQUESTS, msg=c)
            # Above plain once eps > 0, while rounds that accept nothing hold over 1% of tokens.
            if c["eps_eff"] > 0.05 and c["zero_accept_token_share"] > 0.01:
                self.assertGreater(c["itl_spec_p99_ms"], c["itl_plain_p99_ms"], msg=c)

    def test_chunk_p99_is_round_time_at_jitter_p99(self):
        for c in self.cells:
            self.assertAlmostEqual(c["round_itl_spec_p99_ms"] / c["round_ms"],
                                   math.exp(-0.03 ** 2 / 2 + 0.03 * NORMAL.inv_cdf(0.99)), places=9)

    def test_zero_accept_share_without_spread(self):
        # Tokens from rounds that accepted nothing: (1 - a) / tau of all tokens.
        for c in self.alike:
            self.assertAlmostEqual(c["zero_accept_token_share"], (1 - c["alpha"]) / c["acceptance_length"], places=9)

    def test_default_spread_is_specbundles_median(self):
        data = json.loads((ROOT / "bench" / "specbundle_h200_bs8.json").read_text())
        heads = {}
        for model, datasets in data["models"].items():
            for name, bench in datasets.items():
                for row in bench["results"]:
                    if row["steps"] == 3 and row["topk"] == 1:
                        for head in row["metrics"]:
                            if head["accept_length"] > 1:
                                heads.setdefault((model, head["Name"]), []).append(
                                    m.alpha_from_length(head["accept_length"], 3))
        spreads = [statistics.stdev(alphas) for alphas in heads.values() if len(alphas) >= 3]
        self.assertAlmostEqual(statistics.median(spreads), m.ALPHA_SPREAD, delta=0.005)

    def test_alpha_edges(self):
        grid = m.Grid((0.0, 1.0), (4,), (0.2,), (1, 8))
        cells = m.analyse(grid, DEP, 0, spread=0.0)["cells"]
        for c in cells:
            tau = 1.0 if c["alpha"] == 0.0 else 5.0
            self.assertEqual(c["acceptance_length"], tau)
            self.assertAlmostEqual(c["speedup_mc"] / c["speedup_exact"], 1, delta=0.005)
        zero = next(c for c in cells if c["alpha"] == 0.0 and c["concurrency"] == 1)
        self.assertAlmostEqual(zero["speedup_exact"], 1 / (1 + zero["eps_eff"]))

    def test_infeasible_cells_carry_no_numbers(self):
        too_many = m.max_concurrency(DEP) + 1
        grid = m.Grid((0.6,), (3,), ("auto",), (1, too_many))
        cells = m.analyse(grid, DEP, 0)["cells"]
        self.assertTrue(cells[0]["feasible"])
        self.assertFalse(cells[1]["feasible"])
        self.assertIsNone(cells[1]["speedup_exact"])
        self.assertIsNone(cells[1]["tpot_spec_p99_ms"])


if __name__ == "__main__":
    unittest.main()
