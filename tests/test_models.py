"""Any target model (issue 11): catalog shapes against published totals, config.json reading,
mixture-of-experts verify reads against a brute-force count, MTP and tree drafts."""
import dataclasses
import json
import tempfile
import unittest
from pathlib import Path

from support import ROOT, build_deployment, run

from rollout import catalog, commands, costmodel, deployment, hfconfig, records
from rollout import experts as moe


CONFIGS = ROOT / "tests" / "fixtures" / "configs"
HEAD_KEYS = {"head_inter", "head_heads", "head_kv_heads", "head_head_dim", "hf"}


def billions(name, active=False):
    return deployment.model_params(catalog.MODELS[name], active) / 1e9


class PublishedTotals(unittest.TestCase):
    """Computed from each config.json (tests/fixtures/configs) and the publishers' own figures."""

    def assertNear(self, value, published, share=0.005):
        self.assertLessEqual(abs(value / published - 1), share, (value, published))

    def test_total_and_active_parameters(self):
        for name, total, active in (("qwen3-30b-a3b", 30.53, 3.35), ("qwen3-235b-a22b", 235.1, 22.2),
                                    ("qwen3-coder-480b", 480.2, 35.5), ("deepseek-v3", 671.0, 37.6),
                                    ("llama-4-maverick", 401.6, 17.2), ("kimi-k2", 1026.0, 32.9)):
            with self.subTest(model=name):
                self.assertNear(billions(name), total)
                self.assertNear(billions(name, True), active, 0.01)
        # OpenAI counts active parameters without the input embedding: 3.6 B and 5.1 B.
        for name, total, active in (("gpt-oss-20b", 20.9, 3.6), ("gpt-oss-120b", 116.8, 5.1)):
            s = catalog.MODELS[name]
            self.assertNear(billions(name), total)
            self.assertNear(billions(name, True) - s["vocab"] * s["hidden"] / 1e9, active, 0.01)
        # Llama 4 Scout: 108.6 B with its vision encoder, which a text decode does not run.
        self.assertNear(billions("llama-4-scout"), 108.6, 0.01)
        self.assertNear(billions("llama-4-scout", True), 17.2, 0.01)
        self.assertAlmostEqual(deployment.mtp_params(catalog.MODELS["deepseek-v3"]) / 1e9, 11.6, delta=0.05)

    def test_kv_bytes_per_token(self):
        self.assertEqual(deployment.kv_bytes_per_token(catalog.MODELS["deepseek-v3"], "bf16"), 61 * (512 + 64) * 2)   # MLA: 70,272
        self.assertEqual(deployment.kv_bytes_per_token(catalog.MODELS["qwen3-30b-a3b"], "bf16"), 48 * 2 * 4 * 128 * 2)
        # gpt-oss-120b: 18 full layers; the 18 sliding ones keep 128 tokens whatever the context.
        oss = build_deployment("gpt-oss-120b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=4096, draft="ngram")
        self.assertEqual(oss.target.kv_bytes_per_token, 18 * 2 * 8 * 64 * 2)
        self.assertEqual(costmodel.attended(oss.target, 4096), 18 * 4096 + 18 * 128)

    def test_fp4_weights_by_hand(self):
        s = catalog.MODELS["gpt-oss-120b"]
        embeddings = 2 * 201_088 * 2880
        total = deployment.model_params(s)
        self.assertAlmostEqual(deployment.weight_split(s, "fp4")[2], (total - embeddings) * 4.25 / 8 + embeddings * 2, places=0)


class ConfigJson(unittest.TestCase):
    def test_real_configs_reproduce_the_catalog(self):
        for file, name in (("qwen3-30b-a3b-fp8", "qwen3-30b-a3b"), ("gpt-oss-120b", "gpt-oss-120b"),
                           ("llama-4-scout", "llama-4-scout"), ("llama-3.3-70b", "llama-3.3-70b")):
            with self.subTest(config=file):
                read = hfconfig.shape_from_config(str(CONFIGS / f"{file}.config.json"))
                strip = lambda shape: {k: v for k, v in shape.items() if k not in HEAD_KEYS | {"checkpoint"}}
                self.assertEqual(strip(read), strip(catalog.MODELS[name]))
                # The checkpoint's own dtype comes from quantization_config.quant_method.
                self.assertEqual(read.get("checkpoint"), {"qwen3-30b-a3b-fp8": "fp8", "gpt-oss-120b": "fp4"}.get(file))

    def test_the_cli_takes_a_config_and_a_head_config(self):
        status, out, err = run(["--model-config", str(CONFIGS / "qwen3-30b-a3b-fp8.config.json"),
                                "--draft-config", str(CONFIGS / "qwen3-30b-a3b-eagle3-head.config.json"),
                                "--tp", "1", "--alphas", "0.6", "--ks", "3", "--concurrency", "1", "--json", "--no-write"])
        self.assertEqual(status, 0, err)
        dep = json.loads(out)["deployment"]
        self.assertEqual((dep["experts"], dep["experts_per_token"]), (128, 8))
        self.assertAlmostEqual(dep["target_params"] / 1e9, 30.53, delta=0.01)
        self.assertAlmostEqual(dep["active_params"] / 1e9, 3.35, delta=0.01)
        # The head's own config: intermediate 12,288 and a 32,000-token draft vocabulary, trained at 2,048.
        h, i, heads, kv, hd = 2048, 12288, 32, 4, 128
        head = 2 * h * hd * (heads + 2 * kv) + heads * hd * h + 3 * h * i + 3 * h * h + 32000 * h + 4 * h
        self.assertEqual(dep["draft_params"], head)
        self.assertEqual(dep["draft_trained_context"], 2048)

    def test_a_plan_for_a_config_without_a_name_or_in_fp4_serves_a_placeholder(self):
        # llama-3.3-70b.config.json has no _name_or_path: no checkpoint is known, so none is guessed. fp4
        # weights need an fp4 checkpoint, which only gpt-oss ships.
        with tempfile.TemporaryDirectory() as tmp:
            for argv, served in ((["--model-config", str(CONFIGS / "llama-3.3-70b.config.json")],
                                  "vllm serve YOUR-CHECKPOINT-OF-LLAMA-3.3-70B.CONFIG "),
                                 (["--weights-dtype", "fp4"], "vllm serve YOUR-FP4-CHECKPOINT-OF-LLAMA-3.3-70B "),
                                 (["--model", "gpt-oss-120b", "--tp", "1", "--weights-dtype", "fp4"],
                                  "vllm serve openai/gpt-oss-120b ")):
                with self.subTest(argv=argv):
                    plan = Path(tmp) / "plan.md"
                    status, out, err = run(argv + ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,32",
                                                   "--out", str(plan)])
                    self.assertEqual(status, 0, err)
                    self.assertIn(served, plan.read_text())

    def test_a_missing_field_is_named(self):
        data = json.loads((CONFIGS / "llama-3.3-70b.config.json").read_text())
        del data["num_hidden_layers"]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "config.json"
            path.write_text(json.dumps(data))
            status, out, err = run(["--model-config", str(path), "--no-write"])
        self.assertEqual(status, 2)
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertIn("num_hidden_layers", err)


class ExpertReads(unittest.TestCase):
    def test_skewed_shares_by_hand(self):
        # Weights 1, 1/2, 1/3, 1/4 (exponent 1), k = 2: shares 2 w / (25/12), none capped.
        self.assertEqual([round(q, 6) for q in moe.expert_shares(4, 2, 1.0)], [0.96, 0.48, 0.32, 0.24])
        # Exponent 3: the hottest would take 2 x 1 / 1.1777 = 1.70 > 1, so it is capped at 1 and the other three
        # share the one pick left in proportion to 1/8, 1/27, 1/64.
        rest = (1 / 8, 1 / 27, 1 / 64)
        self.assertEqual([round(q, 6) for q in moe.expert_shares(4, 2, 3.0)],
                         [1.0] + [round(w / sum(rest), 6) for w in rest])

    def test_the_routing_exponent_reproduces_the_measured_hottest_expert(self):
        # TensorRT-LLM tech blog 4, Table 1: DeepSeek-R1's hottest expert slot carries 1 + 10.948 times the mean.
        s = moe.model_routing_exponent(catalog.MODELS["deepseek-v3"])
        self.assertAlmostEqual(moe.expert_shares(256, 8, s)[0] * 256 / 8, 11.948, places=6)
        self.assertEqual(moe.model_routing_exponent(catalog.MODELS["qwen3-30b-a3b"]), 0.0)   # no measurement: uniform
        self.assertEqual(moe.routing_exponent(256, 8, 1.0), 0.0)

    def test_a_deepseek_config_routes_as_deepseek(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = dict(hidden_size=1024, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=8,
                        vocab_size=1000, intermediate_size=2048, n_routed_experts=64, num_experts_per_tok=4,
                        moe_intermediate_size=256)
            for kind, routing in (("deepseek_v3", "deepseek"), ("kimi_k2", "deepseek"), ("qwen3_moe", None)):
                path = Path(tmp) / f"{kind}.json"
                path.write_text(json.dumps(dict(base, model_type=kind)))
                self.assertEqual(hfconfig.shape_from_config(str(path)).get("routing"), routing)

    def test_one_gpu_of_experts_is_the_distinct_count(self):
        s = moe.model_routing_exponent(catalog.MODELS["deepseek-v3"])
        for tokens in (1, 8, 40):
            self.assertAlmostEqual(moe.busiest_rank_experts(256, 8, tokens, s, 1),
                                   moe.expected_experts(256, 8, tokens, s), places=9)

    def test_expert_parallel_reads_the_busiest_gpus_experts(self):
        tp = build_deployment("deepseek-v3", "h200", 8, weights_dtype="fp8", kv_dtype="bf16", context=2048, draft="mtp", engine="sglang")
        ep = dataclasses.replace(tp, ep=8)
        net, s = tp.target, tp.target.routing_exponent
        for batch in (1, 8, 64):
            extra = costmodel.target_parts(ep, batch, 1)["weights"] - costmodel.target_parts(tp, batch, 1)["weights"]
            # 58 MoE layers x (8 x busiest - distinct) experts x one expert's bytes, at 8 H200s' fitted fp8 rate.
            by_hand = (58 * (8 * moe.busiest_rank_experts(256, 8, batch, s, 8) - moe.expected_experts(256, 8, batch, s))
                       * net.expert_bytes / (8 * 4.8e9 * costmodel.FIT.bw_hopper * 0.916 * costmodel.FIT.fp8_eff))
            self.assertAlmostEqual(extra, by_hand, delta=1e-9 + 0.001 * by_hand)
            self.assertGreater(extra, 0.0)      # the busiest GPU reads more than its even share
        # Once every GPU's experts are all touched the busiest reads no more than the rest: TP and EP agree.
        self.assertAlmostEqual(costmodel.target_parts(ep, 4096, 1)["weights"], costmodel.target_parts(tp, 4096, 1)["weights"],
                               places=6)

    def test_expert_parallel_commands_on_all_three_engines(self):
        flag = {"vllm": "--enable-expert-parallel", "sglang": "--ep-size 8", "trtllm": "--ep_size 8"}
        for engine in ("vllm", "sglang", "trtllm"):
            # The whole plan for one model: every server it starts is expert parallel.
            with self.subTest(engine=engine), tempfile.TemporaryDirectory() as tmp:
                plan = Path(tmp) / "plan.md"
                status, out, err = run(["--model", "deepseek-v3", "--gpu", "b200", "--tp", "8", "--ep", "8",
                                        "--engine", engine, "--weights-dtype", "fp8", "--draft", "ngram", "--ks", "3",
                                        "--concurrency", "8", "--out", str(plan)])
                self.assertEqual(status, 0, err)
                text = plan.read_text()
                joined = text.replace("\\\n", " ").splitlines()   # continuation lines joined
                serve = [line for line in joined if line.startswith(("vllm serve ", "python -m sglang.",
                                                                       "trtllm-serve "))]
                self.assertTrue(serve and all(flag[engine] in line for line in serve), serve)
                self.assertIn("expert parallel 8", text)
            # The other two models through the same servers the plan prints, speculation off and on. 8 x B200:
            # Kimi-K2's 958 GiB of fp8 weights leave 8 x H200 no room for its MLA cache, copied on every TP GPU.
            for model in ("kimi-k2", "qwen3-235b-a22b"):
                with self.subTest(engine=engine, model=model):
                    dep = build_deployment(model, "b200", 8, weights_dtype="fp8", kv_dtype="bf16", context=None, draft="ngram", engine=engine, ep=8)
                    for k in (None, 3):
                        lines = " ".join(commands.ENGINE_PLANS[engine].serve(dep, 8, k)).replace("\\ ", "")
                        self.assertIn(flag[engine], lines)
                        self.assertNotIn("YOUR-", lines)   # a real checkpoint, no placeholder

    def test_kv_heads_fewer_than_the_tp_gpus_are_copied(self):
        # vLLM keeps max(1, kv_heads / tp) heads a GPU: Qwen3-235B's 4 at TP 8 twice over, MLA's latent on all 8.
        for model, tp, copies in (("qwen3-235b-a22b", 8, 2.0), ("qwen3-235b-a22b", 4, 1.0), ("deepseek-v3", 8, 8.0),
                                  ("llama-3.3-70b", 8, 1.0), ("llama-3.3-70b", 16, 2.0)):
            dep = build_deployment(model, "h200", tp, weights_dtype="fp8", kv_dtype="bf16", context=2048, draft="ngram")
            self.assertEqual(deployment.kv_copies(dep.target, dep), copies, (model, tp))
        # DeepSeek-V3 at TP 8: the sequences that fit are the free bytes over 8 copies of each one's latent cache.
        dep = build_deployment("deepseek-v3", "h200", 8, weights_dtype="fp8", kv_dtype="bf16", context=2048, draft="ngram")
        free = deployment.memory_budget_bytes(dep) - dep.target.held_bytes
        self.assertEqual(deployment.max_concurrency(dep), int(free // (2048 * 61 * 576 * 2 * 8)))
        # and each step reads 8 copies of the history: at B = 64 the KV term is 8 x one copy over 8 GPUs' bandwidth.
        one = dataclasses.replace(dep, tp=1)   # same bandwidth share; one GPU's copy, no split
        history = lambda d: costmodel.pass_parts(d.target, d, 64, 1, 0.0)["attention"]
        self.assertGreater(history(dep), 0.9 * history(one))

    def test_attention_data_parallel_by_hand(self):
        ep = build_deployment("deepseek-v3", "h200", 8, weights_dtype="fp8", kv_dtype="bf16", context=2048, draft="mtp", engine="sglang", ep=8)
        dp = dataclasses.replace(ep, dp_attention=True)
        t, bw = ep.target, 8 * 4.8e9 * costmodel.FIT.bw_hopper * 0.916
        for batch in (1, 9, 64):
            a, b = costmodel.target_parts(ep, batch, 1), costmodel.target_parts(dp, batch, 1)
            # Each GPU reads a whole copy of what is not a routed expert: 7 more copies over 8 GPUs' bandwidth.
            self.assertAlmostEqual(b["weights"] - a["weights"], 7 * t.weight_bytes / (bw * costmodel.FIT.fp8_eff), places=9)
            # One collective a MoE layer (58) instead of two all-reduces a layer (61).
            self.assertAlmostEqual(b["communication"] / a["communication"], 58 / 122, places=9)
        # Its own sequences' cache and no copies of MLA's latent: 8x the sequences, less the weights' copies.
        free = deployment.memory_budget_bytes(dp) - deployment.static_bytes(dp)
        self.assertAlmostEqual(deployment.static_bytes(dp) - deployment.static_bytes(ep),
                               7 * (deployment.non_expert_bytes(t) + deployment.non_expert_bytes(dp.drafter)), places=0)
        per_seq = 2048 * (t.kv_bytes_per_token + dp.drafter.kv_bytes_per_token)
        self.assertEqual(deployment.max_concurrency(dp), min(records.CONCURRENCY_LIMIT, int(free // per_seq)))
        self.assertGreater(deployment.max_concurrency(dp), 4 * deployment.max_concurrency(ep))

    def test_attention_data_parallel_commands(self):
        want = {"vllm": ("--tensor-parallel-size 1", "--data-parallel-size 8", "--enable-expert-parallel"),
                "sglang": ("--tp-size 8", "--ep-size 8", "--attn-dp-size 8"),   # 0.5.22 on; before, the next
                "trtllm": ("--tp_size 8", "--ep_size 8", "enable_attention_dp: true")}
        for engine, words in want.items():
            with self.subTest(engine=engine), tempfile.TemporaryDirectory() as tmp:
                plan = Path(tmp) / "plan.md"
                status, out, err = run(["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--ep", "8",
                                        "--dp-attention", "--draft", "mtp", "--weights-dtype", "fp8", "--engine",
                                        engine, "--ks", "1", "--concurrency", "64", "--out", str(plan)])
                self.assertEqual(status, 0, err)
                text = plan.read_text().replace("\\\n", " ")
                for word in words:
                    self.assertIn(word, text)
                self.assertIn("attention data parallel", text)
                # The gate's own command line re-runs this deployment, not a tensor-parallel one.
                rerun = [line for line in text.splitlines() if line.startswith("python code/main.py")]
                self.assertTrue(rerun and all("--ep 8" in line and "--dp-attention" in line for line in rerun))
                if engine == "vllm":   # vLLM ignores the K-by-batch table under data parallelism: never served
                    served = [line for line in text.splitlines() if line.startswith("vllm serve")]
                    self.assertFalse(any("per_batch_size" in line for line in served))
        with tempfile.TemporaryDirectory() as tmp:   # SGLang before 0.5.22: a switch beside --dp-size
            plan = Path(tmp) / "plan.md"
            status, out, err = run(["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--ep", "8",
                                    "--dp-attention", "--draft", "mtp", "--weights-dtype", "fp8", "--engine", "sglang",
                                    "--engine-version", "0.5.21", "--ks", "1", "--concurrency", "64", "--out",
                                    str(plan)])
            self.assertEqual(status, 0, err)
            text = plan.read_text().replace("\\\n", " ")
            self.assertIn("--enable-dp-attention --dp-size 8", text)
            self.assertNotIn("--attn-dp-size", text)
        status, out, err = run(["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--dp-attention",
                                "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("--dp-attention", err)

    def test_trtllm_chunks_a_prompt_past_its_token_budget(self):
        for tokens, chunked in ((8192, False), (20000, True)):
            with tempfile.TemporaryDirectory() as tmp:
                plan = Path(tmp) / "plan.md"
                status, out, err = run(["--engine", "trtllm", "--input-tokens", str(tokens), "--output-tokens", "500",
                                        "--draft", "ngram", "--ks", "3", "--concurrency", "8", "--out", str(plan)])
                self.assertEqual(status, 0, err)
                self.assertEqual("enable_chunked_prefill: true" in plan.read_text(), chunked)

    def test_expert_parallel_refusals(self):
        for argv, words in ((["--model", "llama-3.1-8b", "--tp", "2", "--ep", "2"], "is dense"),
                            (["--model", "qwen3-30b-a3b", "--tp", "2", "--ep", "4"], "1 or the --tp degree (2)"),
                            (["--model", "qwen3-30b-a3b", "--tp", "1", "--ep", "0"], "1 or the --tp degree (1)")):
            status, out, err = run(argv + ["--no-write"])
            self.assertEqual(status, 2)
            self.assertIn(words, err)
            self.assertEqual(len(err.strip().splitlines()), 1)

    def test_a_small_active_moe_is_slower_with_speculation_at_small_batch(self):
        # Issue 11: Qwen3-30B-A3B on SGLang, K = 3, measured acceptance length 1.9: the published slowdowns are of
        # SGLang 0.4.9 (bench/published_moe_2026.json), before spec v2 overlapped a round's host work.
        status, out, err = run(["--model", "qwen3-30b-a3b", "--engine", "sglang", "--ks", "3", "--acceptance-length",
                                "1.9", "--tp", "1", "--weights-dtype", "fp8", "--concurrency", "1,8", "--engine-version", "0.4.9", "--json",
                                "--no-write"])
        self.assertEqual(status, 0, err)
        data = json.loads(out)
        auto = [c for c in data["cells"] if c["verify_overhead"] == "auto"]
        self.assertLess(auto[0]["speedup_exact"], 1.0)          # B = 1: slower than plain decoding
        summary = " ".join(data["summary"])
        # At B = 1 a plain step's token touches 8 experts; the verify pass's 4 tokens of one sequence reuse experts
        # (expert_affinity 0.4), counting as 1 + 3 x 0.6 = 2.8 independent ones: 128 (1 - (120/128)^2.8) = 21.2.
        self.assertEqual(costmodel.FIT.expert_affinity, 0.4)
        self.assertIn("1 token touches 8.0 experts a layer, the verify pass's 4 tokens 21.2", summary)
        dep = build_deployment("qwen3-30b-a3b", "h100-sxm", 1, weights_dtype="fp8", kv_dtype="bf16", context=None, draft="eagle3", engine="sglang",
                                        era=catalog.era_of("sglang", "0.4.9"))
        # What the verify pass adds over a plain step, beyond a dense model's: the 21.2 - 8 further experts of
        # 3 x 2048 x 768 fp8 bytes in each of 48 layers, at the H100's fitted fp8 read rate.
        extra = lambda d: costmodel.target_pass_ms(d, 1, 4) - costmodel.target_pass_ms(d, 1, 1)
        by_hand = ((128 * (1 - (120 / 128) ** 2.8) - 8) * 48 * 3 * 2048 * 768
                   / (3.35e9 * costmodel.FIT.bw_hopper * costmodel.FIT.fp8_eff))
        self.assertAlmostEqual(extra(dep) - extra(costmodel.dense_equivalent(dep)), by_hand, delta=0.01 * by_hand)
        self.assertIn(f"a dense model of the same active size would have {costmodel.eps_decode(costmodel.dense_equivalent(dep), 1, 3):.2f}",
                      summary)

    def test_a_dense_model_has_no_expert_reads(self):
        dep = build_deployment()
        self.assertEqual(costmodel.dense_equivalent(dep).target, dep.target)


class Drafts(unittest.TestCase):
    def test_mtp_is_one_target_layer_reading_the_lm_head(self):
        dep = build_deployment("deepseek-v3", "h200", 8, weights_dtype="fp8", kv_dtype="bf16", context=2048, draft="mtp")
        s = catalog.MODELS["deepseek-v3"]
        self.assertEqual(dep.drafter.held_params, deployment.mtp_params(s))
        self.assertEqual(dep.drafter.moe_layers, 1)
        self.assertEqual(dep.drafter.kv_bytes_per_token, (512 + 64) * 2)
        status, _, err = run(["--model", "qwen3-30b-a3b", "--draft", "mtp", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("no MTP module", err)

    def test_a_tree_verifies_its_own_width(self):
        chain = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1024, draft="eagle3", engine="sglang")
        tree = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1024, draft="eagle3", engine="sglang",
                                 topk=4, verify_tokens=8)
        verify = lambda dep, n: costmodel.target_pass_ms(dep, 8, n)
        # a draft step's sampling stays on the GPU: no engine cost per token (host=False)
        drafts = lambda dep, width: costmodel.pass_ms(dep.drafter, dep, 8, width, costmodel.fixed_ms(dep, "draft"),
                                                      host=False)
        self.assertAlmostEqual(costmodel.round_ms(tree, 8, 5), costmodel.fixed_ms(tree, "round") + drafts(tree, 1)
                               + 4 * drafts(tree, 4) + verify(tree, 8), places=9)
        spec_v2 = 2.99 * 1000 / 246.80 - 3.01 * 1000 / 273.43   # PR #11398's round before minus after: chains only
        self.assertAlmostEqual(costmodel.round_ms(chain, 8, 5), costmodel.fixed_ms(chain, "round") + 5 * drafts(chain, 1)
                               + verify(chain, 6) - spec_v2, places=9)
        # eps_growth splits a round into the verify pass's terms and the rest at the tree's 8 tokens too:
        # what is not the verify pass is the draft steps, one wide, four topk wide, and the bookkeeping.
        steps = lambda width: costmodel.pass_ms(tree.drafter, tree, 32, width, costmodel.fixed_ms(tree, "draft"),
                                                host=False)
        rest = costmodel.fixed_ms(tree, "round") + steps(1) + 4 * steps(4)
        self.assertAlmostEqual(costmodel.round_ms(tree, 32, 5) - costmodel.verify_pass_ms(tree, 32, 5), rest, places=9)
        growth = costmodel.eps_growth(tree, 5, 1, 32)        # and the term it names is measured the same way
        if growth.term == "the draft steps and bookkeeping":
            self.assertAlmostEqual(growth.extra_b1, rest, places=9)
        else:
            plain, verify = costmodel.target_parts(tree, 32, 1), costmodel.target_parts(tree, 32, 8)
            term = growth.term.removeprefix("the verify pass's ")
            self.assertAlmostEqual(growth.extra_b1, verify[term] - plain[term], places=9)
        # A wide tree (32 tokens a sequence) at B = 64: a verify-pass term moves eps most (SGLang's cost per verified
        # token, then the compute), counted at the tree's own width, not at K + 1 = 4 tokens.
        wide = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1024, draft="eagle3", engine="sglang",
                                 topk=8, verify_tokens=32)
        growth = costmodel.eps_growth(wide, 3, 1, 64)
        plain, verify = costmodel.target_parts(wide, 64, 1), costmodel.target_parts(wide, 64, 32)
        narrow = costmodel.target_parts(wide, 64, 4)
        self.assertIn(growth.term, ("the verify pass's engine", "the verify pass's compute"))
        term = growth.term.removeprefix("the verify pass's ")
        self.assertAlmostEqual(growth.extra_b1, verify[term] - plain[term], places=9)
        self.assertGreater(growth.extra_b1, 5 * (narrow[term] - plain[term]))
        status, out, err = run(["--engine", "sglang", "--draft-topk", "4", "--verify-tokens", "8", "--ks", "5",
                                "--acceptance-length", "3.0", "--concurrency", "8", "--no-write", "--json"])
        self.assertEqual(status, 0, err)
        for argv, needle in ((["--engine", "sglang", "--draft-topk", "4", "--verify-tokens", "8", "--ks", "5"],
                              "--acceptance-length"),
                             (["--draft-topk", "4", "--verify-tokens", "8", "--ks", "5", "--acceptance-length", "3"],
                              "SGLang"),
                             (["--engine", "sglang", "--draft-topk", "4", "--ks", "5", "--acceptance-length", "3"],
                              "--verify-tokens")):
            status, _, err = run(argv + ["--no-write"])
            self.assertEqual(status, 2, argv)
            self.assertIn(needle, err)

    def test_the_sglang_plan_writes_the_tree(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "plan.md"
            status, _, err = run(["--engine", "sglang", "--draft-topk", "4", "--verify-tokens", "8", "--ks", "5",
                                  "--acceptance-length", "3.0", "--out", str(out)])
            self.assertEqual(status, 0, err)
            plan = out.read_text().replace(" \\\n  ", " ")
        self.assertIn("--speculative-num-steps 5 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8", plan)


class DraftModelConfig(unittest.TestCase):
    # Llama 3.2 1B's config.json fields (meta-llama/Llama-3.2-1B-Instruct), as a draft model.
    CONFIG = dict(model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                  num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                  tie_word_embeddings=True, _name_or_path="meta-llama/Llama-3.2-1B-Instruct")

    def run_with(self, config, *extra):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "config.json"
            path.write_text(json.dumps(config))
            return run(["--draft", "model", "--draft-config", str(path), "--ks", "3", "--alphas", "0.6",
                        "--concurrency", "1,32", "--json", "--no-write", *extra])

    def test_a_draft_model_from_its_config_is_the_catalogs(self):
        status, out, err = self.run_with(self.CONFIG)
        self.assertEqual(status, 0, err)
        from_config = json.loads(out)
        _, out, _ = run(["--draft", "llama-3.2-1b", "--ks", "3", "--alphas", "0.6", "--concurrency", "1,32", "--json",
                         "--no-write"])
        catalog = json.loads(out)
        self.assertEqual(from_config["deployment"]["draft_params"], 1_235_814_400)
        self.assertEqual(from_config["deployment"]["draft_model"], "meta-llama/Llama-3.2-1B-Instruct")
        for a, b in zip(from_config["cells"], catalog["cells"]):
            self.assertAlmostEqual(a["eps_eff"], b["eps_eff"], places=9)

    def test_half_the_layers_half_the_layer_weights(self):
        # 16 -> 8 layers: 8 x (attention 2048*64*(32 + 16) + 32*64*2048 + MLP 3*2048*8192 + norms 2*2048)
        # = 8 x 60,821,504 = 486,572,032 parameters fewer.
        status, out, err = self.run_with(dict(self.CONFIG, num_hidden_layers=8))
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["deployment"]["draft_params"], 1_235_814_400 - 486_572_032)

    def test_model_without_a_config_and_a_config_for_another_draft_exit_2(self):
        status, _, err = run(["--draft", "model", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("--draft-config", err)
        status, _, err = self.run_with(dict(self.CONFIG, num_attention_heads=30, num_key_value_heads=6), "--tp", "4")
        self.assertEqual(status, 2)
        self.assertIn("--tp", err)


if __name__ == "__main__":
    unittest.main()
