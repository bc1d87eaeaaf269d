"""The measurement readers on the formats real vLLM and SGLang versions write (issue 9's classes, numbered).

Fixture files name their origin and carry it in a comment where the format allows one; the variants
built here from them say what they change.
"""
import json
import tempfile
import unittest
from pathlib import Path

from support import ROOT, run

from rollout import acceptance, analysis, readers, report


FIX = ROOT / "tests" / "fixtures"
AFTER, BEFORE = FIX / "metrics_after.prom", FIX / "metrics_before.prom"
BASE, SPEC = FIX / "bench_baseline.json", FIX / "bench_spec.json"
SMALL = ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,64", "--no-write"]


def measure(argv):
    """(status, --json data or None, stderr) of a run with the small grid."""
    status, out, err = run(SMALL + argv + ["--json"])
    return status, (json.loads(out) if out else None), err


class Files(unittest.TestCase):
    """Variants of the fixtures written to a temporary folder."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def write(self, name, text=None, data=None):
        path = self.dir / name
        if data is not None:
            path.write_bytes(data)
        else:
            path.write_text(text)
        return str(path)

    def refused(self, argv, *needles):
        plan = self.dir / "plan.md"
        status, out, err = run(argv + ["--out", str(plan)])
        self.assertEqual(status, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        for needle in needles:
            self.assertIn(needle, err)
        self.assertFalse(plan.exists())
        return err


class Scrapes(Files):
    def test_1_a_missing_counter_is_not_zero(self):
        text = "\n".join(line for line in AFTER.read_text().splitlines()
                         if not line.startswith("vllm:spec_decode_num_accepted_tokens_total"))
        self.refused(["--metrics", self.write("no_accepted.prom", text)], "vllm:spec_decode_num_accepted_tokens_total",
                     "not zero")

    def test_2_a_broken_profile_is_dropped_and_the_numbers_agree(self):
        # Position 1 of engine 0 raised from 3100 to 6100: positions now rise and no longer sum to accepted.
        text = AFTER.read_text().replace('engine="0",model_name="meta-llama/Llama-3.3-70B-Instruct",position="1"} 3100.0',
                                         'engine="0",model_name="meta-llama/Llama-3.3-70B-Instruct",position="1"} 6100.0')
        self.assertNotEqual(text, AFTER.read_text())
        status, data, err = measure(["--metrics", self.write("broken.prom", text)])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertEqual(ms["per_position_rates"], [])
        self.assertTrue(any("per-position counters dropped" in n for n in ms["notes"]), ms["notes"])
        tau = 1 + 14_700 / 8_000                              # the fixture's totals, summed over engines
        a = ms["alpha"]
        self.assertAlmostEqual(1 + a + a * a + a ** 3, tau, places=5)
        for row in ms["by_concurrency"]:                     # predictions use that same tau
            self.assertAlmostEqual(row["speedup"] * (1 + row["eps"]), tau, places=4)

    def test_2_the_window_difference_is_checked_too(self):
        # Each scrape is consistent, but between them position 1 accepted more than position 0.
        head = "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        def scrape(drafts, accepted, p0, p1):
            return head + "".join(f"{name} {value}\n" for name, value in (
                ("vllm:spec_decode_num_drafts_total", drafts), ("vllm:spec_decode_num_draft_tokens_total", 2 * drafts),
                ("vllm:spec_decode_num_accepted_tokens_total", accepted),
                ('vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"}', p0),
                ('vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"}', p1)))
        before = self.write("w_before.prom", scrape(1000, 900, 600, 300))
        after = self.write("w_after.prom", scrape(2000, 1800, 1000, 800))
        status, data, err = measure(["--metrics", after, "--metrics-before", before])
        self.assertEqual(status, 0, err)
        self.assertTrue(any("position 1 accepted more (500) than position 0 (400)" in n for n in data["measured"]["notes"]))

    def test_3_drafted_per_position_counts_are_the_denominators(self):
        status, data, err = measure(["--metrics", str(FIX / "metrics_ngram_drafted_per_pos.prom")])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertEqual(ms["k"], 4)
        self.assertAlmostEqual(ms["k_mean"], 2.8, places=6)
        self.assertEqual(ms["per_position_rates"], [0.5, 0.25, 0.125, 0.0625])    # 500/1000, 200/800, 75/600, 25/400
        self.assertEqual(ms["per_position_alpha"], [0.5, 0.5, 0.5, 0.5])
        self.assertAlmostEqual(ms["alpha"], 0.5, places=6)

    def test_4_before_0_8_5_needs_ks_and_says_why(self):
        path = str(FIX / "metrics_v1_0_8_4_no_drafts.prom")
        self.refused(["--metrics", path, "--alphas", "0.7", "--ks", "3,5"], "0.8.5", "PR #16665",
                     "acceptance rate is 0.600", "--ks")
        status, data, err = measure(["--metrics", path])             # SMALL gives --ks 3
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertAlmostEqual(ms["acceptance_length"], 2.8, places=6)   # 1 + 18,000 / (30,000 / 3)
        a = ms["alpha"]
        self.assertAlmostEqual(1 + a + a * a + a ** 3, 2.8, places=5)

    def test_4_v0_gauges_are_read_as_gauges(self):
        status, data, err = measure(["--metrics", str(FIX / "metrics_v0.prom"), "--ks", "4"])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertAlmostEqual(ms["acceptance_rate"], 0.55, places=6)     # 22,000 / 40,000, as the gauge says
        self.assertAlmostEqual(ms["acceptance_length"], 3.2, places=6)    # 1 + 4 x 0.55
        self.assertTrue(any("system efficiency 0.640" in n for n in ms["notes"]))
        gauges_only = "\n".join(line for line in (FIX / "metrics_v0.prom").read_text().splitlines()
                                if "_total" not in line)
        status, data, err = measure(["--metrics", self.write("v0_gauges.prom", gauges_only), "--ks", "4"])
        self.assertEqual(status, 0, err)
        self.assertAlmostEqual(data["measured"]["acceptance_length"], 3.2, places=6)

    def test_5_several_models_are_not_summed(self):
        path = str(FIX / "metrics_two_models.prom")
        self.refused(["--metrics", path] + SMALL, "Qwen/Qwen3-32B", "meta-llama/Llama-3.3-70B-Instruct",
                     "--served-model")
        status, data, err = measure(["--metrics", path, "--served-model", "Qwen/Qwen3-32B"])
        self.assertEqual(status, 0, err)
        self.assertAlmostEqual(data["measured"]["acceptance_rate"], 2000 / 6000, places=6)
        self.refused(["--metrics", path, "--served-model", "nope"] + SMALL, "'nope'", "Qwen/Qwen3-32B")

    def test_5_engines_of_one_model_are_summed(self):
        status, data, _ = measure(["--metrics", str(AFTER)])
        self.assertEqual(data["measured"]["drafts"], 8000)            # engine 0: 5,000 + engine 1: 3,000

    def test_6_byte_order_marks(self):
        expected = measure(["--metrics", str(AFTER)])[1]["measured"]
        bom8 = self.write("bom8.prom", data=b"\xef\xbb\xbf" + AFTER.read_bytes())
        utf16 = self.write("utf16.prom", data=AFTER.read_text().encode("utf-16"))   # BOM + UTF-16LE
        for path in (bom8, utf16):
            status, data, err = measure(["--metrics", path])
            self.assertEqual(status, 0, err)
            self.assertEqual(data["measured"]["acceptance_length"], expected["acceptance_length"])
        broken = self.write("utf16_broken.prom", data=b"\xff\xfe" + b"\x00\xd8" * 3)
        self.refused(["--metrics", broken] + SMALL, "UTF-16", "re-save it as UTF-8")

    def test_6_openmetrics_timestamps_exemplars_and_eof(self):
        status, data, err = measure(["--metrics", str(FIX / "metrics_openmetrics.txt")])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertEqual((ms["drafts"], ms["k"]), (6500, 3))
        self.assertAlmostEqual(ms["acceptance_rate"], 12_000 / 19_500, places=6)

    def test_6_what_is_not_the_exposition_format(self):
        for path in (str(FIX / "metrics_webui_table.txt"), str(SPEC)):
            self.refused(["--metrics", path] + SMALL, "not the Prometheus exposition format", "curl")

    def test_6_an_sglang_scrape(self):
        status, data, err = measure(["--metrics", str(FIX / "metrics_sglang.prom")])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertEqual(ms["k"], 3)                       # (2.6 - 1) / 0.5333 = 3.0
        self.assertAlmostEqual(ms["acceptance_length"], 2.6, places=6)
        self.assertIsNone(ms["drafts"])
        no_rate = "\n".join(line for line in (FIX / "metrics_sglang.prom").read_text().splitlines()
                            if "spec_accept_rate" not in line)
        self.refused(["--metrics", self.write("sglang_no_rate.prom", no_rate), "--alphas", "0.7", "--ks", "3,5"],
                     "SGLang", "--ks")
        self.refused(["--metrics", str(FIX / "metrics_sglang.prom"), "--alphas", "0.7", "--ks", "4"], "--ks 4",
                     "3.00")

    def test_7_counters_that_fell(self):
        self.refused(["--metrics", str(BEFORE), "--metrics-before", str(AFTER)] + SMALL, "restarted", "swapped")


class Benchmarks(Files):
    def test_8_the_spec_run_alone_gives_acceptance(self):
        status, data, err = measure(["--bench-spec", str(SPEC)])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertAlmostEqual(ms["acceptance_rate"], 12_000 / 19_500, places=6)    # 61.54 % in the file
        self.assertNotIn("prediction", ms)                                         # no baseline, no speedup
        self.assertEqual(data["plan"]["target"], 64)                               # its max_concurrency

    def test_9_a_pair_must_be_the_same_workload(self):
        spec = json.loads(SPEC.read_text())
        for key, value in (("num_prompts", 2000), ("model_id", "Qwen/Qwen3-32B"), ("backend", "openai-chat"),
                           ("request_rate", 4.0)):
            path = self.write(f"other_{key}.json", json.dumps(dict(spec, **{key: value})))
            err = self.refused(["--bench-baseline", str(BASE), "--bench-spec", path] + SMALL, key, repr(value))
            self.assertIn(repr(json.loads(BASE.read_text())[key]), err)

    def test_10_multi_turn_concurrency(self):
        status, data, err = measure(["--bench-baseline", str(FIX / "bench_multi_turn_baseline.json"),
                                     "--bench-spec", str(FIX / "bench_multi_turn_spec.json")])
        self.assertEqual(status, 0, err)
        self.assertEqual(data["plan"]["target"], 16)
        self.assertEqual(data["measured"]["prediction"]["concurrency"], 16)

    def test_10_open_loop_says_where_the_target_comes_from(self):
        argv = ["--bench-baseline", str(FIX / "bench_open_loop_baseline.json"),
                "--bench-spec", str(FIX / "bench_open_loop_spec.json")]
        status, data, err = measure(argv)
        self.assertEqual(status, 0, err)
        self.assertEqual(data["plan"]["target"], 64)
        self.assertIn("the grid's largest concurrency", " ".join(data["measured"]["notes"]))
        status, data, err = measure(argv + ["--target-concurrency", "32"])
        self.assertEqual(data["plan"]["target"], 32)
        self.assertIn("from --target-concurrency", " ".join(data["measured"]["notes"]))

    def test_11_failed_runs_and_keys_the_gate_needs(self):
        spec = json.loads(SPEC.read_text())
        failed = self.write("failed.json", json.dumps(dict(spec, completed=0)))
        self.refused(["--bench-spec", failed] + SMALL, "completed 0")
        no_p99 = self.write("no_p99.json", json.dumps({k: v for k, v in spec.items() if not k.startswith("p99_")}))
        self.refused(["--bench-baseline", str(BASE), "--bench-spec", no_p99, "--gate"] + SMALL, "p99_tpot_ms",
                     "--metric-percentiles 50,99")
        no_tput = self.write("no_tput.json", json.dumps({k: v for k, v in spec.items() if k != "output_throughput"}))
        self.refused(["--bench-baseline", str(BASE), "--bench-spec", no_tput, "--gate"] + SMALL, "output_throughput")

    def test_12_append_result_and_sweep_summary(self):
        status, data, err = measure(["--bench-spec", str(FIX / "bench_spec_append_result.jsonl")])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertAlmostEqual(ms["acceptance_rate"], 12_000 / 19_500, places=6)   # the last line, not 60 / 300
        self.assertIn("holds 2 results (--append-result); the last is used", " ".join(ms["notes"]))
        self.refused(["--bench-spec", str(FIX / "bench_sweep_summary.json")] + SMALL, "vllm bench sweep",
                     "summary.json")

    def test_13_scrape_and_benchmark_from_different_models(self):
        spec = json.loads(SPEC.read_text())
        other = self.write("qwen_spec.json", json.dumps(dict(spec, model_id="Qwen/Qwen3-32B")))
        self.refused(["--metrics", str(AFTER), "--bench-spec", other] + SMALL, "Qwen/Qwen3-32B",
                     "meta-llama/Llama-3.3-70B-Instruct", "different servers")

    def test_13_which_acceptance_is_used(self):
        status, data, err = measure(["--metrics", str(AFTER), "--bench-baseline", str(BASE), "--bench-spec", str(SPEC)])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertAlmostEqual(ms["acceptance_rate"], 14_700 / 24_000, places=6)   # the scrape's, not the file's
        self.assertIn("the benchmark's own counts (rate 0.615) were not used", " ".join(ms["notes"]))


class TensorRtLlmCounters(unittest.TestCase):
    """trtllm-serve's /prometheus/metrics (fixtures metrics_trtllm_*.prom): draft and accepted tokens, no drafts."""

    def test_the_window_and_k_give_the_measurement(self):
        files = ["--engine", "trtllm", "--metrics", str(FIX / "metrics_trtllm_after.prom"), "--metrics-before",
                 str(FIX / "metrics_trtllm_before.prom")]
        status, data, err = measure(files + ["--ks", "3"])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        # 30,000 draft and 18,000 accepted tokens in the window; K = 3: 10,000 rounds.
        self.assertAlmostEqual(ms["acceptance_rate"], 18_000 / 30_000, places=6)
        self.assertAlmostEqual(ms["acceptance_length"], 1 + 18_000 / 10_000, places=6)
        self.assertIn("TensorRT-LLM counts no drafts", " ".join(ms["notes"]))
        status, _, err = run(files + ["--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("max_draft_len", err)
        # A tree of 8 drafted tokens over 3 steps cannot give these counts: tau 1 + 18,000 / 3,750 = 5.8 > 4.
        status, _, err = run(files + ["--ks", "3", "--draft-topk", "4", "--verify-tokens", "9", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("5.800", err)


class EdgesOfRealFiles(Files):
    """Variants a review found in the wild (review of issue 9): each is read right or refused in one line."""

    def sglang(self, *values, rate="0.5333"):
        name = "meta-llama/Llama-3.3-70B-Instruct"   # the deployment's: a scrape of another model is refused
        return "".join(f'sglang:spec_accept_length{{model_name="{name}",tp_rank="{r}"}} {v}\n'
                       f'sglang:spec_accept_rate{{model_name="{name}",tp_rank="{r}"}} {rate if float(v) else 0}\n'
                       for r, v in enumerate(values))

    def test_sglang_idle_ranks_and_impossible_lengths(self):
        self.refused(["--metrics", self.write("idle.prom", self.sglang("0.0", "0.0"))] + SMALL, "idle")
        status, data, err = measure(["--metrics", self.write("mixed.prom", self.sglang("2.6", "0.0"))])
        self.assertEqual(status, 0, err)
        self.assertAlmostEqual(data["measured"]["acceptance_length"], 2.6, places=6)   # the idle rank left out
        big = self.write("big.prom", self.sglang("4.5", rate="0"))
        self.refused(["--metrics", big] + SMALL, "4.500", "K + 1 = 4")

    def test_two_scrapes_in_one_file(self):
        both = self.write("both.prom", BEFORE.read_text() + AFTER.read_text())
        self.refused(["--metrics", both] + SMALL, "appears twice", "own file")
        after_eof = self.write("eof.txt", (FIX / "metrics_openmetrics.txt").read_text() + AFTER.read_text())
        self.refused(["--metrics", after_eof] + SMALL, "after '# EOF'")

    def test_a_current_scrape_missing_only_num_drafts(self):
        text = "\n".join(l for l in AFTER.read_text().splitlines() if not l.startswith("vllm:spec_decode_num_drafts"))
        self.refused(["--metrics", self.write("no_drafts.prom", text)] + SMALL, "vllm:spec_decode_num_drafts_total",
                     "partial")

    def test_v0_counters_fix_k_themselves(self):
        # 32,000 emitted - 22,000 accepted = 10,000 drafts of 40,000 / 10,000 = 4 tokens; efficiency
        # 32,000 / (5 x 10,000) = 0.64, as the gauge says.
        status, data, err = measure(["--metrics", str(FIX / "metrics_v0.prom"), "--ks", "3,5"])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertEqual((ms["k"], ms["drafts"]), (4, 10_000))
        self.assertAlmostEqual(ms["acceptance_length"], 3.2, places=6)
        self.refused(["--metrics", str(FIX / "metrics_v0.prom")] + SMALL, "--ks 3 disagrees", "10000 drafts")

    def test_six_significant_digits_keep_k_whole(self):
        text = ('vllm:spec_decode_num_drafts_total 2.04363e+06\nvllm:spec_decode_num_draft_tokens_total 6.13088e+06\n'
                'vllm:spec_decode_num_accepted_tokens_total 3.5e+06\n')
        status, data, err = measure(["--metrics", self.write("rounded.prom", text)])
        self.assertEqual(status, 0, err)
        self.assertEqual(data["measured"]["k"], 3)
        self.assertFalse(data["measured"]["varying_k"])

    def test_rounds_a_little_short_of_k_are_a_fixed_k(self):
        # 10,000 drafts at K = 3 of which 100 lost their last token (requests ending near their
        # length limit): 29,900 draft tokens, 0.01 short a round. Per position 8,000, 6,000, 4,000
        # accepted; position 2 was drafted at most 9,900 times, so its rate is at most 1.0% low.
        def text(draft_tokens, third):
            return ("vllm:spec_decode_num_drafts_total 10000\n"
                    f"vllm:spec_decode_num_draft_tokens_total {draft_tokens}\n"
                    f"vllm:spec_decode_num_accepted_tokens_total {14000 + third}\n" + "".join(
                        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {n}\n'
                        for i, n in enumerate((8000, 6000, third))))
        status, data, err = measure(["--metrics", self.write("short.prom", text(29_900, 4000))])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertFalse(ms["varying_k"])
        self.assertEqual(ms["k"], 3)
        self.assertAlmostEqual(ms["acceptance_length"], 2.8, places=6)
        self.assertAlmostEqual(acceptance.acceptance_length(ms["alpha"], 3), 2.8, places=5)      # tau, not position 0
        for got, want in zip(ms["per_position_alpha"], (0.8, 0.75, 4000 / 6000)):
            self.assertAlmostEqual(got, want, places=6)
        self.assertTrue(any("0.010 short" in n and "at most 1.0% above" in n for n in ms["notes"]), ms["notes"])
        # Exactly K_SHORTFALL short (3 - 2.98 is 0.020000000000000018 in floats) is still a fixed K.
        status, data, err = measure(["--metrics", self.write("edge.prom", text(29_800, 3800))])
        self.assertEqual(status, 0, err)
        self.assertFalse(data["measured"]["varying_k"])
        # 500 drafts of two tokens instead of three: 0.05 short a round, past K_SHORTFALL: K varied.
        status, data, err = measure(["--metrics", self.write("varied.prom", text(29_500, 3600))])
        self.assertEqual(status, 0, err)
        self.assertTrue(data["measured"]["varying_k"])
        self.assertAlmostEqual(data["measured"]["alpha"], 0.8, places=6)                # position 0's rate

    def test_drafted_counts_give_the_full_k_profile_to_the_plan_too(self):
        # K = 3, 10,000 drafts, 100 of them one token short: drafted per position 10,000, 10,000, 9,900.
        # Accepted 8,000, 6,000, 3,960: rates 0.8, 0.6, 0.4 over the drafts that reached each position, so
        # K-token rounds deliver 2.8, where the short rounds measured 1 + 17,960 / 10,000 = 2.796.
        c = readers.Counters(drafts=10_000.0, draft_tokens=29_900.0, accepted=17_960.0,
                       per_position={0: 8000.0, 1: 6000.0, 2: 3960.0},
                       drafted_per_position={0: 10_000.0, 1: 10_000.0, 2: 9900.0})
        ms = readers.measured_acceptance(c, "by hand")
        self.assertAlmostEqual(acceptance.acceptance_length(ms.alpha, 3), 2.8, places=9)
        grid = report.Grid(acceptance=(0.7,), ks=(3,), overheads=(0.1,), concurrencies=(1,))
        alpha, spread = analysis.plan_input(ms, grid, 0.0, 0.7).requests            # no spread: the requests are alpha itself
        self.assertAlmostEqual(alpha, ms.alpha, places=6)

    def test_escaped_label_values(self):
        name = 'my "fast" llama'
        text = "".join(f'{metric}{{model_name="my \\"fast\\" llama"}} {v}\n' for metric, v in (
            ("vllm:spec_decode_num_drafts_total", 100), ("vllm:spec_decode_num_draft_tokens_total", 300),
            ("vllm:spec_decode_num_accepted_tokens_total", 150)))
        text += text.replace("my \\\"fast\\\" llama", "other")
        status, data, err = measure(["--metrics", self.write("escaped.prom", text), "--served-model", name])
        self.assertEqual(status, 0, err)
        self.assertAlmostEqual(data["measured"]["acceptance_rate"], 0.5, places=6)

    def test_served_model_name_confirms_a_pair(self):
        text = AFTER.read_text().replace('model_name="meta-llama/Llama-3.3-70B-Instruct"', 'model_name="llama-70b"')
        scrape = self.write("served.prom", text)
        self.refused(["--metrics", scrape, "--bench-spec", str(SPEC)] + SMALL, "--served-model-name")
        status, data, err = measure(["--metrics", scrape, "--bench-spec", str(SPEC), "--served-model", "llama-70b"])
        self.assertEqual(status, 0, err)
        self.assertIn("taken to be the benchmark's", " ".join(data["measured"]["notes"]))

    def test_bench_numbers_that_are_not_numbers(self):
        spec = json.loads(SPEC.read_text())
        nan = self.write("nan_drafts.json", json.dumps(spec).replace('"spec_decode_num_drafts": 6500',
                                                                     '"spec_decode_num_drafts": NaN'))
        self.refused(["--bench-spec", nan] + SMALL, "spec_decode_num_drafts", "got nan")
        null = self.write("null_drafts.json", json.dumps(dict(spec, spec_decode_num_drafts=None)))
        self.refused(["--bench-spec", null] + SMALL, "spec_decode_num_drafts", "None")
        holes = self.write("holes.json", json.dumps(dict(spec, spec_decode_per_position_acceptance_rates=[0.8, None])))
        status, data, err = measure(["--bench-spec", holes])
        self.assertEqual(status, 0, err)
        self.assertIn("per_position_acceptance_rates dropped", " ".join(data["measured"]["notes"]))
        tput = self.write("nan_tput.json", json.dumps(spec).replace('"output_throughput": 2600.5',
                                                                    '"output_throughput": NaN'))
        self.refused(["--bench-baseline", str(BASE), "--bench-spec", tput, "--gate"] + SMALL, "usable output_throughput")
        text = self.write("mc_text.json", json.dumps(dict(spec, max_concurrency="64")))
        self.refused(["--bench-spec", text] + SMALL, "max_concurrency", "'64'")

    def test_a_2024_file_without_max_concurrency(self):
        spec = {k: v for k, v in json.loads(SPEC.read_text()).items() if k != "max_concurrency"}
        status, data, err = measure(["--bench-spec", self.write("b2024.json", json.dumps(spec))])
        self.assertEqual(status, 0, err)
        notes = " ".join(data["measured"]["notes"])
        self.assertIn("records no max_concurrency", notes)
        self.assertIn("the grid's largest concurrency", notes)

    def test_rate_and_length_keys_alone_and_checked(self):
        spec = json.loads(SPEC.read_text())
        only = {k: v for k, v in spec.items() if k not in ("spec_decode_num_drafts", "spec_decode_draft_tokens",
                                                            "spec_decode_accepted_tokens")}
        status, data, err = measure(["--bench-spec", self.write("rate_length.json", json.dumps(only))])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertEqual(ms["k"], 3)                                  # (2.846 - 1) / 0.6154 = 3.0
        self.assertAlmostEqual(ms["acceptance_length"], 2.8461538, places=5)
        wrong = self.write("wrong_rate.json", json.dumps(dict(spec, spec_decode_acceptance_rate=30.0)))
        self.refused(["--bench-spec", wrong] + SMALL, "disagrees with its counts", "61.5%")

    def test_9_concurrency_keys_of_a_pair(self):
        spec = json.loads(SPEC.read_text())
        path = self.write("other_mc.json", json.dumps(dict(spec, max_concurrency=32)))
        self.refused(["--bench-baseline", str(BASE), "--bench-spec", path] + SMALL, "max_concurrency 32", "64")
        base_mt = json.loads((FIX / "bench_multi_turn_baseline.json").read_text())
        spec_mt = json.loads((FIX / "bench_multi_turn_spec.json").read_text())
        path = self.write("other_mt.json", json.dumps(dict(spec_mt, multi_turn_concurrency=8)))
        self.refused(["--bench-baseline", str(FIX / "bench_multi_turn_baseline.json"), "--bench-spec", path] + SMALL,
                     "multi_turn_concurrency 8", str(base_mt["multi_turn_concurrency"]))

if __name__ == "__main__":
    unittest.main()
