"""The plain step's terms (issue 10), each against a number worked by hand, and the prefill share
against a brute-force closed loop."""
import dataclasses
import json
import unittest
from pathlib import Path

from support import build_deployment, run

from rollout.mix import traffic_blend
from rollout import acceptance, bestk, catalog, costmodel, deployment, schedule


F = costmodel.FIT


class Terms(unittest.TestCase):
    def parts(self, dep, batch=1, tokens=1, prefill=0.0):
        return costmodel.target_parts(dep, batch, tokens, F, prefill)

    def test_weights_stream_at_the_family_share_and_fp8_keeps_its_own(self):
        bf16 = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="ngram")
        fp8 = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="fp8", kv_dtype="bf16", context=1000, draft="ngram")
        a100 = build_deployment("llama-3.1-8b", "a100-sxm-80gb", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="ngram")
        # 8,030,261,248 x 2 B; fp8: 6,979,588,096 linear weights x 1 B + 1,050,673,152 embedding weights x 2 B.
        self.assertAlmostEqual(self.parts(bf16)["weights"], 16_060_522_496 / (3.35e9 * F.bw_hopper), places=9)
        self.assertAlmostEqual(self.parts(fp8)["weights"],
                               (6_979_588_096 + 2 * 1_050_673_152) / (3.35e9 * F.bw_hopper * F.fp8_eff), places=9)
        self.assertAlmostEqual(self.parts(a100)["weights"], 16_060_522_496 / (2.039e9 * F.bw_ampere), places=9)

    def test_attention_has_a_one_sequence_floor_and_fp8_kv_its_own_share(self):
        dep = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=4000, draft="ngram")
        # Batch 1: 32 layers x 4000 tokens x attn_ns beats the 524 MB read; one token of KV written.
        self.assertAlmostEqual(self.parts(dep)["attention"],
                               32 * 4000 * F.attn_ns / 1e6 + 131_072 / (3.35e9 * F.bw_hopper), places=9)
        # Batch 64: the read of 64 histories is the larger.
        self.assertAlmostEqual(self.parts(dep, 64)["attention"],
                               (64 * 4000 + 64) * 131_072 / (3.35e9 * F.bw_hopper), places=9)
        fp8 = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="fp8", context=4000, draft="ngram")
        self.assertAlmostEqual(self.parts(fp8, 64)["attention"],
                               64 * 4001 * 65_536 / (3.35e9 * F.bw_hopper * F.fp8_kv_eff), places=9)
        # The measured slope at batch 1 on 8B/H100 is about 0.24 ms per 1k tokens (bench/plain_step.json's 8B/H100 points).
        self.assertAlmostEqual(32 * 1000 * F.attn_ns / 1e6, 0.24, delta=0.03)

    def test_a_verify_pass_on_vllms_flashattention_2_reads_the_kv_once_per_query_head(self):
        # Llama 3.1 8B: 32 query heads on 8 KV heads. On an A100 vLLM runs FlashAttention 2, which shares a KV head's read
        # among its 4 query heads only at one query token a sequence: a verify pass of 4 reads the 64 histories 4 times.
        kv = 131_072   # bytes a token of context, 32 layers x 8 heads x 128 x 2 (K, V) x 2 B
        # n reads of 64 histories of 4000 tokens, and the 4 new tokens a sequence written
        read = lambda dep, n: (64 * n * 4000 + 64 * 4) * kv / (dep.bandwidth_tbs * 1e9 * costmodel.bandwidth_share(dep))
        a100 = build_deployment("llama-3.1-8b", "a100-sxm-80gb", 1, weights_dtype="bf16", kv_dtype="bf16", context=4000, draft="eagle3")
        self.assertAlmostEqual(self.parts(a100, 64, 4)["attention"], read(a100, 4), places=9)
        self.assertAlmostEqual(self.parts(a100, 64, 1)["attention"], read(a100, 1) - 3 * 64 * kv / (
            a100.bandwidth_tbs * 1e9 * costmodel.bandwidth_share(a100)), places=9)   # a plain step: once
        # FlashAttention 3 on Hopper packs the group at any query length; SGLang's kernels are not FA2: once.
        h100 = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=4000, draft="eagle3")
        self.assertAlmostEqual(self.parts(h100, 64, 4)["attention"], read(h100, 1), places=9)
        sglang = build_deployment("llama-3.1-8b", "a100-sxm-80gb", 1, weights_dtype="bf16", kv_dtype="bf16", context=4000, draft="eagle3",
                                           engine="sglang")
        self.assertEqual(costmodel.kv_reads(sglang.target, sglang, 4), 1.0)
        # Past TP = KV heads each GPU holds one KV head and heads / tp query heads: 70B (64 on 8) at TP 8, 8 a GPU.
        tp8 = build_deployment("llama-3.3-70b", "a100-sxm-80gb", 8, weights_dtype="bf16", kv_dtype="bf16", context=4000, draft="eagle3")
        self.assertEqual(costmodel.kv_reads(tp8.target, tp8, 4), 8.0)
        # Qwen3-235B (64 on 4) at TP 8: a GPU holds 8 query heads and a copy of one KV head, so 8; under attention
        # data parallelism every GPU holds all 64 on 4: 16.
        moe = build_deployment("qwen3-235b-a22b", "a100-sxm-80gb", 8, weights_dtype="bf16", kv_dtype="bf16", context=4000, draft="eagle3")
        self.assertEqual(costmodel.kv_reads(moe.target, moe, 4), 8.0)
        self.assertEqual(costmodel.kv_reads(moe.target, dataclasses.replace(moe, dp_attention=True), 4), 16.0)
        # vLLM runs FlashAttention on an fp8 cache or with attention sinks only at version 3: another kernel, once.
        fp8 = build_deployment("llama-3.1-8b", "a100-sxm-80gb", 1, weights_dtype="bf16", kv_dtype="fp8", context=4000, draft="eagle3")
        self.assertEqual(costmodel.kv_reads(fp8.target, fp8, 4), 1.0)
        sinks = build_deployment("gpt-oss-120b", "a100-sxm-80gb", 2, weights_dtype="bf16", kv_dtype="bf16", context=4000, draft="eagle3")
        self.assertEqual(costmodel.kv_reads(sinks.target, sinks, 4), 1.0)
        self.assertEqual(costmodel.kv_reads(sinks.target, dataclasses.replace(sinks, shape={}), 4), 8.0)   # 64 on 8

    def test_a_tokens_host_cost_is_paid_where_the_scheduler_waits_for_it(self):
        # vLLM 0.10 steps synchronously: a plain step pays token_us a sequence, a verify pass of 4 tokens 4 times that.
        # vLLM 0.14 overlaps plain steps and EAGLE/MTP rounds (PRs #27614, #31998), not a draft model's server;
        # 0.28 overlaps a draft model's rounds too (PR #48341).
        sync = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="eagle3",
                                         era=catalog.era_of("vllm", "0.10"))
        asynchronous = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="eagle3")
        model = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="llama-3.2-1b",
                                          era=catalog.era_of("vllm", "0.27"))
        model_async = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="llama-3.2-1b",
                                                era=catalog.era_of("vllm", "0.28"))
        per_token = F.token_us_vllm / 1e3
        for dep, plain, verify in ((sync, 16 * per_token, 64 * per_token), (asynchronous, 0.0, 0.0),
                                   (model, 0.0, 64 * per_token), (model_async, 0.0, 0.0)):
            self.assertAlmostEqual(self.parts(dep, 16, 1)["engine"], plain, places=12)
            self.assertAlmostEqual(self.parts(dep, 16, 4)["engine"], verify, places=12)
        # SGLang 0.4.4's overlap scheduler hides a plain step's; its EAGLE worker ran without it: a verify pass pays.
        sglang = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="eagle3",
                                           engine="sglang", era=catalog.era_of("sglang", "0.4.4"))
        self.assertEqual(self.parts(sglang, 16, 1)["engine"], 0.0)
        self.assertAlmostEqual(self.parts(sglang, 16, 4)["engine"], 64 * F.token_us_sglang / 1e3, places=12)

    def test_two_all_reduces_per_layer_grow_with_tp_and_the_message(self):
        tp8 = build_deployment("llama-3.3-70b", "h100-sxm", 8, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="ngram")
        latency = (F.ar_us + 6 * F.ar_tp_us) / 1e3                      # TP 8: six GPUs past two
        one = costmodel.allreduce_ms(tp8, 64 * 8192 * 2)                        # 64 tokens x 8,192 x 2 B
        self.assertAlmostEqual(one, latency + 2 * 7 / 8 * 1_048_576 / (450e6 * F.link_eff), places=12)
        self.assertAlmostEqual(self.parts(tp8, 64)["communication"], 2 * 80 * one, places=9)
        tp1 = build_deployment("llama-3.3-70b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="ngram")
        self.assertEqual(self.parts(tp1, 64)["communication"], 0.0)
        # bench/plain_step.json: published steps imply 18-29 us per all-reduce, rising with TP.
        self.assertTrue(15 <= F.ar_us + 2 * F.ar_tp_us <= 29 < F.ar_us + 6 * F.ar_tp_us + 10)

    def test_fixed_costs_are_the_engines_plus_each_layers(self):
        for engine in ("vllm", "sglang", "trtllm"):
            dep = build_deployment("llama-3.3-70b", "h100-sxm", 4, weights_dtype="fp8", kv_dtype="bf16", context=1000, draft="ngram", engine=engine)
            fixed = getattr(F, "pass_fixed_ms_" + engine)
            self.assertAlmostEqual(self.parts(dep)["fixed"], fixed + 80 * F.layer_us / 1e3, places=12)

    def test_compute_counts_two_flops_a_parameter_and_attention(self):
        dep = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="ngram")
        gemm = 256 * 2 * 8_030_261_248 / (989e9 * F.flop_eff)              # 2 FLOPs a parameter a token
        attending = 256 * 4 * 32 * 4096 * 1000 / (989e9 * F.flop_eff)      # QK and PV over 1000 tokens, 32 layers
        read_ms = 16_060_522_496 / (3.35e9 * F.bw_hopper)
        parts = self.parts(dep, 256)
        self.assertAlmostEqual(parts["weights"], read_ms, places=9)
        # The GEMMs' math overlaps the weight read, attention's the KV read: each pair costs (read^p + math^p)^(1/p),
        # and the compute term is what the two maths add.
        def pair(read, math_ms):
            return (read ** F.overlap + math_ms ** F.overlap) ** (1 / F.overlap)
        kv = parts["attention"]
        self.assertAlmostEqual(parts["compute"], pair(read_ms, gemm) - read_ms + pair(kv, attending) - kv, places=9)
        self.assertLess(pair(read_ms, gemm), read_ms + gemm)
        self.assertGreater(pair(read_ms, gemm), max(read_ms, gemm))

    def test_activations_are_the_elementwise_kernels_traffic(self):
        # Each token of each layer: two fused add-RMSNorms (read hidden state and residual, write both: 8 x 4096) and
        # SiLU-and-mul (read gate and up, write one: 3 x 14336), bf16, at the pass's bandwidth; at TP 2 every GPU
        # normalises every token and holds half of the MLP.
        for tp in (1, 2):
            dep = build_deployment("llama-3.1-8b", "h100-sxm", tp, weights_dtype="bf16", kv_dtype="bf16", context=1000, draft="ngram")
            per_gpu = 32 * 2 * (8 * 4096 + 3 * 14336 / tp)
            self.assertAlmostEqual(self.parts(dep, 64)["activations"], 64 * per_gpu / (3.35e9 * F.bw_hopper), places=9)
            self.assertAlmostEqual(costmodel.target_parts(dep, 16, 4)["activations"], self.parts(dep, 64)["activations"],
                                   places=12)   # 16 sequences verifying 4 tokens stream what 64 decoding 1 do

    def test_the_breakdown_sums_to_the_step_and_reaches_the_json(self):
        dep = build_deployment()
        parts = costmodel.plain_step_parts(dep, 1)
        self.assertAlmostEqual(sum(parts.values()), costmodel.plain_step_ms(dep, 1), places=12)
        status, out, _ = run(["--alphas", "0.7", "--ks", "3", "--concurrency", "1,64", "--json", "--no-write"])
        data = json.loads(out)
        self.assertEqual(set(data["deployment"]["plain_step_b1"]),
                         {"weights", "attention", "compute", "activations", "communication", "fixed", "engine",
                          "prefill share"})
        for cell in data["cells"]:
            plain = costmodel.plain_step_ms(dep, cell["concurrency"])
            self.assertAlmostEqual(cell["plain_step_ms"], plain, places=5)
            # Simulated requests: mean TPOT is the step over tau, within their sampling error.
            self.assertAlmostEqual(cell["tpot_plain_mean_ms"] / plain, 1, delta=0.001)
            self.assertAlmostEqual(cell["tpot_spec_mean_ms"] / (cell["round_ms"] / cell["acceptance_length_requests"]),
                                   1, delta=0.01)


class MlaSplitsASequence(unittest.TestCase):
    def test_an_mla_sequence_pays_its_bytes_and_a_gqa_one_its_floor(self):
        """At batch 1 an MLA model's attention is its latent cache's bytes at the KV bandwidth, no floor: DeepSeek-V3
        on 8 H200s, bf16 cache, holds 61 layers x 576 x 2 B = 70,272 B a token on each of its 8 GPUs, so 7,168 more
        tokens of context cost 8 x 7,168 x 70,272 B over 8 x 4.8 TB/s x (0.9049 x 0.916). Llama 3.1 8B on one H100
        pays the floor instead: 32 layers x 8.1758 ns a token of context (at an H100's 3.35 TB/s)."""
        fit = costmodel.FIT
        dsv3 = build_deployment("deepseek-v3", "h200", 8, weights_dtype="fp8", kv_dtype="bf16", draft="mtp")
        self.assertTrue(costmodel.splits_a_sequence(dsv3.target, dsv3))
        short, long = (dataclasses.replace(dsv3, context=c) for c in (1024, 8192))
        grown = (costmodel.pass_parts(long.target, long, 1, 1, 0.0)["attention"]
                 - costmodel.pass_parts(short.target, short, 1, 1, 0.0)["attention"])
        by_hand = 8 * 7168 * 61 * 576 * 2 / (8 * 4.8e9 * 0.9049 * 0.916)   # ms
        self.assertAlmostEqual(grown, by_hand, delta=by_hand * 1e-6)
        llama = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16")
        self.assertFalse(costmodel.splits_a_sequence(llama.target, llama))
        short, long = (dataclasses.replace(llama, context=c) for c in (1024, 8192))
        grown = (costmodel.pass_parts(long.target, long, 1, 1, 0.0)["attention"]
                 - costmodel.pass_parts(short.target, short, 1, 1, 0.0)["attention"])
        self.assertAlmostEqual(grown, 7168 * 32 * fit.attn_ns / 1e6, delta=1e-9)

    def test_mla_on_the_mi300x_pays_the_floor(self):
        """aiter cuts an MLA sequence into 16 parts on gfx942 whatever its length: DeepSeek-V3 on 8 MI300Xs with an fp8
        cache pays the floor, 61 layers x 8.1758 ns a token of context at an H100's 3.35 TB/s, scaled to the MI300X's
        5.3 and the fp8 cache's dequantising 0.7911; its 576 B a token and layer, read at the MI300X's
        share of 5.3 TB/s, would cost a thirtieth of that."""
        dep = build_deployment("deepseek-v3", "mi300x", 8, weights_dtype="fp8", kv_dtype="fp8", draft="mtp")
        self.assertFalse(costmodel.splits_a_sequence(dep.target, dep))
        short, long = (dataclasses.replace(dep, context=c) for c in (1024, 8192))
        grown = (costmodel.pass_parts(long.target, long, 1, 1, 0.0)["attention"]
                 - costmodel.pass_parts(short.target, short, 1, 1, 0.0)["attention"])
        by_hand = 7168 * 61 * 8.1758e-6 * 3.35 / 5.3 / 0.7911   # ms
        self.assertAlmostEqual(grown, by_hand, delta=by_hand * 1e-4)
        mi355x = build_deployment("deepseek-v3", "mi355x", 8, weights_dtype="fp8", kv_dtype="fp8", draft="mtp")
        self.assertTrue(costmodel.splits_a_sequence(mi355x.target, mi355x))


class PrefillShare(unittest.TestCase):
    def test_a_dense_models_chunks_cost_what_a_flat_charge_per_prompt_token_does(self):
        # With read and math added (overlap 1) every term of a dense pass is linear in its prompt tokens, so P / C
        # chunk steps of C tokens cost P tokens: the chunking spreads the prompts, it adds nothing of its own.
        dep = build_deployment("llama-3.3-70b", "h100-sxm", 4, weights_dtype="fp8", kv_dtype="bf16", context=None, draft="eagle3", input_tokens=5000,
                                output_tokens=500)
        fit = F._replace(overlap=1.0)
        for batch in (2, 25, 64):
            prompts = costmodel.prefill_tokens(dep, batch)
            flat = (costmodel.target_pass_ms(dep, batch, 1, fit, prefill=prompts)
                    - costmodel.decode_step_ms(dep, batch, fit))
            self.assertAlmostEqual(costmodel.prefill_share_ms(dep, batch, fit) / flat, 1.0, places=9)

    def test_the_engines_default_chunk_by_gpu_memory(self):
        # vLLM: 2048 below 70 GiB and on A100, 8192 from 70, 16384 from 160; SGLang: 2048/4096/8192/16384 at
        # 35/60/160 GiB; TensorRT-LLM: 8192 everywhere.
        expected = {("vllm", "l40s"): 2048, ("vllm", "a100-sxm-80gb"): 2048, ("vllm", "h100-sxm"): 8192,
                    ("vllm", "h200"): 8192, ("vllm", "b200"): 16384, ("vllm", "mi300x"): 16384,
                    ("sglang", "l40s"): 4096, ("sglang", "rtx-4090"): 2048, ("sglang", "a100-sxm-80gb"): 8192,
                    ("sglang", "b200"): 16384, ("trtllm", "b200"): 8192, ("trtllm", "l40s"): 8192}
        for (engine, gpu), tokens in expected.items():
            dep = build_deployment("llama-3.1-8b", gpu, 1, weights_dtype="bf16", kv_dtype="bf16", context=None, draft="ngram", engine=engine,
                                    input_tokens=30000, output_tokens=1000)
            self.assertEqual(deployment.prefill_chunk(dep), tokens, (engine, gpu))

    def test_a_moe_chunk_reads_each_expert_once(self):
        # Kimi-K2 on 4 x MI355X, 10,240 prompt tokens, 512 out, concurrency 40: the chunk is the engine's budget, and
        # the share is P / C chunk steps, each what C prompt tokens add to a pass of B decodes.
        dep = build_deployment("kimi-k2", "mi355x", 4, weights_dtype="fp4", kv_dtype="bf16", context=None, draft="eagle3", input_tokens=10240,
                                output_tokens=512)
        chunk = deployment.prefill_chunk(dep)
        self.assertEqual(chunk, 10240)   # vLLM's budget on a 288 GiB GPU is 16,384: the whole prompt in one step
        prompts = 39 * 10240 / 512
        step = costmodel.decode_step_ms(dep, 40)
        by_hand = prompts / chunk * (costmodel.target_pass_ms(dep, 40, 1, prefill=chunk) - step)
        self.assertAlmostEqual(costmodel.prefill_share_ms(dep, 40), by_hand, places=9)
        flat = costmodel.target_pass_ms(dep, 40, 1, prefill=prompts) - step   # the prompts spread over every step
        self.assertLess(costmodel.prefill_share_ms(dep, 40), 0.8 * flat)

    def test_prefill_dilutes_the_speedup_but_not_the_break_even(self):
        heavy = build_deployment(context=5250, input_tokens=5000, output_tokens=500)
        light = build_deployment(context=5250, input_tokens=5000, output_tokens=50_000)
        eps = costmodel.eps_decode(heavy, 32, 3)
        self.assertAlmostEqual(eps, costmodel.eps_decode(light, 32, 3), places=12)      # decode eps: no prefill
        for dep in (heavy, light):
            # At tau = 1 + eps the round's tau steps of prefill cost what tau plain steps' do: still break-even.
            self.assertAlmostEqual(costmodel.eps_seen(eps, 1 + eps, dep, 32), eps, places=12)
        tau = 2.5
        diluted = tau / (1 + costmodel.eps_seen(eps, tau, heavy, 32))
        clean = tau / (1 + costmodel.eps_seen(eps, tau, light, 32))
        self.assertLess(diluted, clean)
        # By hand: ((1 + eps) D + tau q) / (D + q) with D the decode step and q the prefill share.
        d, q = costmodel.decode_step_ms(heavy, 32), costmodel.prefill_share_ms(heavy, 32)
        self.assertAlmostEqual(diluted, tau * (d + q) / ((1 + eps) * d + tau * q), places=12)
        self.assertGreater(q, 0.3 * d)     # 32 x 5000 / 500 = 320 prompt tokens a step on 70B: not small

    def test_a_tokens_cost_is_its_rounds_plain_steps_and_prefill_share(self):
        dep = build_deployment(context=5250, input_tokens=5000, output_tokens=500)
        d, q = costmodel.decode_step_ms(dep, 32), costmodel.prefill_share_ms(dep, 32)
        self.assertAlmostEqual(costmodel.spec_tpot_ms(dep, 32, 0.25, 80.0, plain_tokens=0.5), 20.0 + 0.5 * d + q, places=12)
        # A one-domain mix is the one-alpha speedup tau / (1 + eps with prefill).
        blend = traffic_blend((("only", 1.0, 0.7),), dep, 3, 32)
        tau, eps = acceptance.acceptance_length(0.7, 3), costmodel.eps_decode(dep, 32, 3)
        self.assertAlmostEqual(blend.blended_speedup, tau * (d + q) / ((1 + eps) * d + tau * q), places=12)


class DraftsAndK(unittest.TestCase):
    def test_eagle1_reads_its_head_and_the_targets_bf16_lm_head_every_step(self):
        # Llama 3.3 70B, by hand: attention 8192*128*(64 + 2*8) + 64*128*8192 = 150,994,944; MLP
        # 3*8192*28672 = 704,643,072; fc 2*8192^2 = 134,217,728; norms 2*8192: a head of 989,872,128.
        # The lm_head it reads, 128,256*8192 = 1,050,673,152, stays bf16 under fp8 weights.
        for dtype in ("fp8", "bf16"):
            d = deployment.with_draft(build_deployment(weights_dtype=dtype), "eagle")
            self.assertEqual(d.drafter.weight_bytes, 2 * (989_872_128 + 1_050_673_152), dtype)
            self.assertEqual(d.drafter.held_params, 989_872_128)

    def test_best_k_is_the_brute_force_argmax_up_to_k_max(self):
        picked = set()
        for draft in ("eagle3", "ngram"):
            dep = deployment.with_draft(build_deployment(), draft)
            for alpha in (0.3, 0.7, 0.95, 0.999):
                for batch in (1, 64, 256):
                    speeds = {}
                    for k in range(1, schedule.K_MAX + 1):
                        tau = acceptance.acceptance_length(alpha, k)
                        speeds[k] = tau / (1 + costmodel.eps_seen(costmodel.eps_decode(dep, batch, k), tau, dep, batch))
                    speeds[0] = 1.0
                    # Within 1% of the best is a tie, won by the smallest K (K = 0 is plain decoding).
                    k_best = min(k for k in speeds if speeds[k] * 1.01 >= max(speeds.values()))
                    expected = (k_best, speeds[k_best])
                    got = bestk.best_k(dep, alpha, batch)
                    self.assertEqual(got[0], expected[0], (draft, alpha, batch))
                    self.assertAlmostEqual(got[1], expected[1], places=9)
                    picked.add(got[0])
        self.assertIn(schedule.K_MAX, picked)           # the largest K is tried, and wins where drafting is free

    def test_a_given_eps_grows_with_batch_as_the_model_does(self):
        # Multiplicatively: (1 + eps(B)) / (1 + eps(1)) is the model's round/step growth, whatever eps(1) is given.
        # A round never costs less than its verify pass over a plain step: that floor binds for a small given eps.
        dep = build_deployment()
        floors = 0
        for k in (3, 5):
            for batch in (32, 256):
                floor = costmodel.target_pass_ms(dep, batch, k + 1) / costmodel.decode_step_ms(dep, batch) - 1
                for given in (0.0, 0.1, 0.3):
                    scaled = (1 + given) * growth_at(dep, batch, k) - 1
                    floors += floor > scaled
                    self.assertAlmostEqual(costmodel.eps_grown(given, dep, batch, k), max(scaled, floor), places=9)
        self.assertTrue(0 < floors < 12)          # both branches are exercised
        # What the tables print for K = 3, eps 0.10 at B = 32: 1.1 x the model's growth - 1 (the floor is below).
        status, out, _ = run(["--alphas", "0.7", "--ks", "3", "--verify-overheads", "0.1", "--concurrency", "32",
                              "--json", "--no-write"])
        cell = json.loads(out)["cells"][0]
        self.assertAlmostEqual(cell["eps_decode"], 1.1 * growth_at(dep, 32, 3) - 1, places=5)


def growth_at(dep, batch, k):
    return (1 + costmodel.eps_decode(dep, batch, k)) / (1 + costmodel.eps_decode(dep, 1, k))


class GpuShares(unittest.TestCase):
    def test_a_gpus_own_share_holds_for_its_datasheet_bandwidth_only(self):
        h200 = build_deployment("llama-3.1-8b", "h200", 1, weights_dtype="bf16", kv_dtype="bf16", context=1024, draft="ngram")
        self.assertAlmostEqual(costmodel.bandwidth_share(h200), F.bw_hopper * 0.916, places=12)
        given = build_deployment("llama-3.1-8b", "h200", 1, weights_dtype="bf16", kv_dtype="bf16", context=1024, draft="ngram",
                                  spec=deployment.gpu_spec("h200", bandwidth_tbs=4.4, weights_dtype="bf16"))     # --gpu-bandwidth: the user's number
        self.assertAlmostEqual(costmodel.bandwidth_share(given), F.bw_hopper, places=12)
        custom = build_deployment("llama-3.1-8b", "custom", 1, weights_dtype="bf16", kv_dtype="bf16", context=1024, draft="ngram",
                                   spec=deployment.gpu_spec("custom", 141, 4.8, 989, weights_dtype="bf16"))
        self.assertAlmostEqual(costmodel.bandwidth_share(custom), F.bw_hopper, places=12)

    def test_the_attention_floor_scales_with_the_bandwidth_read(self):
        # batch 1: one sequence's floor is above its KV read; on an H200 the floor is the H100's x 3.35 / (4.8 x 0.916)
        h100, h200 = (build_deployment("llama-3.1-8b", gpu, 1, weights_dtype="bf16", kv_dtype="bf16", context=4000, draft="ngram") for gpu in ("h100-sxm", "h200"))
        floor = lambda dep: costmodel.target_parts(dep, 1, 1)["attention"] - 131_072 / (dep.bandwidth_tbs * 1e9 * costmodel.bandwidth_share(dep))
        self.assertAlmostEqual(floor(h200) / floor(h100), 3.35 / (4.8 * 0.916), places=9)


class FitComment(unittest.TestCase):
    def test_what_the_fit_says_is_what_fit_holds(self):
        # The comment under FIT is typed by hand; a refit that moves a constant must move it too.
        source = Path(costmodel.__file__).read_text()
        block = source[source.index("# What the fit says"):source.index("ATTN_FLOOR_TBS = ")]
        text = " ".join(line.lstrip("# ").strip() for line in block.splitlines())
        layers_8b = catalog.MODELS["llama-3.1-8b"]["layers"]
        for figure in (f"keeps {F.fp8_eff:.2f} of the bandwidth", f"an fp8 KV cache {F.fp8_kv_eff:.2f}",
                       f"costs {F.attn_ns:.1f} ns per layer per token",
                       f"({F.attn_ns * layers_8b * 1000 / 1e6:.2f} ms per 1k tokens on 8B)",
                       f"{F.ar_us:.0f} us at TP 2 and {F.ar_tp_us:.1f} us more",
                       f"costs {F.seq_us_trtllm:.0f} us more per running sequence",
                       f"a pass pays {F.layer_us:.0f} us a layer",
                       f"decoded or verified is {F.token_us_vllm:.0f} us where a synchronous scheduler pays it",
                       f"pass's token costs {F.token_us_sglang:.0f} us on SGLang 0.4.4",
                       f"reads at {F.bw_cdna:.2f} of its 5.3 TB/s and reaches {F.flop_cdna:.2f} of the NVIDIA",
                       f"a transition of sharpness {F.overlap:g}, {F.flop_eff:.2f} of peak on Hopper, "
                       f"{F.flop_ampere:.2f} of that on an A100"):
            self.assertIn(figure, text)


if __name__ == "__main__":
    unittest.main()

