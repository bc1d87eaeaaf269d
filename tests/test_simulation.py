"""Cost model and decode simulation against closed forms, numerical integration and the decode loop."""
import dataclasses
import json
import math
import random
import statistics
import unittest

import support
from support import ROOT, build_deployment, model

import main
from rollout import acceptance, catalog, cells, costmodel, deployment, records, report, simulation


DEP = build_deployment()


def default_result(seed=main.SEED):
    grid = report.Grid(acceptance=main.ALPHAS, ks=main.KS, overheads=main.VERIFY_OVERHEADS, concurrencies=main.CONCURRENCIES)
    return grid, model(grid, DEP, traffic=support.traffic(seed=seed))


class CostModel(unittest.TestCase):
    def test_parameter_counts_match_published_totals(self):
        for name, billions in (("llama-3.2-1b", 1.236), ("llama-3.1-8b", 8.030), ("llama-3.3-70b", 70.554),
                               ("llama-3.1-405b", 405.853), ("qwen3-32b", 32.76)):
            self.assertAlmostEqual(deployment.model_params(catalog.MODELS[name]) / 1e9, billions, delta=0.006, msg=name)

    def test_kv_bytes_per_token(self):
        self.assertEqual(deployment.kv_bytes_per_token(catalog.MODELS["llama-3.1-8b"], "bf16"), 131_072)
        self.assertEqual(deployment.kv_bytes_per_token(catalog.MODELS["llama-3.3-70b"], "bf16"), 327_680)
        self.assertEqual(deployment.kv_bytes_per_token(catalog.MODELS["llama-3.3-70b"], "fp8"), 163_840)

    def test_default_memory_budget_by_hand(self):
        # vLLM's 0.92 of 4 x 80 GiB = 316,109,592,985.6 B. Weights: 70,553,706,496 parameters, of which
        # embeddings + lm_head 2 x 128,256 x 8,192 = 2,101,346,304 stay bf16: 72,655,052,800 B; the
        # EAGLE-3 head 1,403,027,456 x 2 B. KV: a mean context of 1024 + 1024 / 2 = 1536 tokens x
        # (327,680 + 4,096) B = 509,607,936 B a sequence.
        # vLLM keeps its runtime's memory out of the share (runtime_reserve_bytes), per GPU: its profile pass's
        # 8,192 tokens x (4 x 8,192 hidden + 2 x 28,672 / 4 MLP) x 2 B = 771,751,936 B, fp32 logits of its
        # 1,024 running requests x 128,256 x 4 B = 525,336,576 B, and 1 GiB: 2,370,830,336 B, 4 of them.
        reserve = 4 * (8_192 * (4 * 8_192 + 2 * 28_672 // 4) * 2 + 1_024 * 128_256 * 4 + 2 ** 30)
        self.assertEqual(deployment.runtime_reserve_bytes(DEP), reserve)
        free = 316_109_592_985.6 - reserve - 72_655_052_800 - 2 * 1_403_027_456
        self.assertEqual(DEP.context, 1536)
        self.assertEqual(deployment.max_concurrency(DEP), 453)
        self.assertEqual(deployment.max_concurrency(DEP), int(free // 509_607_936))
        self.assertAlmostEqual(deployment.memory_budget_bytes(DEP), 316_109_592_985.6 - reserve, delta=1.0)

    def test_engines_share_memory_their_own_way(self):
        # SGLang: 0.85 of all memory; TensorRT-LLM: weights + 0.9 of what they leave free.
        total = 4 * 80 * 2 ** 30
        static = 72_655_052_800 + 2 * 1_403_027_456
        sglang = build_deployment(engine="sglang")
        trtllm = build_deployment(engine="trtllm")
        self.assertAlmostEqual(deployment.memory_budget_bytes(sglang), 0.85 * total, delta=1.0)
        self.assertAlmostEqual(deployment.memory_budget_bytes(trtllm), static + 0.9 * (total - static), delta=1.0)
        self.assertEqual(deployment.max_concurrency(sglang), 425)     # 216,596,668,416 B / 509,607,936 B
        self.assertEqual(deployment.max_concurrency(trtllm), 473)     # 241,322,648,371 B / 509,607,936 B

    def test_fp8_keeps_embeddings_and_lm_head_in_bf16(self):
        m70 = catalog.MODELS["llama-3.3-70b"]
        self.assertEqual(deployment.weight_split(m70, "fp8")[2], 72_655_052_800)
        self.assertEqual(deployment.weight_split(m70, "bf16")[2], 2 * 70_553_706_496)
        # Tied embeddings (Llama 3.2 1B) count once: 1,235,814,400 parameters, 128,256 x 2,048 embedded.
        m1 = catalog.MODELS["llama-3.2-1b"]
        self.assertEqual(deployment.weight_split(m1, "fp8")[2], 1_235_814_400 + 128_256 * 2_048)

    def test_eps_rises_with_batch(self):
        for k in (1, 3, 5):
            eps = [costmodel.eps_decode(DEP, b, k) for b in (32, 64, 128, 256, 512)]
            self.assertEqual(eps, sorted(eps), msg=f"K={k}")

    def test_given_overhead_is_kept_at_batch_one_and_auto_is_the_model(self):
        self.assertAlmostEqual(costmodel.eps_grown(0.1, DEP, 1, 3), 0.1)
        for b in (1, 64, 256):
            self.assertAlmostEqual(costmodel.eps_grown("auto", DEP, b, 3), costmodel.eps_decode(DEP, b, 3))

    def test_given_overhead_never_undercuts_the_verify_pass(self):
        # At 32k context the model's own eps falls with B; a small given eps must not go below
        # what the verify pass over K+1 tokens costs beyond a plain step, nor below zero.
        long = build_deployment("llama-3.1-8b", "h200", 1, weights_dtype="bf16", kv_dtype="bf16", context=32768, draft="eagle3")
        for b in (1, 4, 16):
            verify_only = costmodel.pass_ms(long.target, long, b, 4, costmodel.fixed_ms(long, "pass")) / costmodel.decode_step_ms(long, b) - 1
            eps = costmodel.eps_grown(0.1, long, b, 3)
            self.assertGreaterEqual(eps, verify_only - 1e-12)
            self.assertGreaterEqual(eps, 0.0)

    def test_break_even_rises_with_concurrency(self):
        grid, result = default_result()
        for k in grid.ks:
            for eps in grid.overheads:
                alphas = [b.exact for b in result.breakeven if b.k == k and b.verify_overhead == eps]
                self.assertEqual(alphas, sorted(alphas), msg=(k, eps))


NORMAL = statistics.NormalDist()


def simpson(f, lo, hi, n=800):
    """Composite Simpson's rule: an integrator independent of the simulation's midpoint quadrature (simulation.Z_NODES)."""
    h = (hi - lo) / n
    return h / 3 * sum(f(lo + i * h) * (1 if i in (0, n) else 4 if i % 2 else 2) for i in range(n + 1))


def clip(alpha):
    return min(1.0, max(0.0, alpha))


def inverse_tau_mean(alpha, k, spread):
    """E[1/tau] over requests whose alpha is alpha + spread * z, z standard normal, clipped to [0, 1]."""
    if spread == 0:
        return 1 / acceptance.acceptance_length(alpha, k)
    return simpson(lambda z: NORMAL.pdf(z) / acceptance.acceptance_length(clip(alpha + spread * z), k), -8, 8)


def numpy_p99(values):
    """numpy.percentile(values, 99) with its default linear rule, written out."""
    values = sorted(values)
    at = 0.99 * (len(values) - 1)
    low = int(at)
    return values[low] + (at - low) * (values[min(low + 1, len(values) - 1)] - values[low])


def loop_reference(alpha, k, spread, output_spread, output_tokens, replicates, batch, plain_over_spec, seed=0):
    """Every request of the simulation's own draws decoded by decode_request, round by round: per request
    (TPOT in rounds per token, two-pass TPOT in rounds per token, rounds' accepted drafts). The two-pass
    model's second pass is a coin flip per round: always after a rejection, else when another of the B
    sequences rejects, with probability 1 - f^(B-1), f the share of full rounds over all requests."""
    rng = random.Random(99)
    decoded = []
    for r in range(replicates):
        draws = simulation.draw_requests(simulation.REPLICATE_REQUESTS, seed, r, output_spread)
        for z, scale, _, _, request_seed in zip(*draws):
            tokens = max(1, round(output_tokens * scale) - 1)
            accepted, time = acceptance.decode_request(clip(alpha + spread * z), k, tokens, random.Random(request_seed))
            decoded.append((tokens, accepted, time))
    rounds = [a for _, accepted, _ in decoded for a in accepted]
    other = 1 - (rounds.count(k) / len(rounds)) ** (batch - 1)
    out = []
    for tokens, accepted, time in decoded:
        second = sum(1 for a in accepted if a < k or rng.random() < other)
        out.append((time / tokens, (time + plain_over_spec * second) / tokens, accepted))
    return out


class Quantiles(unittest.TestCase):
    def test_percentile_is_numpys_linear_rule(self):
        # numpy.percentile([1, 2, 3, 5], 99) = 3 + 0.97 * (5 - 3) = 4.94, by hand.
        self.assertAlmostEqual(records.percentile([1.0, 2.0, 3.0, 5.0], 0.99), 4.94, places=12)
        self.assertEqual(records.percentile([7.0], 0.99), 7.0)
        rng = random.Random(3)
        for n in (2, 5, 128, 1000):
            values = [rng.random() for _ in range(n)]
            self.assertAlmostEqual(simulation.percentile_top(values, 0.99), records.percentile(sorted(values), 0.99), places=12)

    def test_mixture_quantile_by_hand(self):
        s = acceptance.ROUND_JITTER
        # One lognormal: its own quantile, exp(ln 2 - s^2/2 + s z_q).
        for q in (0.01, 0.5, 0.99):
            self.assertAlmostEqual(simulation.mixture_quantile(q, [(2.0, 1.0)]),
                                   2.0 * math.exp(-s * s / 2 + s * NORMAL.inv_cdf(q)), places=9)
        # 98% of the weight far below, 2% at scale 10: P99 is the upper component's median, 10 exp(-s^2/2).
        self.assertAlmostEqual(simulation.mixture_quantile(0.99, [(1.0, 0.98), (10.0, 0.02)]), 10 * math.exp(-s * s / 2),
                               places=9)
        # Two equal halves at 1 and 2: the median lies between, where the shares sum to one half.
        x = simulation.mixture_quantile(0.5, [(1.0, 1.0), (2.0, 1.0)])
        self.assertAlmostEqual(simulation.mixture_share(x, [(1.0, 1.0), (2.0, 1.0)]), 0.5, places=12)
        self.assertTrue(1.0 < x < 2.0)


class DecodeSimulation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.grid, cls.result = default_result()
        cls.cells = [c for c in cls.result.cells if c.feasible]
        cls.small = report.Grid(acceptance=(0.3, 0.6, 0.8), ks=(1, 3, 5), overheads=("auto",), concurrencies=(1, 32, 256))
        cls.alike = model(cls.small, DEP, traffic=support.traffic(seed=0, alpha_spread=0.0)).cells
        cls.spread = model(cls.small, DEP, traffic=support.traffic(seed=0, alpha_spread=0.15)).cells

    def test_without_spread_the_simulated_speedup_is_the_closed_form(self):
        for c in self.alike:
            error = c.speedup_mc - c.speedup_exact
            self.assertLess(abs(error), 4 * c.speedup_mc_se, msg=c)
            self.assertLess(abs(error) / c.speedup_exact, 0.005, msg=c)

    def test_with_spread_the_speedup_is_one_over_the_mean_of_one_over_tau(self):
        # Numerical integration over the alpha distribution, independent of the simulation's quadrature (simulation.Z_NODES).
        for c in self.spread:
            expected = 1 / inverse_tau_mean(c.alpha, c.k, 0.15) / (1 + c.eps_eff)
            self.assertAlmostEqual(c.speedup_requests / expected, 1, delta=1e-3, msg=c)
            self.assertLess(abs(c.speedup_mc - expected), 4 * c.speedup_mc_se, msg=c)
            self.assertLess(abs(c.speedup_mc / expected - 1), 0.01, msg=c)
            if 0.15 < c.alpha < 0.85:
                self.assertLess(c.speedup_mc, c.speedup_exact, msg=c)

    def test_spread_raises_p99_tpot(self):
        # The case: alpha 0.6, K 3, B 32.
        grid = report.Grid(acceptance=(0.6,), ks=(3,), overheads=("auto",), concurrencies=(32,))
        wide = model(grid, DEP, traffic=support.traffic(seed=0, alpha_spread=0.15)).cells[0]
        alike = model(grid, DEP, traffic=support.traffic(seed=0, alpha_spread=0.0)).cells[0]
        self.assertGreater(wide.tpot_spec_p99_ms, 1.1 * alike.tpot_spec_p99_ms)
        self.assertLess(wide.speedup_mc, alike.speedup_mc)

    def test_p99_tpot_is_numpys_percentile_of_the_requests(self):
        # Exactly what vllm bench computes from the same requests (np.percentile, linear).
        for alpha, k, spread in ((0.7, 3, 0.11), (0.5, 5, 0.0)):
            dec = cells.decoder(0, spread, 0.8, 1024)(alpha, k)
            for batch, plain_ms, spec_ms in ((1, 10.0, 11.0), (64, 20.0, 35.0)):
                cell = simulation.cell_latency(dec, plain_ms, spec_ms, batch)
                skip = plain_ms * dec.full_share ** (batch - 1)
                self.assertAlmostEqual(cell.tpot_spec_p99_ms, spec_ms * numpy_p99(dec.per_token[0]), places=9)
                self.assertAlmostEqual(cell.tpot_spec_p50_ms, spec_ms * statistics.median(dec.per_token[0]), places=9)
                self.assertAlmostEqual(cell.tpot_plain_p99_ms, plain_ms * numpy_p99(dec.tpot_plain), places=9)
                self.assertAlmostEqual(cell.tpot_spec_two_pass_p99_ms, numpy_p99(
                    [spec_ms * s + plain_ms * n - skip * f for s, n, f in zip(*dec.per_token)]), places=9)

    def test_two_pass_chunk_p99_against_sampled_rounds(self):
        # No spread: a round pays a second plain step unless all B sequences accept all K, 1 - a^(K*B).
        rng = random.Random(11)
        for alpha, k, batch in ((0.9, 3, 1), (0.95, 1, 4), (0.7, 3, 2)):
            dec = cells.decoder(0, 0.0, 0.8, 1024)(alpha, k)
            second = 1 - alpha ** (k * batch)
            chunks = [(13.0 + (10.0 if rng.random() < second else 0.0)) * rng.lognormvariate(-0.03 ** 2 / 2, 0.03)
                      for _ in range(100_000)]
            cell = simulation.cell_latency(dec, 10.0, 13.0, batch)
            self.assertAlmostEqual(cell.round_itl_two_pass_p99_ms / numpy_p99(chunks), 1, delta=0.005, msg=(alpha, k, batch))

    def test_the_chart_draws_the_itl_the_tables_print(self):
        # itl_parts (the chart's distributions) and cell_latency (the tables) agree at P99 and P50.
        for alpha, k, batch in ((0.7, 3, 1), (0.5, 5, 64)):
            dec = cells.decoder(0, 0.11, 0.8, 1024)(alpha, k)
            parts = simulation.itl_parts(dec, 10.0, 14.0, batch)
            cell = simulation.cell_latency(dec, 10.0, 14.0, batch)
            for q, name in ((0.99, "p99"), (0.5, "p50")):
                self.assertAlmostEqual(simulation.mixture_quantile(q, parts.spec), getattr(cell, f"itl_spec_{name}_ms"), places=6)
                self.assertAlmostEqual(simulation.mixture_quantile(q, parts.two_pass), getattr(cell, f"itl_spec_two_pass_{name}_ms"), places=6)
                self.assertAlmostEqual(simulation.mixture_quantile(q, parts.plain), getattr(cell, f"itl_plain_{name}_ms"), places=6)

    def test_two_pass_shortcut_falls_back_when_the_slowest_do_not_hold_the_tail(self):
        dec = cells.decoder(0, 0.11, 0.8, 1024)(0.7, 3)
        everyone = sorted(2.0 * s + 1.0 * n - 0.5 * f for s, n, f in zip(*dec.per_token))
        plain_ms, spec_ms, batch = 1.0, 2.0, 2                  # skip = 1 - (1 - f^1) ... computed below
        p_other = 1 - dec.full_share
        expected = numpy_p99([spec_ms * s + plain_ms * n - plain_ms * (1 - p_other) * f
                              for s, n, f in zip(*dec.per_token)])
        self.assertAlmostEqual(simulation.cell_latency(dec, plain_ms, spec_ms, batch).tpot_spec_two_pass_p99_ms, expected, places=9)
        # Candidates that cannot hold the tail (the fastest requests): the guard must see it and sort everyone.
        fastest = sorted(zip(*dec.per_token))[:len(dec.heavy)]
        wrong = dataclasses.replace(dec, heavy=fastest, rest_max=(max(dec.per_token[0]), max(dec.per_token[1])))
        self.assertAlmostEqual(simulation.cell_latency(wrong, plain_ms, spec_ms, batch).tpot_spec_two_pass_p99_ms, expected,
                               places=9)
        self.assertTrue(everyone)

    def test_plain_tpot_p99_at_fixed_length(self):
        # Plain decoding of N = 1023 tokens: TPOT is the mean of N round jitters (s.d. 3% each), so
        # its P99 over requests is 1 + 2.326 x 0.03 / sqrt(1023) = 1.00218 plain steps, by hand.
        dec = cells.decoder(0, 0.11, 0.0, 1024)(0.7, 3)
        self.assertAlmostEqual(records.percentile(dec.tpot_plain, 0.99), 1.00218, delta=0.0003)
        self.assertAlmostEqual(dec.means[3], 1.0, delta=0.0002)

    def test_lengths_average_the_mean(self):
        # The lognormal multiplier has mean 1 (exp(s z - s^2/2)); without the correction it would be 1.38 at s = 0.8.
        draws = [simulation.draw_requests(128, 0, r, 0.8) for r in range(16)]
        lengths = [x for d in draws for x in d.length]
        self.assertAlmostEqual(statistics.fmean(lengths), 1.0, delta=0.02)
        self.assertAlmostEqual(statistics.median(lengths), math.exp(-0.32), delta=0.03)

    def test_mean_tpot_and_itl_are_round_time_over_the_requests_tau(self):
        for c in self.cells:
            per_token = c.round_ms / c.acceptance_length_requests
            self.assertAlmostEqual(c.itl_spec_mean_ms / per_token, 1, delta=0.01, msg=c)
            self.assertAlmostEqual(c.tpot_spec_mean_ms / per_token, 1, delta=0.01, msg=c)
            self.assertAlmostEqual(c.itl_plain_mean_ms / c.plain_step_ms, 1, delta=0.001)
            self.assertAlmostEqual(c.tpot_plain_mean_ms / c.plain_step_ms, 1, delta=0.001)

    def test_two_pass_speedup_closed_form(self):
        # Without spread a round pays one plain step more unless all B sequences accept all K: 1 - a^(K*B).
        for c in self.alike:
            p = 1 - c.alpha ** (c.k * c.concurrency)
            expected = c.acceptance_length / (1 + c.eps_eff + p)
            self.assertAlmostEqual(c.speedup_two_pass_mc / expected, 1, delta=0.005, msg=c)

    def test_per_token_p99_exceeds_plain_when_empty_rounds_hold_the_tail(self):
        # Above plain once eps > 0, while rounds that accept nothing hold over 1% of tokens; and the sample
        # stopped where P99 TPOT was precise, or at its cap.
        for c in self.cells:
            if c.eps_eff > 0.05 and c.zero_accept_token_share > 0.01:
                self.assertGreater(c.itl_spec_p99_ms, c.itl_plain_p99_ms, msg=c)
            self.assertTrue(c.tpot_p99_halfwidth <= simulation.PRECISION
                            or c.simulated_requests == simulation.MAX_REPLICATES * simulation.REPLICATE_REQUESTS, msg=c)

    def test_zero_accept_share_without_spread(self):
        # Tokens from rounds that accepted nothing: (1 - a) / tau of all tokens.
        for c in self.alike:
            self.assertAlmostEqual(c.zero_accept_token_share, (1 - c.alpha) / c.acceptance_length, places=9)

    def test_default_spread_is_specbundles_median(self):
        data = json.loads((ROOT / "bench" / "specbundle_h200_bs8.json").read_text())
        heads = {}
        for target, datasets in data["models"].items():
            for name, bench in datasets.items():
                for row in bench["results"]:
                    if row["steps"] == 3 and row["topk"] == 1:
                        for head in row["metrics"]:
                            if head["accept_length"] > 1:
                                heads.setdefault((target, head["Name"]), []).append(
                                    acceptance.alpha_from_length(head["accept_length"], 3))
        spreads = [statistics.stdev(alphas) for alphas in heads.values() if len(alphas) >= 3]
        self.assertAlmostEqual(statistics.median(spreads), main.ALPHA_SPREAD, delta=0.005)

    def test_alpha_edges(self):
        grid = report.Grid(acceptance=(0.0, 1.0), ks=(4,), overheads=(0.2,), concurrencies=(1, 8))
        cells = model(grid, DEP, traffic=support.traffic(seed=0, alpha_spread=0.0)).cells
        for c in cells:
            tau = 1.0 if c.alpha == 0.0 else 5.0
            self.assertEqual(c.acceptance_length, tau)
            self.assertAlmostEqual(c.speedup_mc / c.speedup_exact, 1, delta=0.005)
        zero = next(c for c in cells if c.alpha == 0.0 and c.concurrency == 1)
        self.assertAlmostEqual(zero.speedup_exact, 1 / (1 + zero.eps_eff))

    def test_infeasible_cells_carry_no_numbers(self):
        too_many = deployment.max_concurrency(DEP) + 1
        grid = report.Grid(acceptance=(0.6,), ks=(3,), overheads=("auto",), concurrencies=(1, too_many))
        cells = model(grid, DEP).cells
        self.assertTrue(cells[0].feasible)
        self.assertFalse(cells[1].feasible)
        self.assertIsNone(cells[1].speedup_exact)
        self.assertIsNone(cells[1].tpot_spec_p99_ms)


if __name__ == "__main__":
    unittest.main()
