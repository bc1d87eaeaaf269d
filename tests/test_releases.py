"""Every command and config the plan prints, for an engine's newest release and an older one, against what that
release's own parsers accept: tests/fixtures/engine_releases.json, read from each release's package by
bench/engine_flags.py (vLLM, SGLang) or by hand from its llm_args.py and serve.py (TensorRT-LLM), never from this
program's output. And the refusals each release makes at start-up, made here with the engine's own reason."""
import functools
import json
import re
import tempfile
import unittest
from pathlib import Path

from support import ROOT, build_deployment, run

from rollout import catalog, releases

RELEASES = json.loads((ROOT / "tests" / "fixtures" / "engine_releases.json").read_text())
NEWEST_VLLM_CLIENT = RELEASES["vllm"][catalog.release_text(releases.NEWEST["vllm"])]["parsed by vllm bench serve"]
SMALL = ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,32"]
DEEPSEEK = ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--draft", "mtp"]
MOE = ["--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--tp", "4", "--ep", "4", "--dp-attention"]
EIGHT_B = ["--model", "llama-3.1-8b", "--tp", "1"]
# Deployments covering every draft kind, MoE with expert parallelism and attention data parallelism, and trees.
VARIANTS = {
    "vllm": [[], EIGHT_B + ["--draft", "eagle"], ["--draft", "ngram"], ["--draft", "llama-3.2-1b"], DEEPSEEK,
             MOE + ["--draft", "eagle3"], DEEPSEEK + ["--ep", "8", "--dp-attention"]],
    "sglang": [[], EIGHT_B + ["--draft", "eagle"], ["--draft", "ngram"], ["--draft", "llama-3.2-1b"], DEEPSEEK,
               MOE + ["--draft", "eagle3"], DEEPSEEK + ["--ep", "8", "--dp-attention"],
               EIGHT_B + ["--draft", "eagle3", "--draft-topk", "4", "--verify-tokens", "8", "--acceptance-length", "3"]],
    "trtllm": [[], ["--draft", "ngram"], ["--draft", "llama-3.2-1b"], DEEPSEEK, MOE + ["--draft", "eagle3"],
               EIGHT_B + ["--draft", "eagle3", "--draft-topk", "2", "--verify-tokens", "6", "--acceptance-length", "3"]],
}
# What a release refuses, by variant index: the flag the refusal names and words of it.
REFUSED = {("vllm", "0.10.0", 3): ("--engine-version", "it needs 0.15.0"),
           ("vllm", "0.10.0", 4): ("--engine-version", "it needs 0.11.0"),
           ("vllm", "0.10.0", 5): ("--engine-version", "runs no EAGLE-3 head for qwen3-30b-a3b: from 0.11.1"),
           ("vllm", "0.10.0", 6): ("--engine-version", "it needs 0.11.0"),
           ("trtllm", "1.1.0", 5): ("--engine-version", "its trees run from 1.3.0"),
           # 0.8.0 and 0.8.1 take --speculative-model and --num-speculative-tokens, not the plan's --speculative-config
           **{("vllm", "0.8.0", i): ("--engine-version", "takes no --speculative-config") for i in range(7)},
           **{("vllm", "0.8.2", i): ("--engine-version", words) for i, words in (
               (0, "it needs 0.8.5"), (3, "it needs 0.15.0"), (4, "it needs 0.11.0"), (5, "it needs 0.8.5"),
               (6, "it needs 0.11.0"))},
           # before 0.10: no draft models (0.15), no MTP (0.11), no EAGLE-3 for Qwen MoE (0.11.1)
           **{("vllm", release, i): ("--engine-version", words) for release in ("0.8.5", "0.9.0", "0.9.1", "0.9.2")
              for i, words in ((3, "it needs 0.15.0"), (4, "it needs 0.11.0"),
                               (5, "runs no EAGLE-3 head for qwen3-30b-a3b: from 0.11.1"), (6, "it needs 0.11.0"))},
           # SGLang: NGRAM from 0.5.3, STANDALONE (a draft model) from 0.5.2
           **{("sglang", release, 2): ("--engine-version", "it needs 0.5.3") for release in ("0.4.10", "0.5.1", "0.5.2")},
           **{("sglang", release, 3): ("--engine-version", "it needs 0.5.2") for release in ("0.4.10", "0.5.1")}}


def plan_of(engine, release, extra):
    """(exit status, plan text or the error line) of one run at a release; each computed once for the module (a run
    is deterministic, and the cases below ask for some of the variants' plans again)."""
    return planned(engine, catalog.release_text(catalog.release_of(release)), tuple(extra))   # 1.1 is 1.1.0


@functools.lru_cache(maxsize=None)
def planned(engine, release, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.md"
        small = SMALL[2:] if "--acceptance-length" in extra else SMALL   # a tree's acceptance is measured
        status, _, err = run(["--engine", engine, "--engine-version", release] + small + list(extra)
                             + ["--out", str(out)])
        return status, (out.read_text() if status == 0 else err)


def commands(plan):
    """The shell commands of the plan's unlabelled code blocks (continuations joined) and its YAML: the heredocs,
    and the ```yaml fragments that add keys to speculative_config (their lines indented as its keys are) under a
    speculative_config line of their own."""
    shell, yaml, inside, label, heredoc = [], [], False, "", None
    for line in plan.splitlines():
        if line.startswith("```"):
            if inside and label == "fragment":   # a fragment ends
                yaml.append(heredoc)
                heredoc = None
            inside, label = not inside, line[3:]
            if inside and label == "yaml":
                heredoc, label = ["speculative_config:"], "fragment"
            continue
        if inside and label == "fragment":
            if line.startswith("- alert") or (heredoc and heredoc[0] is None):
                heredoc = [None]   # a Prometheus rule, not TensorRT-LLM's YAML
            elif heredoc[0] is not None:
                heredoc.append(line)
            continue
        if not inside or label != "":
            continue
        if heredoc is not None:
            if line == "YAML":
                yaml.append(heredoc)
                heredoc = None
            else:
                heredoc.append(line)
        elif line.startswith("cat > ") and line.endswith("<<'YAML'"):
            heredoc = []
        elif label == "":
            shell.append(line)
    text = "\n".join(shell).replace(" \\\n", " ")
    return [c for c in text.splitlines() if c and not c.startswith(("#", " "))], yaml


def yaml_keys(lines):
    """(top-level keys, {block: its keys}) of the plan's two-level YAML."""
    top, nested, block = set(), {}, None
    for line in lines:
        key = line.strip().split(":")[0]
        if line.startswith("  "):
            nested.setdefault(block, set()).add(key)
        else:
            top.add(key)
            block = key
    return top, nested


def matrix(everything):
    """(engine, release, variant index, its flags) of the release matrix: everything, or this tier's share of it:
    every release's default deployment, every variant at the newest vLLM (the default engine), and every refusal.
    The rest (the variants at the other releases) runs in the slow tier, tests/slow_releases.py."""
    for engine, covered in RELEASES.items():
        newest = catalog.release_text(releases.NEWEST[engine])
        for release in covered:
            for i, extra in enumerate(VARIANTS[engine]):
                if (everything or i == 0 or (engine == "vllm" and release == newest)
                        or (engine, release, i) in REFUSED):
                    yield engine, release, i, extra


class CommandSyntax:
    """The check of one plan's commands and YAML against its release's parsers (a mixin of the fast and slow
    tiers' tests)."""

    def each(self, cases):
        for engine, release, i, extra in cases:
            label = f"{engine} {release} {' '.join(extra) or 'default'}"
            with self.subTest(label=label):
                status, text = plan_of(engine, release, extra)
                if (engine, release, i) in REFUSED:
                    flag, words = REFUSED[engine, release, i]
                    self.assertEqual(status, 2, label)
                    self.assertTrue(text.startswith(f"main.py: error: {flag}: "), text)
                    self.assertIn(words, text)
                    continue
                self.assertEqual(status, 0, f"{label}: {text}")
                self.check(engine, release, text, label)

    def check(self, engine, release, plan, label):
        table = RELEASES[engine][release]
        shell, yaml = commands(plan)
        table = dict(table)
        if "parsed by vllm bench serve" in table:   # what serve.py's own parser defines, not every flag literal of
            table["vllm bench serve"] = table["parsed by vllm bench serve"]   # vllm/benchmarks/ (throughput.py's)
        if engine == "sglang":   # its plan benchmarks with vLLM's newest client
            table["vllm bench serve"] = NEWEST_VLLM_CLIENT
        tools = [t for t in table if t.startswith(("vllm", "python -m", "trtllm-serve", "python benchmarks"))
                 and isinstance(table[t], list)]
        facts = table.get("benchmark facts", {})
        seen = 0
        for command in shell:
            env = re.findall(r"^((?:[A-Z0-9_]+=\S+ )+)", command)
            command = command[len(env[0]):] if env else command
            tool = max((t for t in tools if command.startswith(t + " ")), key=len, default=None)
            if tool is None:
                continue
            seen += 1
            quoted = command.split("'")
            flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9_-]*", " ".join(quoted[0::2])))
            self.assertLessEqual(flags, set(table[tool]), f"{label}: {command}")
            for flag, choices in facts.get(tool, {}).get("choices", {}).items():   # each value among its choices
                value = re.search(re.escape(flag) + r" (\S+)", command)
                if value:
                    self.assertIn(value.group(1), choices, f"{label}: {command}")
            for name in re.findall(r"([A-Z0-9_]+)=", env[0] if env else ""):
                self.assertIn(name, table["environment"], label)
            if "--speculative-config" in command:
                config = json.loads(quoted[1])
                self.assertLessEqual(set(config), set(table["--speculative-config keys"]), label)
                self.assertIn(config["method"], table["--speculative-config methods"], label)
            algorithm = re.search(r"--speculative-algorithm (\S+)", command)
            if algorithm:
                self.assertIn(algorithm.group(1), table["--speculative-algorithm values"], label)
        self.assertGreaterEqual(seen, 3, label)
        for lines in yaml:
            if lines[0] is None:
                continue
            top, nested = yaml_keys(lines)
            self.assertLessEqual(top, set(table["YAML keys"]), label)
            self.assertLessEqual(nested.get("speculative_config", set()), set(table["speculative_config keys"]), label)
            self.assertLessEqual(nested.get("kv_cache_config", set()), set(table["kv_cache_config keys"]), label)
            decoding = [line.split(":")[1].strip() for line in lines if line.strip().startswith("decoding_type:")]
            self.assertLessEqual(set(decoding), set(table["decoding_type values"]), label)


class EachReleasesOwnSyntax(CommandSyntax, unittest.TestCase):

    def test_every_release_and_every_variant_at_the_newest_vllm(self):
        self.each(matrix(everything=False))

    def test_a_feature_ends_the_release_it_is_gone(self):
        # `until` is the first release without it: VLLM_USE_V2_MODEL_RUNNER=0 stops 0.34.0; SGLang's switch is
        # rewritten from 0.5.22; speculative_model_dir gives way in 1.2.0; a dev build of 0.34 is still 0.33's.
        from dataclasses import replace
        for engine, key, last, gone in (("vllm", "VLLM_USE_V2_MODEL_RUNNER=0", (0, 33, 9), (0, 34, 0)),
                                        ("sglang", "--enable-dp-attention", (0, 5, 21), (0, 5, 22)),
                                        ("trtllm", "speculative_model_dir", (1, 1, 0), (1, 2, 0)),
                                        ("vllm", "VLLM_USE_V2_MODEL_RUNNER=0", catalog.release_of("0.34.0.dev3"),
                                         (0, 34, 1))):
            dep = build_deployment(engine=engine)
            self.assertTrue(releases.accepts(replace(dep, release=last), key), (engine, key, last))
            self.assertFalse(releases.accepts(replace(dep, release=gone), key), (engine, key, gone))
        with self.assertRaises(KeyError):   # a key no engine has is a typo, not a feature every release takes
            releases.accepts(build_deployment(), "--speculative-confg")

    def test_a_release_outside_those_checked_is_said_so(self):
        for release, words in (("99.0", "| engine | vLLM 99.0.0, newer than 0.34.0, the newest checked: its commands "
                                        "are 0.34.0's |"),
                               ("0.34", "| engine | vLLM 0.34.0: its commands as that release takes them |")):
            status, plan = plan_of("vllm", release, [])
            self.assertEqual(status, 0, plan)
            self.assertIn(words, plan)

    def test_the_newest_release_is_one_the_fixture_covers(self):
        for engine, newest in releases.NEWEST.items():
            self.assertIn(catalog.release_text(newest), RELEASES[engine])


class TheIssuesCases(unittest.TestCase):
    """The twelve cases of the engines-by-release review, each as the engine's source at its release has it."""

    def test_sglang_refuses_ngram_and_a_draft_model_beside_attention_data_parallelism(self):
        for draft, message in (("ngram", "Currently ngram speculative decoding does not support dp attention."),
                               ("qwen3-32b", "Currently standalone speculative decoding does not support dp attention.")):
            status, _, err = run(["--engine", "sglang", "--model", "qwen3-235b-a22b", "--tp", "8", "--ep", "8",
                                  "--dp-attention", "--draft", draft, "--gpu", "h200", "--weights-dtype", "fp8",
                                  "--no-write"])
            self.assertEqual(status, 2)
            self.assertEqual(err.count("\n"), 1)
            self.assertIn('--dp-attention: SGLang 0.5.23 refuses', err)
            self.assertIn(message, err)
        # Before NGRAM existed (0.5.3) the refusal is that it does not.
        status, _, err = run(["--engine", "sglang", "--engine-version", "0.5.2", "--draft", "ngram", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("needs 0.5.3", err)

    def test_trtllm_mtp_depth_by_release(self):
        # Before PR #12341 MTPDecodingConfig sets max_draft_len from num_nextn_predict_layers (default 1), whatever
        # max_draft_len says: the plan's K goes in the key that sets it.
        for release, key, absent in (("1.2", "num_nextn_predict_layers", "max_draft_len"),
                                     ("1.3", "max_draft_len", "num_nextn_predict_layers")):
            status, plan = plan_of("trtllm", release, DEEPSEEK)
            self.assertEqual(status, 0, plan)
            yaml = [y for y in commands(plan)[1] if y[0] is not None and "decoding_type" in " ".join(y)][-1]
            k = re.search(r"K = (\d+)", plan.split("## Stage 1")[1]).group(1)
            self.assertIn(f"  {key}: {k}", yaml)
            self.assertFalse(any(absent in y for y in yaml), yaml)

    def test_sglang_adaptive_steps_only_where_they_run(self):
        _, plan = plan_of("sglang", "0.5.23", MOE + ["--draft", "eagle3"])
        self.assertNotIn("--speculative-adaptive` (EAGLE", plan)
        self.assertIn("SGLang turns `--speculative-adaptive` off under attention data parallelism", plan)
        _, plan = plan_of("sglang", "0.5.4", [])
        self.assertIn("SGLang 0.5.4 has no adaptive step count", plan)
        _, plan = plan_of("sglang", "0.5.23", [])
        self.assertIn("`--speculative-adaptive` (EAGLE and EAGLE3 with topk 1) picks", plan)

    def test_trtllm_serves_a_draft_model(self):
        # 1.1: from_dict's table takes DraftTarget, and speculative_model_dir a local path (the draft is fetched
        # there first); 1.4: the union's tag Draft_Target, and speculative_model a Hugging Face id.
        for release, tag, key, value in (("1.1", "DraftTarget", "speculative_model_dir", "./draft"),
                                         ("1.4", "Draft_Target", "speculative_model", "meta-llama/Llama-3.2-1B-Instruct")):
            status, plan = plan_of("trtllm", release, ["--draft", "llama-3.2-1b"])
            self.assertEqual(status, 0, plan)
            yaml = [y for y in commands(plan)[1] if y[0] is not None and "decoding_type" in " ".join(y)][-1]
            self.assertIn(f"  decoding_type: {tag}", yaml)
            self.assertIn(f'  {key}: "{value}"', yaml)
            self.assertEqual("huggingface-cli download meta-llama/Llama-3.2-1B-Instruct --local-dir ./draft" in plan,
                             release == "1.1")

    def test_vllm_syntax_by_release(self):
        _, old = plan_of("vllm", "0.10", [])
        self.assertNotIn("draft_sample_method", old)
        self.assertNotIn("num_speculative_tokens_per_batch_size\": [", old)
        self.assertNotIn("VLLM_USE_V2_MODEL_RUNNER", old)
        self.assertIn("vLLM 0.10.0 has no K-by-batch table", old)
        self.assertIn("--endpoint-type openai-chat", old)
        # 0.10.0 loads no speculators-format head (PR #21345, 0.10.1): the EAGLE-format one of the same target.
        self.assertIn('"model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"', old)
        self.assertNotIn("speculator.eagle3", old)
        _, mid = plan_of("vllm", "0.31", [])
        self.assertIn("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve", mid)
        _, v2 = plan_of("vllm", "0.32", [])   # V2 runs the table from 0.32: no need to force V1
        self.assertNotIn("VLLM_USE_V2_MODEL_RUNNER=0", v2)
        _, new = plan_of("vllm", "0.34", [])
        self.assertNotIn("VLLM_USE_V2_MODEL_RUNNER=0", new)   # V1 is gone: the variable at 0 stops the server
        self.assertIn("runs the table on Model Runner V2", new)
        status, _, err = run(["--engine", "vllm", "--engine-version", "0.8.2", "--draft", "eagle3", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("it needs 0.8.5 (PR #16937", err)
        # deepseek_mtp's rounds past K = 1 asserted FlashAttention metadata on MLA before 0.11: MTP from 0.11.
        status, plan = plan_of("vllm", "0.10", DEEPSEEK)
        self.assertEqual(status, 2)
        self.assertIn("it needs 0.11.0 (PR #25232", plan)
        # EAGLE-3 for a Qwen3 MoE target from 0.11.1 ("Eagle3 is only supported for Llama models" in 0.10.0).
        status, plan = plan_of("vllm", "0.10", MOE + ["--draft", "eagle3"])
        self.assertEqual(status, 2)
        self.assertIn("runs no EAGLE-3 head for qwen3-30b-a3b: from 0.11.1", plan)

    def test_an_eagle_head_for_llama_3_1_8b(self):
        for engine, head in (("vllm", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"),
                             ("sglang", "lmsys/sglang-EAGLE-LLaMA3-Instruct-8B")):
            status, plan = plan_of(engine, catalog.release_text(releases.NEWEST[engine]), EIGHT_B + ["--draft", "eagle"])
            self.assertEqual(status, 0, plan)
            self.assertNotIn("No head to serve yet", plan)
            self.assertIn(head, plan)

    def test_trtllm_before_1_0_is_refused_for_the_keys_it_lacks(self):
        status, _, err = run(["--engine", "trtllm", "--engine-version", "0.21", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("kv_cache_config and return_perf_metrics, both from 1.0", err)

    def test_a_refused_measurement_offers_the_whole_served_name(self):
        # A scrape of another model: the --served-model the refusal offers is the name whole, shell-quoted, so it can be
        # copied (it was cut at 60 characters).
        name = "org/a-very-long-served-model-name-for-llama-3.3-70b-instruct-fp8-tp4-final"
        scrape = (ROOT / "tests" / "fixtures" / "metrics_after.prom").read_text().replace(
            "meta-llama/Llama-3.3-70B-Instruct", name)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "after.prom"
            path.write_text(scrape)
            status, _, err = run(["--metrics", str(path), "--ks", "3", "--no-write"])
        self.assertEqual(status, 2)
        self.assertEqual(err.count("\n"), 1)
        self.assertTrue(err.rstrip().endswith(f"--served-model={name}"), err)   # the = form: a name may begin with -

    def test_mtp_trees_on_trtllm_name_the_reason(self):
        status, _, err = run(["--engine", "trtllm"] + DEEPSEEK + ["--draft-topk", "2", "--verify-tokens", "5",
                                                                  "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("not for MLA models such as DeepSeek's", err)


if __name__ == "__main__":
    unittest.main()
