"""Catalog, memory, the cost model's shape, best K, and the deployment flags."""
import json
import math
import statistics
import unittest

from support import build_deployment, run

from rollout import bestk, catalog, costmodel, deployment, trust


def run_json(argv):
    status, out, err = run(argv + ["--json", "--no-write"])
    if status != 0:
        raise AssertionError(err)
    return json.loads(out)


def run_status(argv):
    status, _, err = run(argv + ["--no-write"])
    return status, err


class Catalog(unittest.TestCase):
    def test_draft_head_sizes(self):
        # Counted from the heads' configs (SafeAILab/EAGLE eagle/model/cnets.py): EAGLE-3 about 0.425 B (8B) and 1.40 B
        # (70B); the EAGLE README gives 0.25 B and 0.99 B for EAGLE-1.
        for model, version, billions, delta in (("llama-3.1-8b", 3, 0.425, 0.002), ("llama-3.3-70b", 3, 1.40, 0.01),
                                                ("llama-3.1-8b", 1, 0.25, 0.005), ("llama-3.3-70b", 1, 0.99, 0.005)):
            got = deployment.eagle_head_params(catalog.MODELS[model], version) / 1e9
            self.assertAlmostEqual(got, billions, delta=delta, msg=(model, version))

    def test_every_named_entry_builds(self):
        for gpu in ("a100-sxm-80gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "l40s", "rtx-4090", "mi300x", "gh200",
                    "gh200-144gb", "h20", "b300", "mi325x", "mi355x"):
            for draft in ("eagle3", "eagle", "ngram", "llama-3.2-1b"):
                dep = build_deployment("llama-3.1-8b", gpu, 1, weights_dtype="fp8", kv_dtype="bf16", context=1024, draft=draft)
                # A step at least streams the weights at the datasheet bandwidth, and a round costs more.
                floor = dep.target.weight_bytes / (dep.bandwidth_tbs * 1e12) * 1e3
                self.assertGreater(costmodel.plain_step_ms(dep, 1), floor, (gpu, draft))
                self.assertGreater(costmodel.round_ms(dep, 1, 3), costmodel.decode_step_ms(dep, 1), (gpu, draft))

    def test_the_2026_gpus_by_their_datasheets(self):
        # (memory GB, TB/s, dense bf16 and fp8 TFLOP/s, family): NVIDIA's GH200 and H100 datasheets (the H100 NVL's
        # 1,671 and 3,341 TFLOPS are with sparsity, halved), aiconfigurator's h20_sxm.yaml and b300_sxm.yaml, AMD's
        # MI325X and MI355X pages.
        for gpu, row in (("h100-nvl", (94, 3.9, 835, 1671, "hopper")), ("gh200", (96, 4.0, 989, 1979, "hopper")), ("gh200-144gb", (144, 4.9, 989, 1979, "hopper")),
                         ("h20", (96, 4.0, 148, 296, "hopper")), ("b300", (288, 7.75, 2250, 4500, "blackwell")),
                         ("mi325x", (256, 6.0, 1307, 2615, "cdna")), ("mi355x", (288, 8.0, 2500, 5000, "cdna"))):
            g = catalog.GPUS[gpu]
            self.assertEqual((g["memory_gib"], g["bandwidth_tbs"], g["bf16"], g["fp8"], g["family"]), row, gpu)
        self.assertEqual(catalog.GPUS["b300"]["bw_rel"], catalog.GPUS["b200"]["bw_rel"])   # borrowed: the same HBM3e stacks

    def test_json_deployment_facts(self):
        dep = run_json(["--alphas", "0.7", "--ks", "3", "--concurrency", "1"])["deployment"]
        self.assertEqual(dep["kv_bytes_per_token"], 327_680)
        # fp8: 1 byte for each linear weight, 2 for the 2 x 128,256 x 8,192 embedding and lm_head weights.
        self.assertEqual(dep["weight_bytes"], 70_553_706_496 + 2 * 128_256 * 8_192)
        self.assertEqual(dep["gpu_memory_utilization"], 0.92)
        self.assertEqual(dep["engine"], "vllm")
        self.assertAlmostEqual(dep["draft_params"] / 1e9, 1.40, delta=0.01)
        self.assertEqual(dep["target_params"], 70_553_706_496)
        self.assertEqual(dep["max_concurrency"], 453)                  # by hand: test_simulation, memory budget


class Memory(unittest.TestCase):
    def test_70b_fp8_on_one_h100_at_256_by_4k_does_not_fit(self):
        data = run_json(["--tp", "1", "--context", "4096", "--concurrency", "256", "--alphas", "0.7", "--ks", "3"])
        # 0.92 x 80 GiB = 79.03e9 B; vLLM's runtime reserve 3.08e9 (8,192 tokens x (4 x 8,192 + 2 x 28,672) x 2 B
        # of activations, 1,024 x 128,256 x 4 B of logits, 1 GiB), weights 72.66e9 + head 2.81e9 leave 0.49e9 B:
        # not one sequence of 4096 x 331,776 B = 1.36e9 B, let alone 256.
        self.assertEqual(data["deployment"]["max_concurrency"], 0)
        for cell in data["cells"]:
            self.assertFalse(cell["feasible"])
            self.assertIsNone(cell["speedup_exact"])

    def test_70b_fp8_on_four_h100_at_256_by_2k_fits(self):
        # 288 GB - 73.4 GB of weights leaves room for 256 x 2048 x 331,776 B = 174 GB of KV.
        data = run_json(["--concurrency", "256", "--alphas", "0.7", "--ks", "3"])
        self.assertTrue(all(c["feasible"] for c in data["cells"]))

    def test_infeasible_cells_are_marked_in_tables(self):
        _, out, _ = run(["--tp", "2", "--context", "8192", "--concurrency", "1,256", "--alphas", "0.7", "--ks", "3",
                         "--no-write"])
        self.assertIn("infeasible", out)


class CostShape(unittest.TestCase):
    def test_long_context_keeps_verify_close_to_plain(self):
        # MagicDec: at 32k tokens the KV read dominates plain and verify alike; the verify pass's extra queries share
        # one read of each sequence's history.
        long = build_deployment("llama-3.1-8b", "h200", 1, weights_dtype="bf16", kv_dtype="bf16", context=32768, draft="eagle3")
        short = build_deployment("llama-3.1-8b", "h200", 1, weights_dtype="bf16", kv_dtype="bf16", context=512, draft="eagle3")
        verify_extra = lambda dep, b: (costmodel.target_pass_ms(dep, b, 4)
                                       / costmodel.decode_step_ms(dep, b) - 1)
        for batch in (8, 16, 24):   # 27 sequences of 32k fit
            self.assertLess(verify_extra(long, batch), 0.02)
            # At 512 tokens the extra query tokens weigh against a short KV read: a larger share.
            self.assertGreater(verify_extra(short, batch), 2 * verify_extra(long, batch))
        # MagicDec's speedup that grows with the batch needs a draft whose own KV read stays small (its drafts attend
        # to a window); an EAGLE head attends over the whole context, so its K steps read K / 32 of the target's KV:
        # a round's cost over a plain step stays at that share from 8 to 24 sequences instead of falling.
        head_kv = 3 * 1 / 32                  # three steps, one layer of 32, the same KV heads
        for batch in (8, 16, 24):
            self.assertAlmostEqual(costmodel.eps_decode(long, batch, 3), head_kv, delta=0.03)

    def test_best_k_falls_as_concurrency_rises(self):
        dep = build_deployment()
        ks = [bestk.best_k(dep, 0.7, b)[0] for b in range(1, deployment.max_concurrency(dep) + 1)]
        self.assertEqual(ks, sorted(ks, reverse=True))
        self.assertGreater(ks[0], ks[-1])

    def test_schedule_matches_a_batch_by_batch_scan(self):
        for alpha in (0.45, 0.7):
            dep = build_deployment()
            expected, start = [], 1
            ks = [bestk.best_k(dep, alpha, b)[0] for b in range(1, deployment.max_concurrency(dep) + 1)]
            for b in range(1, len(ks) + 1):
                if b == len(ks) or ks[b] != ks[b - 1]:
                    expected.append([start, b, ks[b - 1]])
                    start = b + 1
            self.assertEqual(bestk.k_schedule(dep, alpha), expected)

    def test_ngram_draft_is_nearly_free(self):
        # No draft steps: below an EAGLE-3 head's round by its three draft steps where both run rounds alike (the
        # synchronous era; on 0.14 and later only EAGLE's rounds are async), and under half a 1B draft model's.
        era = catalog.era_of("vllm", "0.13")
        dep = build_deployment(draft="ngram", era=era)
        eagle = build_deployment(era=era)
        self.assertAlmostEqual(costmodel.round_ms(eagle, 1, 3) - costmodel.round_ms(dep, 1, 3),
                               costmodel.draft_ms(eagle, 1, 3), places=12)
        dep = build_deployment(draft="ngram")
        model = build_deployment(draft="llama-3.2-1b")
        self.assertLess(costmodel.eps_decode(dep, 1, 3), costmodel.eps_decode(model, 1, 3) / 2)

    def test_ngram_round_is_the_verify_pass_and_bookkeeping(self):
        # n-gram lookup runs no model: a round is the target's pass over K+1 tokens plus the
        # round's fixed bookkeeping, whatever K costs in draft steps elsewhere; it holds no bytes.
        dep = build_deployment(draft="ngram")
        for batch, k in ((1, 3), (64, 5)):
            verify = costmodel.pass_ms(dep.target, dep, batch, k + 1, costmodel.FIT.pass_fixed_ms_vllm)
            # async rounds (the default release) are EAGLE's and MTP's: an n-gram round keeps V1's bookkeeping
            self.assertAlmostEqual(costmodel.round_ms(dep, batch, k), verify + costmodel.FIT.round_fixed_ms_vllm,
                                   places=12)
        self.assertEqual(deployment.static_bytes(dep), dep.target.held_bytes)
        self.assertEqual(deployment.kv_bytes_per_sequence(dep), dep.context * dep.target.kv_bytes_per_token)
        eagle = build_deployment(draft="eagle3", era=catalog.fitted_era("vllm"))   # no host time hidden: all K steps paid
        self.assertGreater(costmodel.round_ms(eagle, 1, 3) - costmodel.round_ms(dep, 1, 3), 3 * costmodel.FIT.draft_fixed_ms_vllm)


class AcceptanceFlags(unittest.TestCase):
    def test_rates_are_converted_at_each_k(self):
        cells = run_json(["--acceptance-rates", "0.55", "--ks", "3,5", "--concurrency", "1"])["cells"]
        by_k = {c["k"]: c for c in cells if c["verify_overhead"] == "auto"}
        self.assertAlmostEqual(by_k[3]["alpha"], 0.730, delta=0.001)
        self.assertAlmostEqual(by_k[5]["alpha"], 0.807, delta=0.001)
        for c in cells:
            self.assertAlmostEqual(c["acceptance_rate"], 0.55, places=6)

    def test_length_at_one_k(self):
        cell = run_json(["--acceptance-length", "2.811", "--ks", "3", "--concurrency", "1"])["cells"][0]
        self.assertAlmostEqual(cell["acceptance_length"], 2.811, places=6)
        self.assertAlmostEqual(cell["alpha"], 0.768, delta=0.001)

    def test_best_k_in_json(self):
        rows = run_json(["--alphas", "0.3,0.8", "--ks", "3", "--concurrency", "1,256"])["best_k"]
        best = [row for row in rows if not row.pop("plan")]   # the plan's own column, its schedule's, apart
        self.assertEqual((len(best), len(rows)), (4, 6))
        z = statistics.NormalDist().inv_cdf(0.9)                           # an 80% interval, by hand
        for row in best:
            self.assertEqual(set(row), {"concurrency", "alpha", "k", "speedup", "speedup_interval", "too_close"})
            self.assertTrue(0 <= row["k"] <= 8)
            if row["k"]:
                low, high = row["speedup_interval"]
                self.assertAlmostEqual(math.log(high / row["speedup"]) / z, trust.trust_in(build_deployment()).speedup_sd,
                                       places=4)
                self.assertAlmostEqual(low * high, row["speedup"] ** 2, delta=1e-5)
            else:
                self.assertIsNone(row["speedup_interval"])

    def test_custom_gpu_equals_the_catalog_entry_it_copies(self):
        base = ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,64", "--weights-dtype", "bf16"]
        catalog = run_json(base + ["--gpu", "h100-sxm"])["cells"]
        custom = run_json(base + ["--gpu", "custom", "--gpu-bandwidth", "3.35", "--gpu-tflops", "989",
                                  "--gpu-memory", "80"])["cells"]
        for a, b in zip(catalog, custom):
            self.assertAlmostEqual(a["speedup_exact"], b["speedup_exact"], places=9)


class DeploymentBadInput(unittest.TestCase):
    CASES = [
        (["--model", "llama-9"], ["--model", "llama-3.3-70b", "qwen3-32b"]),
        (["--gpu", "tpu"], ["--gpu", "h100-sxm", "mi300x", "custom"]),
        (["--draft", "medusa"], ["--draft", "eagle3", "ngram"]),
        (["--gpu", "custom", "--gpu-bandwidth", "3"], ["--gpu-tflops", "--gpu-memory"]),
        (["--gpu-bandwidth", "0"], ["--gpu-bandwidth", "from 0.01 to 1000"]),
        (["--gpu-tflops", "-5"], ["--gpu-tflops"]),
        (["--gpu-memory", "lots"], ["--gpu-memory"]),
        (["--model", "llama-3.2-1b", "--draft", "llama-3.1-8b"], ["--draft", "not smaller"]),
        (["--tp", "3"], ["--tp", "64 attention heads"]),
        (["--tp", "0"], ["--tp"]),
        (["--context", "0"], ["--context"]),
        (["--weights-dtype", "int4"], ["--weights-dtype", "bf16", "fp8"]),
        (["--kv-dtype", "fp16"], ["--kv-dtype"]),
        (["--acceptance-length", "2.5", "--ks", "3,5"], ["--acceptance-length", "exactly one"]),
        (["--acceptance-length", "1.9,2.5", "--ks", "3,5"], ["--acceptance-length", "--ks must be 1,...,n"]),
        (["--acceptance-length", "1.9,2.5", "--ks", "1,2,3"], ["--acceptance-length", "one length for each of the 3"]),
        (["--acceptance-length", "1.5,2.3", "--ks", "1,2"], ["--acceptance-length", "at most its rise"]),
        (["--model", "llama-3.1-8b", "--tp", "2", "--dp-attention"], ["--dp-attention", "dense"]),
        (["--model", "llama-4-scout", "--tp", "5"], ["--tp", "KV heads"]),
        (["--acceptance-length", "2.1", "--ks", "1,2"], ["--acceptance-length", "exactly one"]),
        (["--acceptance-length", "1.5,2.3,2.4", "--ks", "1,2,3"], ["--acceptance-length", "give or take"]),
        (["--acceptance-length", "4.5", "--ks", "3"], ["--acceptance-length", "[1, 4]"]),
        (["--acceptance-rates", "1.2"], ["--acceptance-rates"]),
        (["--alphas", "0.5", "--acceptance-rates", "0.5"], ["--alphas", "--acceptance-rates"]),
    ]

    def test_each_exits_2_with_one_line_naming_the_problem(self):
        for argv, needles in self.CASES:
            with self.subTest(argv=argv):
                status, err = run_status(argv)
                self.assertEqual(status, 2)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                for needle in needles:
                    self.assertIn(needle, err)


if __name__ == "__main__":
    unittest.main()
