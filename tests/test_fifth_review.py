"""The fifth review's engine findings, each against the release's own flags and keys (tests/fixtures/
engine_releases.json, read from its package by bench/engine_flags.py), and the fifth hostile round's inputs, each
refused in one line with nothing written."""
import json
import os
import re
import tempfile
import unittest
from pathlib import Path

from support import ROOT, build_deployment, run

from rollout import catalog, commands, releases

RELEASES = json.loads((ROOT / "tests" / "fixtures" / "engine_releases.json").read_text())
FIX = ROOT / "tests" / "fixtures"
SMALL = ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,32"]
EIGHT_B = ["--model", "llama-3.1-8b", "--tp", "1"]


def plan_at(engine, release, extra=()):
    """(exit status, the plan or the error line) of one run at a release."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.md"
        status, _, err = run(["--engine", engine, "--engine-version", release] + SMALL + list(extra)
                             + ["--out", str(out)])
        return status, (out.read_text() if status == 0 else err)


def benchmark_lines(plan):
    """The plan's benchmark command lines, continuations joined."""
    joined = re.sub(r" \\\n\s*", " ", plan)
    return [line for line in joined.splitlines()
            if line.startswith(("vllm bench serve ", "python benchmarks/benchmark_serving.py "))]


class VllmBenchmarkByRelease(unittest.TestCase):
    def test_before_0_9_2_the_plan_benchmarks_with_the_source_trees_script(self):
        # 0.9.1's `vllm bench serve` defines --endpoint-type but no --backend (its serve.py parser, as recorded), and
        # reads args.backend when a sampling flag is given: the plan runs benchmarks/benchmark_serving.py there.
        self.assertNotIn("--backend", RELEASES["vllm"]["0.9.1"]["parsed by vllm bench serve"])
        self.assertIn("--backend", RELEASES["vllm"]["0.9.2"]["parsed by vllm bench serve"])
        for release, sampled in (("0.8.2", False), ("0.8.5", True), ("0.9.1", True)):
            with self.subTest(release=release):
                status, plan = plan_at("vllm", release, EIGHT_B + ["--draft", "eagle"])
                self.assertEqual(status, 0, plan)
                lines = benchmark_lines(plan)
                self.assertTrue(lines)
                script = RELEASES["vllm"][release]["python benchmarks/benchmark_serving.py"]
                facts = RELEASES["vllm"][release]["benchmark facts"]["python benchmarks/benchmark_serving.py"]
                for line in lines:
                    self.assertTrue(line.startswith("python benchmarks/benchmark_serving.py "), line)
                    self.assertLessEqual(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9_-]*", line)), set(script), line)
                    self.assertIn(re.search(r"--backend (\S+)", line).group(1), facts["choices"]["--backend"])
                    self.assertEqual("--temperature" in line, sampled, line)
                    self.assertEqual("--temperature" in script, sampled)   # the script itself, as read
                self.assertIn(f"from vLLM {release}'s source tree", plan)
                self.assertEqual("these runs decode greedily" in plan, not sampled)
        status, plan = plan_at("vllm", "0.9.2", EIGHT_B + ["--draft", "eagle"])
        self.assertTrue(all(line.startswith("vllm bench serve --endpoint-type openai-chat") and "--temperature 0.7"
                            in line for line in benchmark_lines(plan)))

    def test_0_8_0_and_0_8_1_take_no_speculative_config(self):
        self.assertNotIn("--speculative-config", RELEASES["vllm"]["0.8.0"]["vllm serve"])
        self.assertIn("--speculative-config", RELEASES["vllm"]["0.8.2"]["vllm serve"])
        status, err = plan_at("vllm", "0.8.1", ["--draft", "ngram"])
        self.assertEqual(status, 2)
        self.assertIn("vLLM 0.8.1 takes no --speculative-config", err)

    def test_the_goodput_key_by_release(self):
        for release, key in (("0.8.5", "request_goodput:"), ("0.9.1", "request_goodput:"), ("0.9.2", "request_goodput")):
            facts = RELEASES["vllm"][release]["benchmark facts"]
            self.assertEqual(facts["python benchmarks/benchmark_serving.py"]["goodput result key"]["key"], key)
            dep = build_deployment(engine="vllm")
            from dataclasses import replace
            from rollout import workload
            self.assertEqual(workload.goodput_key(replace(dep, release=catalog.release_of(release))), key)


class SglangRateGauge(unittest.TestCase):
    def test_the_rate_gauge_is_printed_only_where_the_release_exports_it(self):
        for release, table in RELEASES["sglang"].items():
            with self.subTest(release=release):
                status, plan = plan_at("sglang", release)
                self.assertEqual(status, 0, plan)
                exported = "sglang:spec_accept_rate" in table["Prometheus speculative metrics"]
                self.assertEqual("avg_over_time(sglang:spec_accept_rate" in plan, exported)
                self.assertIn("sglang:spec_accept_length", table["Prometheus speculative metrics"])

    def test_the_divisor_by_release_and_draft(self):
        # What each release's own code divides by (the fixture holds that code), against what the plan says the gauge
        # reads at tau: a tree at 0.5.10 divides by --speculative-num-draft-tokens, n-gram at 0.5.4 by the unset steps
        # plus one (1), a chain from 0.5.11 by the tokens it drafts.
        code = {r: " ".join((RELEASES["sglang"][r]["spec_accept_rate computed"] or {}).get("code", []))
                for r in ("0.5.4", "0.5.10", "0.5.23")}
        self.assertIn("(self.server_args.speculative_num_steps or 0) + 1", code["0.5.4"])
        self.assertIn("self.server_args.speculative_num_draft_tokens or draft_tokens_fallback", code["0.5.10"])
        tree = ["--draft-topk", "4", "--verify-tokens", "8", "--acceptance-length", "3.0"]
        for release, extra, words in (
                ("0.5.10", EIGHT_B + ["--draft", "eagle3"] + tree, "it reads tau / 8 (the tokens a round verifies"),
                ("0.5.4", ["--draft", "ngram"], "it reads tau / 1 (n-gram sets no steps"),
                ("0.5.4", [], "it reads tau / 4 (the steps plus one)"),
                ("0.5.23", [], "reads (tau - 1) / 3 = ")):
            with self.subTest(release=release, extra=extra):
                argv = SMALL[2:] if "--acceptance-length" in extra else []
                with tempfile.TemporaryDirectory() as tmp:
                    out = Path(tmp) / "plan.md"
                    status, _, err = run(["--engine", "sglang", "--engine-version", release] + (argv or SMALL)
                                         + extra + ["--out", str(out), "--mix", "chat:1:0.7"])
                    self.assertEqual(status, 0, err)
                    plan = " ".join(out.read_text().split())
                self.assertIn(words, plan)

    def test_the_new_rate_starts_at_0_5_11(self):
        dep = build_deployment(engine="sglang")
        from dataclasses import replace
        at = lambda r: replace(dep, release=catalog.release_of(r))
        self.assertEqual([releases.sglang_rate_kind(at(r)) for r in ("0.5.3", "0.5.4", "0.5.10", "0.5.11")],
                         [None, "verified", "verified", "drafted"])
        self.assertEqual(releases.sglang_rate(at("0.5.10"), 3), (True, 4))   # tau / N, N = K + 1 for a chain
        self.assertEqual(releases.sglang_rate(at("0.5.11"), 3), (False, 3))


class ReleaseStrings(unittest.TestCase):
    def test_what_the_engines_publish_is_read_and_ordered(self):
        ordered = ["1.2.0.dev3", "1.2.0rc1", "1.2.0rc6.post3", "1.2.0", "1.2.0.post1", "1.2.1"]
        self.assertEqual(sorted(ordered, key=catalog.release_of), ordered)
        for text, shown in (("0.5.10.post1", "0.5.10.post1"), ("0.11.0rc2", "0.11.0rc2"), ("v0.14.0rc1", "0.14.0rc1"),
                            ("0.9.0.1", "0.9.0.1"), ("0.9.2+cu126", "0.9.2+cu126"), ("0.14", "0.14.0")):
            self.assertEqual(catalog.release_text(catalog.release_of(text)), shown)
        # a pre-release lacks what its release brings: 0.9.2rc1 still runs the source tree's script
        dep = build_deployment()
        from dataclasses import replace
        self.assertEqual(commands.bench_tool(replace(dep, release=catalog.release_of("0.9.2rc1"))),
                         commands.LEGACY_CLIENT)
        self.assertEqual(commands.bench_tool(replace(dep, release=catalog.release_of("0.9.2.post1"))), "vllm bench serve")

    def test_the_rest_is_refused_in_one_line(self):
        for text in ("0.5.x", "0.34.0+www.example", "1", "latest", "0.5.10.post1+evil"):
            with self.subTest(text=text):
                status, out, err = run(["--engine-version", text, "--no-write"])
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(len(err.splitlines()), 1)
                self.assertIn("--engine-version: a release as vLLM publishes it", err)


class FifthHostileRound(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def file(self, name, base, **changes):
        data = dict(json.loads((FIX / base).read_text()), **changes)
        for key in [k for k, v in changes.items() if v is None]:
            del data[key]
        path = self.dir / name
        path.write_text(json.dumps(data))
        return str(path)

    def refused(self, argv, needle):
        out = self.dir / "out"
        out.mkdir(exist_ok=True)
        status, text, err = run(argv + ["--out", str(out / "plan.md")])
        self.assertEqual((status, text), (2, ""), err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn(needle, err)
        self.assertEqual(os.listdir(out), [])

    def test_an_acceptance_length_past_its_counts(self):
        spec = self.file("spec.json", "bench_spec.json", spec_decode_acceptance_length=9.0)
        self.refused(["--bench-baseline", str(FIX / "bench_baseline.json"), "--bench-spec", spec],
                     "spec_decode_acceptance_length 9 disagrees with its counts (1 + accepted / drafts = 2.846)")

    def test_num_prompts_is_completed_plus_failed(self):
        base = json.loads((FIX / "bench_baseline.json").read_text())
        spec = self.file("spec.json", "bench_spec.json", num_prompts=10 ** 30, failed=0)
        self.refused(["--compare", spec, "--no-write"], f"completed {base['completed']:,} and failed 0 requests of its "
                                                        f"num_prompts {10 ** 30:,}")

    def test_request_goodput_within_zero_and_the_request_throughput(self):
        base = json.loads((FIX / "bench_baseline.json").read_text())
        for goodput in (-1, 10 * base["request_throughput"], 1e308):
            for key in ("request_goodput", "request_goodput:"):   # vLLM's, and 0.8.0-0.9.1's spelling
                with self.subTest(goodput=goodput, key=key):
                    path = self.file("b.json", "bench_baseline.json", **{key: goodput})
                    self.refused(["--compare", path], "request_goodput is the requests a second that met")

    def test_compare_holds_goodput_against_the_prediction_at_the_slo_given(self):
        base = json.loads((FIX / "bench_baseline.json").read_text())
        path = self.file("b.json", "bench_baseline.json", request_goodput=base["request_throughput"] / 2)
        status, out, err = run(["--compare", path, "--slo", "ttft:2000,tpot:50", "--json", "--no-write"])
        self.assertEqual(status, 0, err)
        rows = {row["key"]: row for row in json.loads(out)["compare"][0]["keys"]}
        self.assertAlmostEqual(rows["request_goodput"]["measured"], base["request_throughput"] / 2, places=6)
        status, out, err = run(["--compare", path, "--json", "--no-write"])   # no --slo: its bounds are unknown
        compared = json.loads(out)["compare"][0]
        self.assertNotIn("request_goodput", {row["key"] for row in compared["keys"]})
        self.assertTrue(any("give them as --slo" in note for note in compared["notes"]))

    def test_out_dash_prints_the_plan_and_writes_nothing(self):
        cwd = os.getcwd()
        try:
            os.chdir(self.dir)
            status, out, err = run(["--out", "-"] + SMALL)
            self.assertEqual((status, err), (0, ""))
            self.assertEqual(os.listdir(self.dir), [])
        finally:
            os.chdir(cwd)
        self.assertTrue(out.startswith("---\nname: eagle3-rollout\n"))
        self.assertNotIn("chart-", out)
        self.assertIn("## Stage 0", out)
        status, out, err = run(["--out", "-", "--json"])
        self.assertEqual((status, out), (2, ""))
        self.assertIn("--out -: writes the plan to standard output", err)


if __name__ == "__main__":
    unittest.main()
