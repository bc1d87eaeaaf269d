"""The first answer is for the deployment asked about: its settings derived for its model (held against hand counts of
bytes), the plan's batch named and used by every part, acceptance from the published rows, the class's known misses
said, one P99 TPOT wherever it is printed, and the headline in what the plan's benchmark measures."""
import json
import math
import re
import statistics
import tempfile
import unittest
from pathlib import Path

from support import ROOT, run

import main
from rollout import cli, priors

GIB = 2 ** 30
SMALL = ["--alphas", "0.7", "--ks", "3", "--slo", "none", "--input-tokens", "256", "--output-tokens", "256"]


def parsed(argv):
    """The deployment a command line names, parsed as a run parses it (no simulation)."""
    return cli.parse(argv + ["--no-write"], main.SETTINGS).dep


def as_json(argv):
    status, out, err = run(argv + ["--json", "--no-write"])
    assert status == 0, err
    return json.loads(out)


def dense_params(hidden, inter, layers, heads, kv_heads, head_dim, vocab, tied=False, qk_norm=False):
    """A dense decoder's parameters, counted by hand: embeddings and lm_head, then per layer q, k, v, o, the gated
    MLP's three matrices and two norms (Qwen3's per-head q and k norms too), then the final norm."""
    attention = hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden
    layer = attention + 3 * hidden * inter + 2 * hidden + (2 * head_dim if qk_norm else 0)
    return vocab * hidden * (1 if tied else 2) + layers * layer + hidden


class DerivedSettings(unittest.TestCase):
    """A model other than MODEL_SETTINGS' rows gets the dtype it ships in, a bf16 KV cache and the smallest TP whose
    memory holds the plan's batch; the bytes are counted here by hand, the engine's reserve and the draft bounded by
    an allowance on either side."""

    def smallest(self, weights, kv_per_token, per_gpu, sequences, tokens, allowance, candidates):
        """The smallest candidate TP whose budget holds the weights and the batch's KV with the allowance spent, after
        checking that the one before it cannot hold them even with nothing spent."""
        need = sequences * tokens * kv_per_token
        for before, tp in zip([None] + candidates, candidates):
            if tp * per_gpu - weights - allowance > need:
                if before is not None:
                    self.assertLess(before * per_gpu - weights, need, f"TP {before} would hold it too")
                return tp
        return None

    def test_qwen3_32b_on_h200_ships_bf16_and_needs_two_gpus_for_256_sequences(self):
        dep = parsed(["--model", "qwen3-32b", "--gpu", "h200", "--engine", "sglang"])
        params = dense_params(5120, 25600, 64, 64, 8, 128, 151936, qk_norm=True)   # Qwen/Qwen3-32B config.json
        self.assertAlmostEqual(params / 1e9, 32.76, places=2)   # the model card's 32.8 B
        self.assertAlmostEqual(dep.target.held_bytes / (2 * params), 1.0, delta=0.002)
        kv = 2 * 64 * 8 * 128 * 2   # K and V, 64 layers, 8 KV heads of 128, bf16
        self.assertEqual(dep.target.kv_bytes_per_token, kv)
        per_gpu = 141 * GIB * 0.85   # SGLang's --mem-fraction-static as the plan sets it, of all memory
        tp = self.smallest(2 * params, kv, per_gpu, 256, 1024 + 512, 4 * GIB, [1, 2, 4, 8])
        self.assertEqual((dep.tp, tp, dep.weights_dtype, dep.kv_dtype), (2, 2, "bf16", "bf16"))
        self.assertEqual([s.source for s in dep.settings], ["derived"] * 3)
        self.assertIn("256 sequences of 1,536 tokens", dep.settings[0].why)
        small = parsed(["--model", "qwen3-32b", "--gpu", "h200", "--engine", "sglang", "--target-concurrency", "64"])
        self.assertEqual((small.tp, self.smallest(2 * params, kv, per_gpu, 64, 1536, 4 * GIB, [1, 2, 4, 8])), (1, 1))

    def test_llama_8b_on_an_h100_is_one_gpu_in_bf16(self):
        dep = parsed(["--model", "llama-3.1-8b", "--gpu", "h100-sxm"])
        params = dense_params(4096, 14336, 32, 32, 8, 128, 128256)
        self.assertAlmostEqual(params / 1e9, 8.03, places=2)
        self.assertAlmostEqual(dep.target.held_bytes / (2 * params), 1.0, delta=0.002)
        # vLLM's budget: 0.92 of 80 GiB less its runtime reserve: 8,192 prompt tokens' activations (4 hidden states and
        # the MLP's two projections, bf16), fp32 logits of 1,024 sequences, 1 GiB
        reserve = 8192 * (4 * 4096 + 2 * 14336) * 2 + 1024 * 128256 * 4 + GIB
        tp = self.smallest(2 * params + reserve, 2 * 32 * 8 * 128 * 2, 80 * GIB * 0.92, 256, 1536, 2 * GIB, [1, 2, 4, 8])
        self.assertEqual((dep.tp, tp, dep.weights_dtype), (1, 1, "bf16"))

    def test_deepseek_v3_on_h200_ships_fp8_and_needs_the_node(self):
        dep = parsed(["--model", "deepseek-v3", "--gpu", "h200"])
        weights = 671e9   # its 671 B parameters in block fp8, a byte each (more where bf16 stays: norms, gates)
        kv = 61 * (512 + 64) * 2   # MLA's latent and rope key per layer, bf16, held whole on every GPU
        per_gpu = 141 * GIB * 0.92
        self.assertEqual(dep.target.kv_bytes_per_token, kv)
        tp = self.smallest(weights, kv * 8, per_gpu, 256, 1536, 60 * GIB, [8])   # 8 copies at TP 8
        self.assertLess(4 * per_gpu, weights)   # TP 4 does not even hold the weights
        self.assertEqual((dep.tp, tp, dep.weights_dtype), (8, 8, "fp8"))

    def test_given_values_and_the_examples_row_win(self):
        given = parsed(["--model", "qwen3-32b", "--gpu", "h200", "--tp", "4", "--weights-dtype", "fp8"])
        self.assertEqual((given.tp, given.weights_dtype), (4, "fp8"))
        self.assertEqual([s.source for s in given.settings], ["given", "given", "derived"])
        example = parsed([])
        self.assertEqual((example.model, example.tp, example.weights_dtype, example.kv_dtype),
                         ("llama-3.3-70b", 4, "fp8", "bf16"))
        self.assertEqual({s.source for s in example.settings}, {"model settings"})
        self.assertEqual(parsed(["--model", "deepseek-v3", "--gpu", "h200", "--ep", "8"]).tp, 8)

    def test_a_config_json_derives_from_its_quantization_config(self):
        configs = ROOT / "tests" / "fixtures" / "configs"
        gpt = parsed(["--model-config", str(configs / "gpt-oss-120b.config.json"), "--gpu", "h100-sxm"])
        qwen = parsed(["--model-config", str(configs / "qwen3-30b-a3b-fp8.config.json"), "--gpu", "h100-sxm"])
        llama = parsed(["--model-config", str(configs / "llama-3.3-70b.config.json"), "--gpu", "h100-sxm"])
        self.assertEqual((gpt.weights_dtype, qwen.weights_dtype, llama.weights_dtype), ("fp4", "fp8", "bf16"))
        self.assertEqual(llama.tp, 4)   # 141 GB of bf16 weights: two 80 GB GPUs hold them but not 256 sequences

    def test_the_deployment_lines_and_json_say_where_each_setting_came_from(self):
        data = as_json(["--model", "qwen3-32b", "--gpu", "h200", "--engine", "sglang"] + SMALL)
        self.assertEqual([(s["setting"], s["source"]) for s in data["deployment"]["settings"]],
                         [("tp", "derived"), ("weights_dtype", "derived"), ("kv_dtype", "derived")])
        status, text, _ = run(["--model", "qwen3-32b", "--gpu", "h200", "--engine", "sglang", "--no-write"] + SMALL)
        self.assertIn("Settings: TP 1, derived: the smallest that holds the plan's 256 sequences",
                      " ".join(text.split()))


def schedule_k(schedule, batch):
    return next(k for lo, hi, k in schedule if lo <= batch <= hi)


class DerivedSettingsReview(unittest.TestCase):
    def test_a_model_past_one_node_says_so_and_what_tp_would_hold_it(self):
        dep = parsed(["--model", "deepseek-v3", "--gpu", "h100-sxm"])
        self.assertEqual(dep.tp, 8)   # a node, not TP 1: where none holds it, the largest of equals
        self.assertIn("even 8 x h100-sxm, a node, does not hold the weights and one sequence; --tp 16 across nodes",
                      dep.settings[0].why)

    def test_the_examples_row_is_for_its_gpu(self):
        self.assertEqual((parsed(["--gpu", "l40s"]).tp, parsed(["--gpu", "l40s"]).weights_dtype), (8, "bf16"))
        self.assertEqual(parsed(["--gpu", "h100-sxm"]).tp, 4)

    def test_a_setting_from_a_flag_the_user_did_not_give_is_named_as_it_came(self):
        status, _, err = run(["--model", "qwen3-30b-a3b", "--ep", "3", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("--ep 3 (TP 3): 3 does not divide the 32 attention heads", err)
        for changes, words in ((dict(target_concurrency=0), "TARGET_CONCURRENCY in main.py: an integer"),
                               (dict(model_settings={("llama-3.3-70b", "h100-sxm"): dict(tp="4")}),
                                "MODEL_SETTINGS in main.py: ('llama-3.3-70b', 'h100-sxm') sets tp to '4'")):
            from unittest import mock
            with mock.patch.object(main, "SETTINGS", main.SETTINGS.edited(**changes)):
                status, _, err = run(["--no-write"])
            self.assertEqual((status, len(err.splitlines())), (2, 1), err)
            self.assertIn(words, err)

    def test_the_exercises_print_the_settings_whole(self):
        status, text, _ = run(["--exercises", "--model", "qwen3-32b", "--gpu", "h200", "--no-write"])
        head = " ".join(text.split("\n\n")[0].split())
        self.assertIn("(--tp, --weights-dtype and --kv-dtype set them).", head)


class PlanBatch(unittest.TestCase):
    def test_target_concurrency_moves_every_part_and_the_verdict_names_it(self):
        data = as_json(["--target-concurrency", "48", "--concurrency", "1,64"] + SMALL)
        v = data["verdict"]
        self.assertEqual((v["concurrency"], data["plan"]["shown_batch"], v["benchmark"]["concurrency"]), (48, 48, 48))
        self.assertTrue(v["target_from"].startswith("--target-concurrency"))
        self.assertIn(48, {r["concurrency"] for r in data["best_k"]})
        status, text, _ = run(["--target-concurrency", "48", "--concurrency", "1,64", "--no-write"] + SMALL)
        first = " ".join(text.split("\n\n")[0].split("\n")[1:3])
        self.assertIn("B = 48 (the plan's batch: --target-concurrency)", first)

    def test_without_a_target_it_is_the_grids_largest_and_says_so(self):
        status, text, _ = run(["--concurrency", "1,64", "--no-write"] + SMALL)
        self.assertIn("B = 64 (the plan's batch: the grid's largest concurrency",
                      " ".join(text.splitlines()[1:3]))


SWEEP = [   # dense and MoE, each engine; small grids so that every one runs in a second or so
    ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"],
    ["--model", "qwen3-32b", "--gpu", "h200", "--engine", "sglang"],
    ["--engine", "trtllm"],
    ["--model", "qwen3-30b-a3b", "--gpu", "h100-sxm"],
    ["--model", "qwen3-235b-a22b", "--gpu", "h200", "--engine", "sglang"],
    ["--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--draft", "mtp"],
    ["--model", "qwen3-30b-a3b", "--gpu", "h200", "--engine", "trtllm"],
]


class PublishedAcceptance(unittest.TestCase):
    def test_the_prior_is_the_mean_of_the_rows_per_head_and_dataset(self):
        rows = json.loads((ROOT / "code" / "rollout" / "acceptance_table.json").read_text())["rows"]
        chat = [r for r in rows if r["draft"] == "eagle3" and r["target"] == "meta-llama/Llama-3.1-8B-Instruct"
                and r["domain"] == "chat"]
        groups = {}
        for r in chat:
            groups.setdefault((r["head"], r["dataset"]), []).append(r["alpha"])
        means = [statistics.fmean(g) for g in groups.values()]
        prior = priors.prior_for("eagle3", "chat", "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
                                 "meta-llama/Llama-3.1-8B-Instruct", "llama-3")
        self.assertEqual((prior.match, prior.n), ("target", len(means)))
        self.assertAlmostEqual(prior.alpha, statistics.fmean(means), places=9)
        self.assertAlmostEqual(prior.spread, statistics.pstdev(means), places=9)

    def test_code_above_chat_where_the_published_rows_say_so(self):
        base = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--concurrency", "1,64", "--slo", "none",
                "--output-tokens", "256"]
        code, chat = (as_json(base + ["--mix", mix])["verdict"] for mix in ("code:1", "chat:1"))
        table = {d: priors.prior_for("eagle3", d, None, "meta-llama/Llama-3.1-8B-Instruct", "llama-3").alpha
                 for d in ("code", "chat")}
        self.assertGreater(table["code"], table["chat"])   # 0.81 against 0.77: HumanEval and LiveCodeBench over MT-bench
        self.assertAlmostEqual(code["alpha"], table["code"], places=6)
        self.assertAlmostEqual(chat["alpha"], table["chat"], places=6)
        (_, _, alpha, prior), = code["acceptance"]["domains"]
        self.assertEqual((prior["domain"], prior["match"], prior["temperature"]), ("code", "target", "0"))
        self.assertTrue(prior["sources"] and prior["spread"] > 0)

    def test_the_default_mix_is_the_lessons_shares_at_the_tables_alphas(self):
        v = as_json(["--concurrency", "1,64"] + SMALL[2:])["verdict"]
        names = [(name, share) for name, share, _, _ in v["acceptance"]["domains"]]
        self.assertEqual(names, [("chat", 0.7), ("code", 0.3)])
        blend = priors.Mixture(tuple((share, alpha) for _, share, alpha, _ in v["acceptance"]["domains"]))
        self.assertAlmostEqual(v["alpha"], blend.alpha(3), delta=1e-6)   # --json keeps 6 digits

    def test_the_exercises_keep_the_lessons_alphas_and_say_what_the_rows_show(self):
        status, text, _ = run(["--exercises", "--no-write", "--concurrency", "1,64"])
        flat = " ".join(text.split())
        self.assertIn("naive blended alpha 0.610", flat)   # 0.7 x 0.70 + 0.3 x 0.40
        self.assertRegex(flat, r"of \d+ EAGLE-3 heads measured on both, \d+ accept more on code than on chat")


class KnownMisses(unittest.TestCase):
    def test_the_class_error_is_the_held_out_rows_and_past_15_percent_it_is_said(self):
        argv = ["--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--draft", "mtp", "--tp", "8",
                "--ep", "8", "--dp-attention", "--concurrency", "1,64", "--slo", "none"]
        error = as_json(argv)["verdict"]["model_error"]
        rows = json.loads((ROOT / "code" / "rollout" / "held_out_errors.json").read_text())["rows"]
        mine = sorted(abs(math.expm1(r["log_error"])) for r in rows if (r["what"], r["target"], r["engine"],
                      r["draft"], r["family"]) == ("speedup", "moe", "sglang", "mtp", "hopper"))
        self.assertEqual(error["class"], dict(what="speedup", target="moe", engine="sglang", draft="mtp",
                                              family="hopper"))
        self.assertEqual(error["n"], len(mine))
        self.assertAlmostEqual(error["median"], statistics.median(mine), places=6)
        self.assertAlmostEqual(error["worst"], mine[-1], places=6)
        self.assertGreater(error["median"], 0.15)
        status, text, _ = run(argv + ["--no-write"])
        self.assertIn(f"{error['median']:.0%} off in the median", " ".join(text.split()))
        status, text, _ = run(["--concurrency", "1,64", "--no-write"] + SMALL)
        self.assertNotIn("Known miss", text)   # vLLM EAGLE-3 on dense Hopper: 4.5% held out


class LooseHeads(unittest.TestCase):
    def test_a_prior_of_one_far_measurement_widens_the_range(self):
        prior = priors.prior_for("mtp", "code", None, "deepseek-ai/DeepSeek-V3", "deepseek")
        # the target's own rows, in another domain, before one prompt of another target in this one
        self.assertEqual((prior.match, prior.n, prior.spread), ("any domain", 1, priors.PRIOR_SPREAD_FLOOR))
        self.assertIn("deepseek-ai/DeepSeek-V3", prior.what)
        self.assertFalse(priors.same_target("meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B"))

    def test_the_plans_verdict_carries_the_known_miss(self):
        argv = ["--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--draft", "mtp", "--tp", "8", "--ep",
                "8", "--dp-attention", "--concurrency", "1,64", "--slo", "none"]
        with tempfile.TemporaryDirectory() as tmp:
            status, _, err = run(argv + ["--out", str(Path(tmp) / "plan.md")])
            self.assertEqual(status, 0, err)
            verdict = (Path(tmp) / "plan.md").read_text().split("## Verdict")[1].split("\n## ")[0]
        self.assertEqual(verdict.count("Known miss:"), 1)
        self.assertEqual(verdict.count("K by batch size"), 1)
        self.assertIn("This assumes per-token alpha", verdict)


class OneTail(unittest.TestCase):
    """The P99 TPOT of the plan's benchmark at its batch is one number in the verdict's JSON, stage 1's predicted
    files and stage 4's expectations."""

    def test_one_p99_tpot_per_engine(self):
        for engine, model in (("vllm", "llama-3.1-8b"), ("sglang", "llama-3.1-8b"), ("trtllm", "llama-3.1-8b")):
            with self.subTest(engine=engine), tempfile.TemporaryDirectory() as tmp:
                argv = ["--model", model, "--gpu", "h100-sxm", "--engine", engine, "--concurrency", "1,32",
                        "--output-tokens", "256", "--slo", "none"]
                status, _, err = run(argv + ["--out", str(Path(tmp) / "plan.md")])
                self.assertEqual(status, 0, err)
                plan = (Path(tmp) / "plan.md").read_text()
                bench = as_json(argv)["verdict"]["benchmark"]
                row = re.search(r"\| `sharegpt_spec_c32\.json` \| [^|]+\| [^|]+\| ([\d.]+) \(", plan)
                stage4 = re.search(r"expected `p99_tpot_ms` at B=32, in stage 1's runs .*?: ([\d.]+) ms plain, "
                                   r"([\d.]+) ms with speculation", plan)
                self.assertEqual(row.group(1), f"{bench['spec_p99_tpot_ms']:.2f}")
                self.assertEqual(stage4.group(2), f"{bench['spec_p99_tpot_ms']:.2f}")
                self.assertEqual(stage4.group(1), f"{bench['baseline_p99_tpot_ms']:.2f}")


class Headline(unittest.TestCase):
    def test_the_gain_is_the_benchmarks_output_throughput_with_decoding_alone_beside_it(self):
        v = as_json(["--concurrency", "1,64"] + SMALL)["verdict"]
        b = v["benchmark"]
        # verdict.speedup is the headline's number: the benchmark's ratio, over one plus the class's median
        # held-out error (the model's own beside it, under "modelled")
        self.assertEqual(v["speedup_of"], "benchmark output throughput")
        ratio = b["spec_output_throughput"] / b["baseline_output_throughput"]
        self.assertAlmostEqual(v["modelled"]["speedup"], ratio, places=5)
        self.assertAlmostEqual(v["speedup"], ratio / (1 + v["model_error"]["bias"]), places=5)
        self.assertNotAlmostEqual(v["speedup"], v["decode_speedup"], places=2)   # two numbers, named apart
        status, text, _ = run(["--concurrency", "1,64", "--no-write"] + SMALL)
        first = " ".join(text.split("\n\n")[0].split())
        self.assertIn(f"{v['speedup']:.2f}x output throughput in the plan's benchmark", first)
        self.assertIn(f"decoding alone, {v['decode_speedup']:.2f}x", first)


if __name__ == "__main__":
    unittest.main()
