"""Mixture of experts at load (issue 36): a sequence's consecutive tokens reusing experts in a verify pass, a MoE
layer's fixed cost, and the published small-batch loss they are checked against."""
import json
import unittest

from support import build_deployment, run
from rollout import catalog, costmodel, experts


class ExpertAffinity(unittest.TestCase):
    def test_independent_tokens_by_hand(self):
        # Two sequences of 4 verify tokens at affinity 0.4: each counts 1 + 3 x 0.6 = 2.8, together 5.6; without
        # affinity all 8; one token a sequence is never discounted.
        self.assertAlmostEqual(experts.independent_tokens(2, 4, 0.4), 5.6, places=12)
        self.assertEqual(experts.independent_tokens(2, 4, 0.0), 8)
        self.assertEqual(experts.independent_tokens(7, 1, 0.4), 7)
        self.assertAlmostEqual(experts.independent_tokens(3, 11, 1.0), 3.0, places=12)   # every token keeps them all

    def test_a_verify_pass_reads_the_experts_of_its_independent_tokens(self):
        # DeepSeek-V3 fp8 at TP 8 on H200, uniform routing (exponent 0 to count by hand), B = 4, K = 3: the verify
        # pass's 16 tokens count as 4 x (1 + 3 x 0.6) = 11.2, touching 256 (1 - (248/256)^11.2) experts a MoE layer,
        # each 3 x 7168 x 2048 fp8 bytes, 58 MoE layers, beside the weights every pass reads, at the fp8 read rate.
        fit = costmodel.FIT._replace(expert_affinity=0.4)
        dep = build_deployment("deepseek-v3", "h200", 8, weights_dtype="fp8", kv_dtype="bf16", context=2048, draft="mtp", engine="sglang")
        dep = costmodel.replace(dep, target=costmodel.replace(dep.target, routing_exponent=0.0))
        parts = costmodel.pass_parts(dep.target, dep, 4, 4, 0.0, fit)
        touched = 256 * (1 - (248 / 256) ** 11.2)
        self.assertAlmostEqual(touched, 76.6047, places=3)
        # bytes a ms over the replica: the datasheet's 4.8 TB/s, Hopper's fitted share and the H200's own bw_rel
        rate = 8 * 4.8e9 * fit.bw_hopper * catalog.GPUS["h200"]["bw_rel"] * fit.fp8_eff
        by_hand = (dep.target.weight_bytes + 58 * touched * 3 * 7168 * 2048) / rate
        self.assertAlmostEqual(parts["weights"], by_hand, delta=1e-9 * by_hand)
        independent = costmodel.pass_parts(dep.target, dep, 4, 4, 0.0, fit._replace(expert_affinity=0.0))
        self.assertLess(parts["weights"], 0.9 * independent["weights"])   # 76.6 experts a layer, not 100.0
        self.assertEqual(costmodel.pass_parts(dep.target, dep, 4, 1, 0.0, fit)["weights"],
                         costmodel.pass_parts(dep.target, dep, 4, 1, 0.0, fit._replace(expert_affinity=0.0))["weights"])

    def test_moe_verify_reports_the_same_count(self):
        dep = build_deployment("qwen3-30b-a3b", "h100-sxm", 1, weights_dtype="fp8", kv_dtype="bf16", context=1024, draft="eagle3", engine="sglang")
        mv = costmodel.moe_verify(dep, 3, 1, costmodel.FIT._replace(expert_affinity=0.4))
        self.assertAlmostEqual(mv.verify_experts, 128 * (1 - (120 / 128) ** 2.8), places=9)
        self.assertAlmostEqual(mv.plain_experts, 8.0, places=9)


class PublishedSmallBatchLoss(unittest.TestCase):
    def test_qwen3_30b_a3b_at_batch_1_is_a_loss(self):
        # sgl-project/SpecForge#339: Qwen3-30B-A3B bf16 on 2 x H100 (TP 2), SGLang of 2025-12 (0.5.6), an EAGLE-3
        # head, 3 steps / topk 1 / 4 draft tokens, MT-Bench prompts, batch 1: 222.47 tokens/s plain, 159.78 with
        # speculation at acceptance length 1.86, a 0.72x loss. The tool must call it a loss too, and its plain step
        # must be within 10% of the measured 1 / 222.47 s = 4.49 ms.
        status, out, err = run(["--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--tp", "2", "--weights-dtype", "bf16",
                                "--kv-dtype", "bf16", "--engine", "sglang", "--engine-version", "0.5.6", "--draft",
                                "eagle3", "--ks", "3", "--acceptance-length", "1.86", "--concurrency", "1",
                                "--verify-overheads", "auto", "--input-tokens", "128", "--output-tokens", "256",
                                "--json", "--no-write"])
        self.assertEqual(status, 0, err)
        cell = json.loads(out)["cells"][0]
        self.assertLess(cell["speedup_exact"], 1.0)
        self.assertLess(abs(cell["plain_step_ms"] / (1000 / 222.47) - 1), 0.10)

    def test_a_moe_layers_fixed_cost_is_its_kernels_in_place_of_the_mlps_share(self):
        # By hand for that deployment: 48 layers, every one MoE, each layer_us x (1 - 0.75) + SGLang's 37.4 us kernel,
        # plus SGLang's fixed cost of a pass; DeepSeek-V3's 3 dense layers of 61 pay their layer_us whole.
        fit = costmodel.FIT
        self.assertEqual((fit.mlp_fixed_share, catalog.MOE_KERNEL_US["sglang"]), (0.75, 37.4))
        dep = build_deployment("qwen3-30b-a3b", "h100-sxm", 2, weights_dtype="bf16", kv_dtype="bf16", context=384, draft="eagle3", engine="sglang",
                                        era=catalog.era_of("sglang", "0.5.6"))
        fixed = costmodel.target_parts(dep, 1, 1)["fixed"]
        self.assertAlmostEqual(fixed, 48 * (fit.layer_us * 0.25 + 37.4) / 1e3 + fit.pass_fixed_ms_sglang, places=9)
        deepseek = build_deployment("deepseek-v3", "h200", 8, weights_dtype="fp8", kv_dtype="bf16", context=2048, draft="mtp", engine="sglang")
        self.assertAlmostEqual(costmodel.pass_parts(deepseek.target, deepseek, 1, 1, 0.0)["fixed"],
                               (3 * fit.layer_us + 58 * (fit.layer_us * 0.25 + 37.4)) / 1e3, places=9)

    def test_an_amd_gpu_takes_its_own_share(self):
        # On AMD's GPUs SGLang runs aiter's fused-MoE kernels: a MoE layer keeps AMD's share (fitted on the AMD runs
        # apart, bench/moe_load.py), NVIDIA's GPUs theirs. At shares of 0.5 (AMD) and 0.75 (NVIDIA) each of
        # DeepSeek-V3's 58 MoE layers pays 28.0859 x 0.5 (or 0.25) us of its layer's fixed cost and the kernel's 37.4;
        # its 3 dense layers their whole 28.0859 us.
        self.assertEqual(costmodel.FIT.mlp_fixed_share_cdna, 0.0)
        fit = costmodel.FIT._replace(mlp_fixed_share_cdna=0.5)
        for gpu, kept in (("mi300x", 0.5), ("mi355x", 0.5), ("h200", 0.25)):
            with self.subTest(gpu=gpu):
                dep = build_deployment("deepseek-v3", gpu, 8, weights_dtype="fp8", kv_dtype="fp8", context=2048,
                                       draft="mtp", engine="sglang")
                self.assertAlmostEqual(costmodel.pass_parts(dep.target, dep, 1, 1, 0.0, fit)["fixed"],
                                       (3 * 28.0859 + 58 * (28.0859 * kept + 37.4)) / 1e3, places=9)


if __name__ == "__main__":
    unittest.main()
