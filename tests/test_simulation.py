"""Cost model and decode simulation against closed forms and brute force."""
import random
import unittest

from load_main import load_main

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


class WeightedQuantile(unittest.TestCase):
    def test_against_brute_force_expansion(self):
        rng = random.Random(7)
        parts = []
        for _ in range(4):
            values = sorted(rng.random() for _ in range(rng.randint(1, 40)))
            parts.append((rng.uniform(0.5, 3.0), rng.randint(1, 5), values))
        expanded = sorted(v * s for s, w, vs in parts for v in vs for _ in range(w))
        for q in (0.01, 0.5, 0.9, 0.99):
            index = next(i for i in range(len(expanded)) if (i + 1) >= q * len(expanded) - 1e-9)
            self.assertAlmostEqual(m.weighted_quantile(q, parts), expanded[index], places=9)


class DecodeSimulation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.grid, cls.result = default_result()
        cls.cells = [c for c in cls.result["cells"] if c["feasible"]]

    def test_monte_carlo_speedup_agrees_with_closed_form(self):
        for seed in (0, 1, 2):
            _, result = default_result(seed)
            for c in result["cells"]:
                error = c["speedup_mc"] - c["speedup_exact"]
                self.assertLess(abs(error) / c["speedup_exact"], 0.01, msg=c)
                self.assertLess(abs(error), 4 * c["speedup_mc_se"], msg=c)

    def test_mean_per_token_itl_is_round_time_over_tau(self):
        for c in self.cells:
            self.assertAlmostEqual(c["itl_spec_mean_ms"] / (c["round_ms"] / c["acceptance_length"]), 1, delta=0.01)
            self.assertAlmostEqual(c["itl_plain_mean_ms"] / c["plain_step_ms"], 1, delta=0.01)

    def test_two_pass_speedup_closed_form(self):
        # A round pays one plain step more unless all B sequences accept all K: P = 1 - a^(K*B).
        for c in self.cells:
            p = 1 - c["alpha"] ** (c["k"] * c["concurrency"])
            expected = c["acceptance_length"] / (1 + c["eps_eff"] + p)
            self.assertAlmostEqual(c["speedup_two_pass_mc"] / expected, 1, delta=0.01, msg=c)

    def test_p99_ordering(self):
        for c in self.cells:
            self.assertGreaterEqual(c["itl_spec_two_pass_p99_ms"], c["itl_spec_p99_ms"], msg=c)
            # Above plain once eps > 0, while rounds that accept nothing hold over 1% of tokens.
            if c["eps_eff"] > 0.05 and c["zero_accept_token_share"] > 0.01:
                self.assertGreater(c["itl_spec_p99_ms"], c["itl_plain_p99_ms"], msg=c)

    def test_round_p99_is_round_time_at_jitter_p99(self):
        for c in self.cells:
            ratio = c["round_itl_spec_p99_ms"] / c["itl_plain_p99_ms"]
            self.assertAlmostEqual(ratio, 1 + c["eps_eff"], delta=0.03 * (1 + c["eps_eff"]))

    def test_alpha_edges(self):
        grid = m.Grid((0.0, 1.0), (4,), (0.2,), (1, 8))
        cells = m.analyse(grid, DEP, 0, n_rounds=2000)["cells"]
        for c in cells:
            tau = 1.0 if c["alpha"] == 0.0 else 5.0
            self.assertEqual(c["acceptance_length"], tau)
            self.assertAlmostEqual(c["speedup_mc"] / c["speedup_exact"], 1, delta=0.01)
        zero = next(c for c in cells if c["alpha"] == 0.0 and c["concurrency"] == 1)
        self.assertAlmostEqual(zero["speedup_exact"], 1 / (1 + zero["eps_eff"]))

    def test_infeasible_cells_carry_no_numbers(self):
        too_many = m.max_concurrency(DEP) + 1
        grid = m.Grid((0.6,), (3,), ("auto",), (1, too_many))
        cells = m.analyse(grid, DEP, 0, n_rounds=2000)["cells"]
        self.assertTrue(cells[0]["feasible"])
        self.assertFalse(cells[1]["feasible"])
        self.assertIsNone(cells[1]["speedup_exact"])
        self.assertIsNone(cells[1]["itl_spec_p99_ms"])


if __name__ == "__main__":
    unittest.main()
