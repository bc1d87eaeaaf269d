"""Each engine's plan: commands that its parser accepts, with numbers that are this run's."""
import dataclasses
import functools
import json
import re
import tempfile
import unittest
from pathlib import Path

from support import ROOT, build_deployment, run

import main
from rollout import acceptance, bestk, catalog, cli, commands, costmodel, deployment, simulation, trust
from rollout.render import plan
from rollout.schedule import paying_ranges

# Flags each tool's parser defines, read in its source (the engines issue's research notes):
# vllm/engine/arg_utils.py, vllm/benchmarks/serve.py and datasets.py; sglang
# python/sglang/srt/server_args.py; tensorrt_llm/commands/serve.py and
# tensorrt_llm/serve/scripts/benchmark_serving.py; and this program's own parser.
BENCH_FLAGS = {"--backend", "--endpoint", "--port", "--model", "--dataset-name", "--dataset-path", "--num-prompts",
               "--max-concurrency", "--temperature", "--percentile-metrics", "--metric-percentiles",
               "--save-result", "--result-filename", "--random-input-len", "--random-output-len", "--ignore-eos",
               "--sharegpt-output-len",
               "--goodput",   # vllm/benchmarks/serve.py from 0.8.0 (nargs="+", KEY:VALUE in ms); TensorRT-LLM's copy too
               "--request-rate", "--burstiness"}   # vllm/benchmarks/serve.py in 0.8.0, 0.9.2, 0.11.0 and 0.34.0
KNOWN_FLAGS = {
    "vllm serve": {"--tensor-parallel-size", "--quantization", "--kv-cache-dtype", "--gpu-memory-utilization",
                   "--speculative-config"},
    "vllm bench serve": BENCH_FLAGS,
    "python -m tensorrt_llm.serve.scripts.benchmark_serving": BENCH_FLAGS,
    "python -m sglang.launch_server": {"--model-path", "--tp-size", "--quantization", "--kv-cache-dtype",
                                       "--mem-fraction-static", "--max-running-requests", "--enable-metrics",
                                       "--speculative-algorithm", "--speculative-draft-model-path",
                                       "--speculative-num-steps", "--speculative-eagle-topk",
                                       "--speculative-num-draft-tokens", "--speculative-draft-model-quantization",
                                       "--speculative-ngram-max-bfs-breadth"},
    "trtllm-serve": {"--backend", "--tp_size", "--max_batch_size", "--kv_cache_free_gpu_memory_fraction",
                     "--extra_llm_api_options"},
    "python code/main.py": {"--engine", "--model", "--gpu", "--tp", "--weights-dtype", "--kv-dtype", "--context",
                            "--input-tokens", "--output-tokens", "--draft", "--bench-baseline", "--bench-spec",
                            "--target-concurrency", "--metrics", "--metrics-before", "--acceptance-length",
                            "--acceptance-rates", "--ks", "--calibrate", "--gate", "--gate-margin", "--p99-budget",
                            "--served-model", "--model-config", "--draft-config", "--draft-model", "--draft-topk",
                            "--verify-tokens", "--gpu-memory", "--gpu-bandwidth", "--gpu-tflops", "--compare",
                            "--ep", "--dp-attention", "--engine-version"},
}


def plan_for(argv):
    """(plan text, --json data) of one run; each run once for the module (a run is deterministic, and several tests
    read the same engine's default plan)."""
    text, data = planned(tuple(argv))
    return text, json.loads(data)


@functools.lru_cache(maxsize=None)
def planned(argv):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.md"
        status, text, err = run(list(argv) + ["--json", "--out", str(out)])
        assert status == 0, err
        return out.read_text(), text


def shell_commands(plan):
    """Every shell command in the plan's unlabelled code blocks, continuation lines joined."""
    inside, label, lines = False, "", []
    for line in plan.splitlines():
        if line.startswith("```"):
            inside, label = not inside, line[3:]
        elif inside and label == "":
            lines.append(line)
    text = "\n".join(lines).replace(" \\\n", " ")
    return [line for line in text.splitlines() if line and not line.startswith(("cat >", "YAML", " ", "--", "# "))
            and ":" not in line.split()[0]]


def tool_of(command):
    command = re.sub(r"^([A-Z0-9_]+=\S+ )+", "", command)      # environment assignments before the tool
    return max((t for t in KNOWN_FLAGS if command.startswith(t + " ")), key=len, default=None)


class EveryCommand(unittest.TestCase):
    def test_each_flag_is_one_the_tool_defines(self):
        for engine in ("vllm", "sglang", "trtllm"):
            plan, _ = plan_for(["--engine", engine])
            found = shell_commands(plan)
            self.assertGreaterEqual(len(found), 4, engine)
            for command in found:
                if command.startswith("wget ") or command.startswith("curl "):
                    continue
                tool = tool_of(command)
                self.assertIsNotNone(tool, command)
                flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9_-]*", command.split("'")[0] + " ".join(
                    command.split("'")[2::2])))
                self.assertLessEqual(flags, KNOWN_FLAGS[tool], f"{engine}: {command}")

    def test_the_gate_command_parses_here(self):
        # The gate line each plan prints is this program's own: its flags must parse (placeholders aside).
        for engine in ("vllm", "sglang", "trtllm"):
            plan, _ = plan_for(["--engine", engine])
            line = next(c for c in shell_commands(plan) if c.startswith("python code/main.py"))
            argv = line.split()[2:]
            argv = ["1.5" if a == "TAU" else "0.5" if a == "R" else a for a in argv]
            files = [i for i, a in enumerate(argv) if a.startswith(("--metrics", "--bench", "--calibrate", "--compare"))]
            for i in reversed(files):
                del argv[i:i + 2]
            status, _, err = run([a for a in argv if a != "--gate"] + ["--no-write"])
            self.assertEqual(status, 0, f"{engine}: {err}")


    def test_the_gate_command_rebuilds_the_same_deployment(self):
        # Every flag that moved the deployment from the catalog's comes back in the gate line.
        configs = Path(__file__).parent / "fixtures" / "configs"
        fields = ("model", "gpu", "tp", "weights_dtype", "kv_dtype", "context", "draft", "memory_gib",
                  "bandwidth_tbs", "engine", "draft_hf", "input_tokens", "output_tokens", "topk", "verify_tokens",
                  "target", "drafter", "shape", "draft_shape")
        small = ["--acceptance-length", "3.0", "--ks", "5", "--concurrency", "1"]
        for argv in (["--gpu", "h100-sxm", "--gpu-memory", "94"],
                     ["--gpu", "custom", "--gpu-memory", "100", "--gpu-bandwidth", "4", "--gpu-tflops", "900"],
                     ["--engine", "sglang", "--draft-topk", "4", "--verify-tokens", "8"],
                     ["--model-config", str(configs / "qwen3-30b-a3b-fp8.config.json"), "--tp", "1",
                      "--draft-config", str(configs / "qwen3-30b-a3b-eagle3-head.config.json")],
                     ["--draft", "eagle3", "--draft-model", "my-org/my-head", "--context", "3000"]):
            with self.subTest(argv=argv):
                parsed = cli.parse(small + argv, main.SETTINGS)
                dep = parsed.dep
                again = cli.parse(small + " ".join(commands.tool_words(dep)).split()[2:], main.SETTINGS).dep
                self.assertEqual([getattr(again, f) for f in fields], [getattr(dep, f) for f in fields])


class Vllm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plan, cls.data = plan_for([])
        cls.configs = [json.loads(c) for c in re.findall(r"--speculative-config '(\{.*?\})'", cls.plan)]

    def test_config_runs_the_plans_k_with_the_catalog_head(self):
        fixed = self.configs[0]
        self.assertEqual(fixed["method"], "eagle3")
        self.assertEqual(fixed["model"], "RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3")
        self.assertEqual(fixed["num_speculative_tokens"], self.data["plan"]["k"])
        self.assertEqual(fixed["draft_sample_method"], "probabilistic")     # TEMPERATURE 0.7 > 0

    def test_k_by_batch_table_is_the_schedule_and_covers_every_batch(self):
        scheduled = [c for c in self.configs if "num_speculative_tokens_per_batch_size" in c]
        self.assertEqual(len(scheduled), 1)
        table = scheduled[0]["num_speculative_tokens_per_batch_size"]
        self.assertEqual(table, self.data["plan"]["schedule"])
        self.assertEqual(table[0][0], 1)
        self.assertEqual(table[-1][1], self.data["deployment"]["max_concurrency"])
        for (_, end, _), (start, _, _) in zip(table, table[1:]):
            self.assertEqual(start, end + 1)
        self.assertEqual(scheduled[0]["num_speculative_tokens"], max(row[2] for row in table))

    def test_benchmark_runs_at_the_target_with_ten_prompts_a_slot(self):
        target = self.data["plan"]["target"]
        self.assertIn(f"--max-concurrency {target} ", self.plan)
        self.assertIn(f"--num-prompts {10 * target} ", self.plan)

    def test_alert_is_on_position_0_at_the_break_even_alpha(self):
        expr = re.search(r"expr: \((.*)\) < ([0-9.]+)", self.plan)
        self.assertIn('position="0"', expr.group(1))
        self.assertIn("vllm:spec_decode_num_drafts_total", expr.group(1))
        threshold, plan = float(expr.group(2)), self.data["plan"]
        # The threshold solves tau(alpha, K) = 1 + eps at the target: check by the closed form.
        k, eps = plan["k"], plan["eps"]
        self.assertAlmostEqual(sum(threshold ** i for i in range(k + 1)), 1 + eps, delta=0.002)

    def test_a_schedule_that_turns_off_ends_in_a_k0_row(self):
        # At alpha 0.4 speculation stops paying inside the memory limit: the table's last row is K = 0.
        schedule = bestk.k_schedule(build_deployment(), 0.4)
        self.assertEqual(schedule[-1][2], 0)
        config = json.loads(commands.speculative_config(build_deployment(), 2, schedule))
        self.assertEqual(config["num_speculative_tokens_per_batch_size"][-1][2], 0)
        self.assertEqual(config["num_speculative_tokens_per_batch_size"][-1][1], deployment.max_concurrency(build_deployment()))


class Sglang(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plan, cls.data = plan_for(["--engine", "sglang"])

    def test_chain_flags_agree_with_k(self):
        k, target = self.data["plan"]["k"], self.data["plan"]["target"]
        self.assertIn(f"--speculative-num-steps {k} --speculative-eagle-topk 1 --speculative-num-draft-tokens {k + 1}",
                      self.plan.replace(" \\\n  ", " "))
        self.assertIn("--speculative-algorithm EAGLE3", self.plan)
        self.assertIn("lmsys/SGLang-EAGLE3-Llama-3.3-70B-Instruct-SpecForge", self.plan)
        # Speculation caps running requests at 48 unless set: every server the plan starts sets the target (stage 0's,
        # stage 1's and, with the SLO's K, the SLO section's).
        servers = self.plan.count("python -m sglang.launch_server")
        self.assertGreaterEqual(servers, 2)
        self.assertEqual(self.plan.count(f"--max-running-requests {target}"), servers)
        # Calibration baselines at 1, 16 and the target, and the gate's ShareGPT pair at the target; SGLang's
        # benchmark records no acceptance, so no speculative calibration run: five benchmark runs.
        self.assertEqual(plan.calibration_batches(256), [1, 16, 256])
        stages = self.plan.split("## The deployment this plan is for")[1].split("## Serving at the SLO")[0]
        self.assertEqual(stages.count("--port 30000"), 3 + 2)   # after the verdict's one run, before the SLO's
        self.assertEqual(stages.count("--dataset-name random --random-input-len 1024"), 3)
        self.assertEqual(stages.count("--dataset-name sharegpt"), 2)

    def test_memory_is_the_fraction_the_plan_passes(self):
        self.assertEqual(self.data["deployment"]["gpu_memory_utilization"], 0.85)
        self.assertIn("--mem-fraction-static 0.85", self.plan)

    def test_gauges_are_averaged_never_rated(self):
        self.assertIn("avg_over_time(sglang:spec_accept_length", self.plan)
        self.assertNotRegex(self.plan, r"rate\(sglang:")
        threshold = float(re.search(r"sglang:spec_accept_length\[10m\]\)\) < ([0-9.]+)", self.plan).group(1))
        self.assertAlmostEqual(threshold, 1 + self.data["plan"]["eps"], delta=0.0005)   # break-even tau = 1 + eps


class TensorRtLlm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plan, cls.data = plan_for(["--engine", "trtllm"])

    def test_yaml_and_serve_line_agree_with_the_run(self):
        k = self.data["plan"]["k"]
        yaml = re.search(r"cat > spec.yaml <<'YAML'\n(.*?)\nYAML", self.plan, re.S).group(1)
        self.assertIn("  decoding_type: Eagle3", yaml)
        self.assertIn(f"  max_draft_len: {k}\n", yaml + "\n")
        self.assertIn('  speculative_model: "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"', yaml)
        self.assertIn("trtllm-serve nvidia/Llama-3.3-70B-Instruct-FP8 --backend pytorch --tp_size 4", self.plan)
        self.assertIn("--kv_cache_free_gpu_memory_fraction 0.9 ", self.plan)

    def test_kill_switch_is_the_break_even_rate(self):
        threshold = float(re.search(r"acceptance_rate_threshold: ([0-9.]+)", self.plan).group(1))
        plan = self.data["plan"]
        self.assertAlmostEqual(threshold, plan["eps"] / plan["k"], delta=0.0005)   # tau = 1 + K r

    def test_memory_counts_what_the_weights_leave(self):
        dep = self.data["deployment"]
        total = 4 * 80 * 2 ** 30
        static = dep["weight_bytes"] + dep["draft_weight_bytes"]
        self.assertAlmostEqual(dep["memory_budget_bytes"], static + 0.9 * (total - static), delta=1)


def flat(plan):
    return plan.replace(" \\\n  ", " ")


class EngineDrafts(unittest.TestCase):
    """Every engine's lines for every kind of draft it runs, against its sources (issue 19)."""

    DEEPSEEK = ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--draft", "mtp"]
    SMALL = ["--alphas", "0.7", "--ks", "2", "--concurrency", "1,32"]

    def check_flags(self, plan, label):
        for command in shell_commands(plan):
            tool = tool_of(command)
            if tool:
                flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9_-]*", command.split("'")[0] + " ".join(
                    command.split("'")[2::2])))
                self.assertLessEqual(flags, KNOWN_FLAGS[tool], f"{label}: {command}")

    def test_vllm_runner_v2_by_method(self):
        # 0.24-0.31: V2's drafter ignores the table, so eagle3's table runs on V1; ngram falls back to V1 by itself.
        plan, _ = plan_for(self.SMALL + ["--engine-version", "0.31"])
        self.assertIn("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve", plan)          # the table needs V1 for eagle3
        self.assertIn("issue #51510", plan)
        plan, _ = plan_for(self.SMALL + ["--engine-version", "0.31", "--draft", "ngram"])
        self.assertNotIn("VLLM_USE_V2_MODEL_RUNNER=", plan.replace("`VLLM_USE_V2_MODEL_RUNNER=1`", ""))
        self.assertIn("never force `VLLM_USE_V2_MODEL_RUNNER=1`", plan)
        # 0.32 on: V2 runs the table for every method; from 0.34 V1 is gone, and the variable at 0 stops the server.
        for draft in ("eagle3", "ngram"):
            plan, _ = plan_for(self.SMALL + ["--draft", draft])
            self.assertNotIn("VLLM_USE_V2_MODEL_RUNNER", plan)
            self.assertIn("runs the table on Model Runner V2", plan)
        plan, data = plan_for(self.DEEPSEEK + self.SMALL)
        self.assertIn(f'{{"method": "mtp", "num_speculative_tokens": {data["plan"]["k"]}}}', plan)
        self.check_flags(plan, "vllm mtp")

    def test_sglang_mtp_ngram_and_draft_model(self):
        plan, data = plan_for(self.DEEPSEEK + self.SMALL + ["--engine", "sglang"])
        line, k = flat(plan), data["plan"]["k"]
        self.assertIn(f"--speculative-algorithm EAGLE --speculative-num-steps {k} --speculative-eagle-topk 1 "
                      f"--speculative-num-draft-tokens {k + 1}", line)
        self.assertNotIn("--speculative-draft-model-path", line)               # DeepSeek's own NextN weights
        self.assertNotIn("--quantization fp8", line)                            # its checkpoint ships fp8
        self.check_flags(plan, "sglang mtp")
        plan, data = plan_for(self.SMALL + ["--engine", "sglang", "--draft", "ngram"])
        line = flat(plan)
        self.assertIn(f"--speculative-algorithm NGRAM --speculative-ngram-max-bfs-breadth 1 "
                      f"--speculative-num-draft-tokens {data['plan']['k'] + 1}", line)
        self.assertNotIn("--speculative-num-steps", line)
        self.check_flags(plan, "sglang ngram")
        plan, data = plan_for(self.SMALL + ["--engine", "sglang", "--draft", "llama-3.2-1b"])
        line = flat(plan)
        self.assertIn("--speculative-algorithm STANDALONE --speculative-draft-model-path "
                      "meta-llama/Llama-3.2-1B-Instruct --speculative-draft-model-quantization unquant", line)
        off = [row for row in data["plan"]["schedule"] if row[2] == 0]          # K = 0 rows, routed elsewhere
        self.assertEqual("K is 0" in plan, bool(off))
        self.check_flags(plan, "sglang draft model")

    def test_sglang_tree(self):
        plan, data = plan_for(["--engine", "sglang", "--draft-topk", "4", "--verify-tokens", "8", "--ks", "3",
                               "--acceptance-length", "3.2", "--concurrency", "1,32"])
        self.assertNotIn("a chain of K", plan)
        self.assertIn("The draft is a tree", plan)
        self.assertIn("keeps its static parameters", plan)                      # no --speculative-adaptive advice
        self.assertIn("the 7 tokens a round drafts, reads (tau - 1) / 7 = 0.31", plan)   # accepted / (rounds x 7)
        self.assertIn("--ks 3 --gate", flat(plan))
        self.check_flags(plan, "sglang tree")

    def test_trtllm_mtp_ngram_and_tree(self):
        yaml = lambda plan: re.search(r"cat > spec.yaml <<'YAML'\n(.*?)\nYAML", plan, re.S).group(1)
        plan, data = plan_for(self.DEEPSEEK + self.SMALL + ["--engine", "trtllm"])
        self.assertIn(f"speculative_config:\n  decoding_type: MTP\n  max_draft_len: {data['plan']['k']}", yaml(plan))
        self.assertIn("trtllm-serve deepseek-ai/DeepSeek-V3 ", plan)            # fp8 as it ships
        plan, data = plan_for(self.SMALL + ["--engine", "trtllm", "--draft", "ngram"])
        self.assertIn(f"  decoding_type: NGram\n  max_draft_len: {data['plan']['k']}", yaml(plan))
        self.assertNotIn("speculative_model", yaml(plan))
        plan, _ = plan_for(["--engine", "trtllm", "--draft-topk", "4", "--verify-tokens", "9", "--ks", "3",
                            "--acceptance-length", "3.0", "--concurrency", "1,32"])
        self.assertIn("  use_dynamic_tree: true\n  dynamic_tree_max_topK: 4\n  max_total_draft_tokens: 8", yaml(plan))
        self.check_flags(plan, "trtllm tree")

    def test_trtllm_metrics_and_kill_switch(self):
        plan, data = plan_for(self.SMALL + ["--engine", "trtllm", "--mix", "chat:1:0.7"])
        self.assertIn("return_perf_metrics: true", plan)
        self.assertIn("curl -s localhost:8000/prometheus/metrics > after.prom", plan)
        self.assertIn("sum(rate(trtllm_spec_decode_num_accepted_tokens_total[5m]))", plan)
        gate = next(c for c in shell_commands(plan) if c.startswith("python code/main.py"))
        self.assertIn(f"--metrics after.prom --metrics-before before.prom --ks {data['plan']['k']}", " ".join(gate.split()))
        self.assertNotRegex(gate, r" (TAU|R) ")
        # The window counts iterations (rounds), about ten minutes of them at the run's round time.
        window = int(re.search(r"acceptance_rate_window_size: (\d+)", plan).group(1))
        dep, k = build_deployment(engine="trtllm"), data["plan"]["k"]
        tau = simulation.round_mix(((1.0, 0.7, dep.output_tokens),), k, main.ALPHA_SPREAD)[0]   # the requests' tau, closed form
        round_ms = (1 + costmodel.eps_seen(costmodel.eps_decode(dep, 32, k), tau, dep, 32)) * costmodel.plain_step_ms(dep, 32)
        self.assertAlmostEqual(window, 600_000 / round_ms, delta=50)
        self.assertIn("speculation-enabled iteration", plan)

    def test_commands_stay_within_what_fits(self):
        for engine, flag in (("vllm", "--max-concurrency"), ("sglang", "--max-running-requests")):
            plan, data = plan_for(["--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--tp", "1", "--weights-dtype",
                                   "fp4", "--engine", engine] + self.SMALL[:4] + ["--concurrency", "1,256"])
            fits = data["deployment"]["max_concurrency"]
            self.assertLess(fits, 256)
            used = [int(n) for n in re.findall(flag + r" (\d+)", plan)]
            self.assertTrue(used)
            self.assertLessEqual(max(used), fits, engine)
            self.assertIn(f"every command below runs at {fits}", plan)
            # gpt-oss's public heads, not a placeholder
            self.assertNotIn("YOUR-EAGLE3", plan)

    def test_no_island_in_the_k_table(self):
        _, data = plan_for(["--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--tp", "1", "--weights-dtype", "fp4",
                            "--mix", "chat:1:0.7"] + self.SMALL)
        schedule = data["plan"]["schedule"]
        self.assertEqual(len(paying_ranges(schedule)), 1)       # off below some batch, on above: no K > 0 island
        # Each row's K is within 1% of the best at its ends (K_TIE), the smallest such.
        dep = build_deployment("gpt-oss-120b", "h100-sxm", 1, weights_dtype="fp4", kv_dtype="bf16", context=None, draft="eagle3")
        for lo, hi, k in schedule:
            for b in (lo, hi):
                self.assertEqual(bestk.best_k(dep, 0.7, b)[0], k)

    def test_the_raised_eps_is_explained(self):
        status, text, err = run(["--model", "qwen3-30b-a3b", "--tp", "1", "--verify-overheads", "0.1"] + self.SMALL[:4]
                                + ["--concurrency", "1", "--no-write"])
        self.assertEqual(status, 0, err)
        self.assertIn("(given 0.10, raised: the verify pass over 3 tokens alone", text)

    def test_a_plan_that_cannot_run_prints_no_command(self):
        plan, data = plan_for(["--model", "kimi-k2", "--gpu", "h200", "--tp", "8", "--engine", "sglang"] + self.SMALL)
        self.assertEqual(data["deployment"]["max_concurrency"], 0)
        self.assertIn("## Nothing fits", plan)
        self.assertEqual(shell_commands(plan), [])
        plan, _ = plan_for(["--engine", "sglang", "--draft", "eagle"] + self.SMALL)
        self.assertIn("`--draft eagle3` (a public EAGLE-3 head: `lmsys/SGLang-EAGLE3-Llama-3.3-70B-Instruct-SpecForge`)",
                      plan)
        self.assertIn("## Stages 2 to 4", plan)
        self.assertNotIn("sharegpt_spec_c", plan)          # no file the plan cannot make

    def test_a_trees_rate_is_over_its_drafted_tokens(self):
        plan, _ = plan_for(["--engine", "trtllm", "--draft-topk", "4", "--verify-tokens", "9", "--ks", "3",
                            "--acceptance-length", "3.0", "--concurrency", "1,32"])
        self.assertIn("A round of this tree drafts 8 tokens for 3 steps: accepted over drafted tokens, "
                      "(tau - 1) / 8 = 0.25 at tau 3.00", plan)
        self.assertNotIn("a chain of K", plan)

    def test_next_k_words(self):
        plan, _ = plan_for(["--engine", "sglang", "--acceptance-length", "1.6", "--ks", "1", "--concurrency", "1,32"])
        self.assertIn("the acceptance length at K = 2 against K = 1", plan)


class PlanDetails(unittest.TestCase):
    def test_trtllm_schedule_keys_are_each_tiers_last_batch(self):
        plan, data = plan_for(["--engine", "trtllm", "--mix", "chat:1:0.7"])
        on = [row for row in data["plan"]["schedule"] if row[2] > 0]
        expected = "{" + ", ".join(f"{hi}: {k}" for _, hi, k in on) + "}"
        self.assertIn(f"`draft_len_schedule: {expected}` (with `max_draft_len: {on[0][2]}`)", plan)
        # The first tier's K at alpha 0.70 is the shortest draft within 1% of the best at B = 1, counted here.
        dep = build_deployment(engine="trtllm")
        speedup = {k: costmodel.tpot_speedup(dep, 1, 1 / acceptance.acceptance_length(0.7, k), costmodel.round_ms(dep, 1, k))
                   for k in range(1, 9)}
        self.assertEqual(on[0][2], min(k for k in speedup if speedup[k] >= max(speedup.values()) / 1.01), expected)

    def test_trtllm_kill_switch_warns_where_a_longer_k_shows_a_lower_rate(self):
        # bf16 70B over 8 A100s: at B = 512 a round breaks even at a rate over K = 4's at alpha 0.70
        plan, data = plan_for(["--engine", "trtllm", "--gpu", "a100-sxm-80gb", "--weights-dtype", "bf16", "--tp", "8",
                               "--concurrency", "1,512", "--mix", "chat:1:0.7"])
        rate_k4 = (0.7 + 0.7 ** 2 + 0.7 ** 3 + 0.7 ** 4) / 4                # 0.443, by hand
        self.assertLess(rate_k4, data["plan"]["gate_rate"])
        self.assertIn(f"K = 4 shows a rate of {rate_k4:.3f}", plan)

    def test_sglang_adaptive_text_names_the_tables_ks(self):
        plan, data = plan_for(["--engine", "sglang"])
        # SGLang's default candidates {1: 1,3,5,7; 8: 0,1,3; 32: 0,1; 64: 0} against the table's Ks.
        schedule = data["plan"]["schedule"]
        ks = sorted({row[2] for row in schedule})
        from_64 = sorted({k for lo, hi, k in schedule if hi >= 64 and k > 0}, reverse=True)   # on where it is off
        untried = [k for k in ks if k not in (0, 1, 3, 5, 7)]
        self.assertTrue(from_64)
        self.assertIn(f"they turn speculation off from batch 64, where this table still runs K = "
                      f"{', '.join(map(str, from_64))}; they never try K = {', '.join(map(str, untried))}.", plan)
        # the variable on every speculative server and on none other (stage 1's, and the SLO section's at its K)
        speculative = [c for c in shell_commands(plan) if "sglang.launch_server" in c and "--speculative-algorithm" in c]
        self.assertTrue(speculative)
        self.assertEqual(plan.count("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python -m sglang.launch_server"),
                         len(speculative))
        next_steps = plan.split("## What to measure next")[1]
        self.assertNotIn("per-position rates:", next_steps)                  # SGLang exports none

    def test_front_table_when_the_measured_k_is_not_the_best(self):
        plan, data = plan_for(["--engine", "sglang", "--acceptance-length", "2.0", "--ks", "3", "--concurrency",
                               "1,32"])
        self.assertIn("measured", data)                                     # one length at one K is a measurement
        self.assertEqual(data["plan"]["k"], 3)
        best = data["plan"]["k_target"]
        self.assertNotIn(best, (0, 3))
        self.assertIn(f"| K | 3, the K measured; at B=32 and alpha {data['plan']['alpha']:.2f} the best is "
                      f"K = {best},", plan)

    def test_no_command_serves_a_head_that_does_not_exist(self):
        for engine in ("vllm", "sglang"):
            plan, _ = plan_for(["--engine", engine, "--draft", "eagle"])     # no public EAGLE-1 head in the catalog
            self.assertNotIn("YOUR-", plan)
            self.assertIn("**No head to serve yet.**", plan)
            self.assertIn("specforge train", plan)
            self.assertFalse([c for c in shell_commands(plan) if "speculative" in c], engine)

    def test_trtllm_budget_never_exceeds_the_gpus(self):
        _, data = plan_for(["--engine", "trtllm", "--model", "llama-3.1-405b", "--tp", "1", "--weights-dtype", "bf16"])
        dep = data["deployment"]
        self.assertLessEqual(dep["memory_budget_bytes"], 80 * 2 ** 30)
        self.assertEqual(dep["max_concurrency"], 0)


class Heads(unittest.TestCase):
    def test_context_past_training_is_warned(self):
        plan, data = plan_for(["--engine", "trtllm", "--context", "4096"])
        self.assertEqual(data["deployment"]["draft_trained_context"], 2048)
        self.assertIn("**Warning:** `yuhuili/EAGLE3-LLaMA3.3-Instruct-70B` was trained at 2048 tokens", plan)
        plan, _ = plan_for(["--engine", "trtllm", "--context", "2048"])
        self.assertNotIn("**Warning:**", plan)

    def test_draft_model_overrides_the_catalog(self):
        plan, data = plan_for(["--draft-model", "my-org/my-eagle3-head"])
        self.assertEqual(data["deployment"]["draft_model"], "my-org/my-eagle3-head")
        self.assertIn('"model": "my-org/my-eagle3-head"', plan)
        self.assertNotIn("RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3", plan)


class BadEngineInput(unittest.TestCase):
    CASES = [
        (["--engine", "tgi"], "--engine", "vllm, sglang, trtllm"),
        (["--engine", "trtllm", "--draft", "eagle"], "--draft", "EAGLE-1"),
        (["--engine-version", "0.14", "--draft", "llama-3.2-1b"], "--engine-version", "it needs 0.15.0 (PR #24322"),
        (["--draft-topk", "4", "--verify-tokens", "8", "--ks", "3", "--acceptance-length", "3"], "--draft-topk",
         "PR #42121"),
        (["--draft-model", "has;semicolon"], "--draft-model", "'has;semicolon'"),
        (["--draft", "ngram", "--draft-model", "x/y"], "--draft-model", "n-gram"),
    ]

    def test_exit_2_with_one_line_naming_the_flag(self):
        for argv, flag, detail in self.CASES:
            with self.subTest(argv=argv):
                status, out, err = run(argv + ["--no-write"])
                self.assertEqual(status, 2)
                self.assertEqual(out, "")
                self.assertEqual(len(err.strip().splitlines()), 1)
                self.assertIn(flag, err)
                self.assertIn(detail, err)


class MoeKernels(unittest.TestCase):
    def test_each_engines_moe_layer_cost_is_what_its_kernel_sweeps_leave_over(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location("eagle3_moe_kernels", ROOT / "bench" / "moe_kernels.py")
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
        self.assertEqual(bench.engine_fixed_us(bench.load()), catalog.MOE_KERNEL_US)
        self.assertEqual({key: e.moe_layer_us for key, e in catalog.ENGINES.items() if key in catalog.MOE_KERNEL_US},
                         catalog.MOE_KERNEL_US)

    def test_a_moe_pass_pays_its_kernels_latency_once_per_moe_layer(self):
        # Qwen3-30B-A3B, 48 layers, every one MoE: each pays layer_us less its MLP's share (the fused kernel runs in
        # its place) plus the kernel's own latency. By hand at a share of 0.5: 48 x (28 x 0.5 + 37.4) us on SGLang.
        fit = costmodel.FIT._replace(layer_us=28.0, mlp_fixed_share=0.5)
        for engine in ("vllm", "sglang", "trtllm"):
            dep = build_deployment("qwen3-30b-a3b", "h100-sxm", 1, weights_dtype="fp8", kv_dtype="bf16", context=1024, draft="ngram", engine=engine)
            parts = costmodel.pass_parts(dep.target, dep, 8, 1, 0.0, fit)
            self.assertAlmostEqual(parts["fixed"], 48 * (14.0 + catalog.MOE_KERNEL_US[engine]) / 1e3, places=12)
        self.assertAlmostEqual(48 * (14.0 + catalog.MOE_KERNEL_US["sglang"]) / 1e3, 2.4672, places=12)
        dense = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1024, draft="ngram")
        self.assertAlmostEqual(costmodel.pass_parts(dense.target, dense, 8, 1, 0.0, fit)["fixed"], 32 * 28.0 / 1e3,
                               places=12)   # a dense model pays its layers' whole fixed cost


if __name__ == "__main__":
    unittest.main()


class EngineTables(unittest.TestCase):
    """Engine knowledge lives in two tables (ENGINES, ENGINE_PLANS): code asks them, not the engine's name."""

    def test_both_tables_have_a_row_for_every_engine(self):
        self.assertEqual(list(catalog.ENGINES), list(commands.ENGINE_PLANS))
        for key, engine in catalog.ENGINES.items():
            self.assertEqual(engine.key, key)
            for name in (engine.pass_cost_of, engine.draft_costs_of):   # the Fit fields its costs come from
                self.assertIn(f"pass_fixed_ms_{name}" if name == engine.pass_cost_of else f"draft_fixed_ms_{name}",
                              costmodel.Fit._fields)

    def test_a_fourth_engine_is_two_rows(self):
        """A copy of vLLM's rows under another key (as long as its own, so lines wrap alike), with vLLM's published
        errors, writes vLLM's plan, word for word but for the key: no branch on the name gives it another engine's text (a bare `else` would
        have given it TensorRT-LLM's)."""
        out = Path(tempfile.gettempdir()) / "eagle3-fourth-engine-plan.md"   # computed, never written
        argv = ["--draft-model", "RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3", "--concurrency", "1,32",
                "--alphas", "0.6,0.7", "--out", str(out)]
        vllm_plan = main.stages(argv).files[out]
        catalog.ENGINES["vlm4"] = dataclasses.replace(catalog.ENGINES["vllm"], key="vlm4")
        commands.ENGINE_PLANS["vlm4"] = commands.ENGINE_PLANS["vllm"]
        # and vLLM's published errors as its own, as bench/intervals.py would print them had vLLM's runs its name
        saved, rows = dict(trust.MODEL_ERROR), list(trust.HELD_OUT)
        renamed = {key[:2] + ("vlm4" if key[2] == "vllm" else key[2],) + key[3:]: value for key, value in saved.items()}
        trust.MODEL_ERROR.clear()
        trust.MODEL_ERROR.update(renamed)
        trust.HELD_OUT[:] = [dict(r, engine="vlm4") if r["engine"] == "vllm" else r for r in rows]
        try:
            fourth_plan = main.stages(argv + ["--engine", "vlm4"]).files[out]
        finally:
            del catalog.ENGINES["vlm4"], commands.ENGINE_PLANS["vlm4"]
            trust.MODEL_ERROR.clear()
            trust.MODEL_ERROR.update(saved)
            trust.HELD_OUT[:] = rows
        self.assertIn("--engine vlm4", fourth_plan)
        self.assertEqual(fourth_plan.replace("vlm4", "vllm"), vllm_plan)

    def test_an_engine_without_a_row_is_refused_by_name(self):
        status, _, err = run(["--engine", "tgi", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("--engine: unknown 'tgi'; valid: vllm, sglang, trtllm", err)
