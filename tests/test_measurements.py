"""Reading vLLM /metrics scrapes and bench results, the gate, and the traffic mix."""
import json
import tempfile
import tracemalloc
import unittest
from pathlib import Path

from support import ROOT, build_deployment, run

from rollout.mix import traffic_blend
from rollout import acceptance, bestk, costmodel, deployment, exercises, readers


FIXTURES = ROOT / "tests" / "fixtures"
AFTER, BEFORE = str(FIXTURES / "metrics_after.prom"), str(FIXTURES / "metrics_before.prom")
BASE, SPEC = str(FIXTURES / "bench_baseline.json"), str(FIXTURES / "bench_spec.json")
SMALL = ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,64"]


def run_json(argv):
    status, out, err = run(SMALL + argv + ["--json", "--no-write"])
    return status, (json.loads(out) if out else None), err


class Counters(unittest.TestCase):
    # Fixture counts, summed over engines 0 and 1 (see the files):
    # after:  drafts 8000, draft tokens 24000, accepted 14700, per position 6500, 4900, 3300
    # before: drafts 1500, draft tokens  4500, accepted  2700, per position 1200,  900,  600

    def test_one_scrape_gives_exact_figures(self):
        status, data, err = run_json(["--metrics", AFTER])
        self.assertEqual(status, 0, err)
        ms = data["measured"]
        self.assertEqual(ms["k"], 3)
        self.assertAlmostEqual(ms["acceptance_rate"], 14700 / 24000, places=6)
        self.assertAlmostEqual(ms["acceptance_length"], 1 + 14700 / 8000, places=6)
        for got, want in zip(ms["per_position_rates"], (6500 / 8000, 4900 / 8000, 3300 / 8000)):
            self.assertAlmostEqual(got, want, places=6)
        for got, want in zip(ms["per_position_alpha"], (6500 / 8000, 4900 / 6500, 3300 / 4900)):
            self.assertAlmostEqual(got, want, places=6)
        self.assertAlmostEqual(sum(ms["per_position_rates"]) + 1, ms["acceptance_length"], places=6)
        self.assertAlmostEqual(acceptance.acceptance_length(ms["alpha"], 3), ms["acceptance_length"], places=6)

    def test_window_is_the_difference(self):
        status, data, _ = run_json(["--metrics", AFTER, "--metrics-before", BEFORE])
        ms = data["measured"]
        self.assertAlmostEqual(ms["acceptance_rate"], 12000 / 19500, places=6)
        self.assertAlmostEqual(ms["acceptance_length"], 1 + 12000 / 6500, places=6)
        self.assertAlmostEqual(ms["per_position_alpha"][1], 4000 / 5300, places=6)

    def test_bench_spec_keys_alone_give_the_same_acceptance_as_a_fraction(self):
        # bench_spec.json holds the window's counts; its acceptance rate is a percentage (61.5).
        _, from_bench, _ = run_json(["--bench-baseline", BASE, "--bench-spec", SPEC])
        _, from_metrics, _ = run_json(["--metrics", AFTER, "--metrics-before", BEFORE])
        for key in ("k", "acceptance_rate", "acceptance_length", "alpha"):
            self.assertAlmostEqual(from_bench["measured"][key], from_metrics["measured"][key], places=6)
        self.assertLess(from_bench["measured"]["acceptance_rate"], 1.0)

    def test_a_bench_file_with_only_rate_and_length_knows_no_draft_count(self):
        # 61.25% at tau 2.8375 is K = 1.8375 / 0.6125 = 3; no drafts counter, so none is printed or written.
        spec = json.loads(Path(SPEC).read_text())
        for key in [k for k in spec if k.startswith("spec_decode_")]:
            del spec[key]
        spec.update(spec_decode_acceptance_rate=61.25, spec_decode_acceptance_length=2.8375)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "spec.json"
            path.write_text(json.dumps(spec))
            status, data, err = run_json(["--bench-baseline", BASE, "--bench-spec", str(path)])
            _, text, _ = run(SMALL + ["--bench-baseline", BASE, "--bench-spec", str(path), "--no-write"])
        self.assertEqual(status, 0, err)
        self.assertEqual(data["measured"]["k"], 3)
        self.assertIsNone(data["measured"]["drafts"])
        self.assertAlmostEqual(data["measured"]["acceptance_rate"], 0.6125, places=6)
        self.assertIn("K in use 3 (3.00 draft tokens per draft);", text)          # not "over 1 drafts"

    def test_bench_comparison_figures(self):
        _, data, _ = run_json(["--metrics", AFTER, "--bench-baseline", BASE, "--bench-spec", SPEC])
        ms = data["measured"]
        self.assertAlmostEqual(ms["tpot_speedup"], 30.1 / 22.5, places=6)
        self.assertAlmostEqual(ms["throughput_speedup"], 2600.5 / 2000.4, places=5)
        self.assertAlmostEqual(ms["p99_tpot_change"], 35.7 / 34.0 - 1, places=6)
        self.assertAlmostEqual(ms["p99_itl_change"], 70.4 / 36.2 - 1, places=6)
        self.assertEqual(ms["prediction"]["concurrency"], 64)


def at_the_benchmarks_lengths(dep):
    """The deployment at the spec fixture's own lengths: 215,037 prompt and 198,643 output tokens over 1,000
    requests, 215 and 199 a request (the model beside a benchmark is set at its lengths)."""
    return deployment.at_lengths(dep, 215, 199)


class Gate(unittest.TestCase):
    def test_pass_exits_0_and_reaches_json_and_plan(self):
        with tempfile.TemporaryDirectory() as tmp:
            plan = Path(tmp) / "plan.md"
            status, out, _ = run(SMALL + ["--metrics", AFTER, "--bench-baseline", BASE, "--bench-spec", SPEC,
                                          "--gate", "--out", str(plan)])
            self.assertEqual(status, 0)
            self.assertIn("PASS", out)
            self.assertIn("Verdict at B=64, K=3: PASS", plan.read_text())
        _, data, _ = run_json(["--metrics", AFTER, "--bench-baseline", BASE, "--bench-spec", SPEC])
        self.assertEqual(data["gate"]["verdict"], "pass")
        self.assertEqual({r["check"] for r in data["gate"]["reasons"]}, {"acceptance", "p99_tpot", "throughput"})

    def test_break_even_is_eps_over_k_at_the_benchmark_concurrency(self):
        _, data, _ = run_json(["--metrics", AFTER, "--bench-baseline", BASE, "--bench-spec", SPEC])
        g = data["gate"]
        eps = costmodel.eps_decode(build_deployment(), 64, 3)
        self.assertEqual(g["concurrency"], 64)
        self.assertAlmostEqual(g["breakeven_rate"], eps / 3, places=6)
        self.assertAlmostEqual(g["required_rate"], eps / 3 + 0.10, places=6)

    def test_acceptance_below_break_even_plus_margin_fails(self):
        status, out, _ = run(SMALL + ["--metrics", AFTER, "--gate-margin", "0.5", "--gate", "--no-write"])
        self.assertEqual(status, 1)
        self.assertIn("FAIL acceptance", out)

    def test_the_gate_compares_the_rate_not_the_alpha(self):
        # The scrape measures rate 0.615 and per-token alpha 0.776 at K = 3: with break-even + margin
        # between the two, the gate must fail (the alpha would pass).
        _, data, _ = run_json(["--metrics", AFTER])
        rate, alpha = data["measured"]["acceptance_rate"], data["measured"]["alpha"]
        margin = round((rate + alpha) / 2 - data["gate"]["breakeven_rate"], 3)
        status, data, _ = run_json(["--metrics", AFTER, "--gate-margin", str(margin), "--gate"])
        self.assertEqual(status, 1)
        self.assertAlmostEqual(data["gate"]["required_rate"], (rate + alpha) / 2, delta=0.001)

    def test_gate_and_plan_agree_when_no_rate_can_pass(self):
        status, data, _ = run_json(["--metrics", AFTER, "--gate-margin", "0.9", "--gate"])
        self.assertEqual(status, 1)
        self.assertIsNone(data["gate"]["required_rate"])
        self.assertIsNone(data["plan"]["required_rate"])
        self.assertIn("cannot pass", data["gate"]["reasons"][-1]["detail"])

    def test_predicted_p99_itl_is_per_chunk(self):
        # vLLM's ITL is one chunk, a round: its P99 over a plain step's is 1 + eps exactly (the same jitter),
        # eps with the prefill share a round of the measured tau carries. Per token it is another figure.
        _, data, _ = run_json(["--metrics", AFTER, "--bench-baseline", BASE, "--bench-spec", SPEC])
        dep, ms = at_the_benchmarks_lengths(build_deployment()), data["measured"]
        eps = costmodel.eps_seen(costmodel.eps_decode(dep, 64, 3), ms["acceptance_length"], dep, 64)
        self.assertAlmostEqual(ms["prediction"]["steady_p99_itl_change"], eps, places=3)
        self.assertGreater(abs(ms["prediction"]["p99_token_itl_change"] - eps), 0.02)
        self.assertTrue(ms["prediction"]["simulated"])   # the model's column is the pair's own run, replayed

    def test_predicted_speedup_pays_for_the_rounds_the_benchmark_ran(self):
        # metrics_k_by_batch.prom: 15,000 drafts of 50,000 tokens, K up to 4, so the rounds were
        # 2/3 at K = 3 and 1/3 at K = 4 (mean 3.333). The measured tau goes with their mean cost.
        _, data, _ = run_json(["--metrics", str(FIXTURES / "metrics_k_by_batch.prom"),
                               "--bench-baseline", BASE, "--bench-spec", SPEC])
        dep, ms = at_the_benchmarks_lengths(build_deployment()), data["measured"]
        self.assertTrue(ms["varying_k"])
        self.assertAlmostEqual(ms["k_mean"], 10 / 3, places=5)
        d = costmodel.decode_step_ms(dep, 64)
        mean_round = (2 * costmodel.round_ms(dep, 64, 3) + costmodel.round_ms(dep, 64, 4)) / 3
        tau = ms["acceptance_length"]
        want = tau * costmodel.plain_step_ms(dep, 64) / (mean_round + tau * costmodel.prefill_share_ms(dep, 64))
        self.assertAlmostEqual(ms["prediction"]["speedup"], want, delta=5e-6 * want)
        self.assertAlmostEqual(costmodel.eps_decode(dep, 64, 3.0), costmodel.eps_decode(dep, 64, 3), places=12)
        self.assertAlmostEqual(costmodel.eps_decode(dep, 64, 10 / 3), mean_round / d - 1, places=9)

    def test_target_concurrency_moves_the_break_even(self):
        low = run_json(["--metrics", AFTER, "--target-concurrency", "1"])[1]["gate"]
        high = run_json(["--metrics", AFTER, "--target-concurrency", "256"])[1]["gate"]
        self.assertLess(low["breakeven_rate"], high["breakeven_rate"])
        default = run_json(["--metrics", AFTER])[1]["gate"]
        self.assertEqual(default["concurrency"], 64)         # the largest grid concurrency here

    def test_p99_over_budget_fails(self):
        status, data, _ = run_json(["--metrics", AFTER, "--bench-baseline", BASE, "--bench-spec", SPEC,
                                    "--p99-budget", "0.01", "--gate"])
        self.assertEqual(status, 1)
        failed = [r["check"] for r in data["gate"]["reasons"] if not r["passed"]]
        self.assertEqual(failed, ["p99_tpot"])

    def test_lower_throughput_fails(self):
        spec = json.loads(Path(SPEC).read_text())
        spec["output_throughput"] = 1900.0
        spec["duration"] = spec["total_output_tokens"] / 1900.0   # a slower run: its tokens over a longer time
        with tempfile.TemporaryDirectory() as tmp:
            slow = Path(tmp) / "spec.json"
            slow.write_text(json.dumps(spec))
            status, data, _ = run_json(["--metrics", AFTER, "--bench-baseline", BASE, "--bench-spec", str(slow),
                                        "--gate"])
        self.assertEqual(status, 1)
        self.assertEqual([r["check"] for r in data["gate"]["reasons"] if not r["passed"]], ["throughput"])


class TrafficMix(unittest.TestCase):
    def test_default_mix_against_the_closed_form(self):
        dep = build_deployment()
        mix = traffic_blend(exercises.LESSON_MIX, dep, 3, 64)
        eps = costmodel.eps_decode(dep, 64, 3)
        # Prefill per token in decode steps: the other 63 requests' 1024 prompt tokens per 1024 output tokens.
        self.assertEqual(costmodel.prefill_tokens(dep, 64), 63.0)
        q = costmodel.prefill_share_ms(dep, 64) / costmodel.decode_step_ms(dep, 64)
        tau = acceptance.acceptance_length
        self.assertAlmostEqual(mix.naive_alpha, 0.7 * 0.7 + 0.3 * 0.4)
        self.assertAlmostEqual(mix.blended_speedup,
                               (1 + q) / ((0.7 / tau(0.7, 3) + 0.3 / tau(0.4, 3)) * (1 + eps) + q))
        self.assertAlmostEqual(mix.naive_speedup, (1 + q) / ((1 + eps) / tau(0.61, 3) + q))
        self.assertGreater(mix.naive_speedup, mix.blended_speedup)   # concave tau: averaging alpha flatters
        self.assertEqual(mix.weak, "code")
        self.assertAlmostEqual(mix.routed_speedup, (1 + q) / (0.7 / tau(0.7, 3) * (1 + eps) + 0.3 + q))

    def test_mix_flag(self):
        status, data, _ = run_json(["--mix", "chat:0.5:0.8,code:0.25:0.5,legal:0.25:0.3"])
        self.assertEqual(status, 0)
        self.assertEqual(data["plan"]["k"] >= 1, True)

    def test_bad_mix(self):
        for text in ("chat:0.7:0.7", "chat:0.7:0.7,legal:0.3", "chat:0.7:1.2,code:0.3:0.4", "a:0.5:0.5,a:0.5:0.5",
                     "chat:x:0.7,code:0.3:0.4"):
            status, _, err = run(["--mix", text, "--no-write"])
            self.assertEqual(status, 2, text)
            self.assertIn("--mix", err)


class BadFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)
        after = Path(AFTER).read_text()
        cls.files = {
            "no_spec.prom": "\n".join(line for line in after.splitlines() if "spec_decode" not in line),
            "zero.prom": after.replace("} 5000.0", "} 0.0").replace("} 3000.0", "} 0.0")
                              .replace("} 15000.0", "} 0.0").replace("} 9000.0", "} 0.0"),
            "negative.prom": after.replace("} 9300.0", "} -9300.0"),
            "nan.prom": after.replace("} 9300.0", "} NaN"),
            "word.prom": after.replace("} 9300.0", "} many"),
            "truncated.prom": after + 'vllm:spec_decode_num_drafts_total{engine="2",model_na',
            "empty.prom": "",
            "notjson.json": "{ not json",
            "nokeys.json": json.dumps({"completed": 10, "output_throughput": 5.0}),
            "other_concurrency.json": Path(SPEC).read_text().replace('"max_concurrency": 64', '"max_concurrency": 32'),
            "nospec.json": json.dumps({k: v for k, v in json.loads(Path(SPEC).read_text()).items()
                                       if not k.startswith("spec_decode")}),
        }
        for name, text in cls.files.items():
            (cls.dir / name).write_text(text)
        (cls.dir / "binary.prom").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def cases(self):
        d = lambda name: str(self.dir / name)
        return [
            (["--metrics", d("no_spec.prom")], "no speculative-decoding counters"),
            (["--metrics", d("zero.prom")], "no drafts"),
            (["--metrics", BEFORE, "--metrics-before", AFTER], "restarted"),
            (["--metrics", d("negative.prom")], ">= 0"),
            (["--metrics", d("nan.prom")], "finite"),
            (["--metrics", d("word.prom")], "not a number"),
            (["--metrics", d("truncated.prom")], "truncated"),
            (["--metrics", d("binary.prom")], "not a text file"),
            (["--metrics", d("empty.prom")], "empty"),
            (["--metrics", d("missing.prom")], "cannot read"),
            (["--bench-baseline", d("notjson.json"), "--bench-spec", SPEC], "not JSON"),
            (["--bench-baseline", d("nokeys.json"), "--bench-spec", SPEC], "latency keys"),
            (["--bench-baseline", BASE, "--bench-spec", d("other_concurrency.json")], "max_concurrency"),
            (["--bench-baseline", BASE, "--bench-spec", d("nospec.json")], "spec_decode"),
            (["--bench-baseline", BASE], "give both"),
            (["--metrics-before", BEFORE], "--metrics"),
            (["--gate"], "needs a measurement"),
            (["--metrics", AFTER, "--gate-margin", "1.5"], "--gate-margin"),
            (["--metrics", AFTER, "--p99-budget", "-1"], "--p99-budget"),
            (["--metrics", AFTER, "--target-concurrency", "0"], "--target-concurrency"),
        ]

    def test_each_bad_file_exits_2_with_one_line_and_no_plan(self):
        plan = self.dir / "plan.md"
        for argv, needle in self.cases():
            with self.subTest(argv=argv):
                status, out, err = run(argv + ["--out", str(plan)])
                self.assertEqual(status, 2)
                self.assertEqual(out, "")
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(needle, err)
                self.assertFalse(plan.exists())

    def test_the_message_names_the_file(self):
        _, _, err = run(["--metrics", str(self.dir / "negative.prom"), "--no-write"])
        self.assertIn("negative.prom", err)
        self.assertIn("--metrics", err)


class Streaming(unittest.TestCase):
    def test_a_large_scrape_is_read_without_loading_it(self):
        # About 1.5 MB of unrelated samples around the real page; the reader keeps one line at a time, so its peak
        # is a small fraction of the file (about 32 kB measured; tracemalloc makes a larger file slow to test).
        filler = "".join(f'vllm:request_prompt_tokens_bucket{{engine="0",le="{i}"}} {i}.0\n' for i in range(2000))
        with tempfile.TemporaryDirectory() as tmp:
            big = Path(tmp) / "big.prom"
            with big.open("w") as f:
                for _ in range(15):
                    f.write(filler)
                f.write(Path(AFTER).read_text())
            self.assertGreater(big.stat().st_size, 1_400_000)
            tracemalloc.start()
            (counters,) = readers.read_metrics(str(big), "--metrics").values()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        self.assertEqual(counters.drafts, 8000)
        self.assertLess(peak, 150_000)


class VaryingK(unittest.TestCase):
    """A scrape taken under a K-by-batch-size table (fixture metrics_k_by_batch.prom: 10,000 rounds of K=4,
    5,000 of K=2, per-token alpha 0.7 at every position)."""

    @classmethod
    def setUpClass(cls):
        status, cls.data, err = run_json(["--metrics", str(FIXTURES / "metrics_k_by_batch.prom"), "--gate"])
        assert status in (0, 1), err

    def test_k_is_the_highest_position_and_alpha_is_position_0(self):
        ms = self.data["measured"]
        self.assertEqual(ms["k"], 4)                                   # positions 0..3 exported
        self.assertAlmostEqual(ms["k_mean"], 50_000 / 15_000, places=5)     # --json rounds to 6 places
        self.assertTrue(ms["varying_k"])
        self.assertAlmostEqual(ms["alpha"], 0.7, places=6)             # 10,500 / 15,000
        self.assertAlmostEqual(ms["acceptance_rate"], 23_681 / 50_000, places=5)
        self.assertAlmostEqual(ms["acceptance_length"], 1 + 23_681 / 15_000, places=5)
        # Rounding the mean (K = 3) and inverting the length would have claimed another alpha:
        self.assertGreater(abs(acceptance.alpha_from_length(1 + 23_681 / 15_000, 3) - 0.7), 0.01)   # 0.712

    def test_gate_compares_the_rate_alpha_gives_at_the_plans_k(self):
        g, k = self.data["gate"], self.data["plan"]["k"]
        self.assertEqual(g["k"], k)
        rate = sum(0.7 ** i for i in range(1, k + 1)) / k                # (tau(0.7, K) - 1) / K by hand
        acceptance = next(r for r in g["reasons"] if r["check"] == "acceptance")
        self.assertIn(f"acceptance rate {rate:.3f} at K={k}", acceptance["detail"])
        # Without benchmarks a rate short of the top of the break-even's range + margin is too close to call.
        top = self.data["plan"]["gate_rate_interval"][1] + g["margin"]
        self.assertEqual(g["verdict"], "fail" if rate < g["required_rate"] else
                         "too close to call" if rate < top else "pass")


class EngineReportedAcceptance(unittest.TestCase):
    """SGLang and TensorRT-LLM report a length or a rate, not vLLM's counters; a `vllm bench serve` file run
    against them has no spec_decode_* keys (fixture bench_spec_sglang_no_spec_keys.json)."""

    def test_length_at_one_k_completes_the_benchmark_pair(self):
        no_keys = str(FIXTURES / "bench_spec_sglang_no_spec_keys.json")
        status, _, err = run_json(["--bench-baseline", BASE, "--bench-spec", no_keys])
        self.assertEqual(status, 2)              # a grid of alphas is not a measurement
        self.assertIn("--acceptance-length", err)
        status, out, err = run(["--ks", "3", "--acceptance-length", "2.2", "--concurrency", "1,64", "--bench-baseline",
                                BASE, "--bench-spec", str(FIXTURES / "bench_spec_sglang_no_spec_keys.json"),
                                "--json", "--no-write"])
        self.assertEqual(status, 0, err)
        ms = json.loads(out)["measured"]
        self.assertEqual(ms["source"], "--acceptance-length 2.2 at K=3")
        a = ms["alpha"]
        self.assertAlmostEqual(1 + a + a * a + a ** 3, 2.2, places=5)   # tau(alpha, 3) = 2.2 (alpha to 6 places)
        self.assertAlmostEqual(ms["acceptance_rate"], 1.2 / 3, places=5)

    def test_rate_at_one_k_feeds_the_gate(self):
        status, out, err = run(["--ks", "2", "--acceptance-rates", "0.6", "--concurrency", "1,64", "--gate",
                                "--json", "--no-write"])
        self.assertIn(status, (0, 1), err)
        g = json.loads(out)["gate"]
        self.assertIn("acceptance rate 0.600 at K=2", g["reasons"][-1]["detail"])

class AcceptanceSweep(unittest.TestCase):
    """Acceptance lengths measured at K = 1..n (an MTP module reused past its trained depth accepts less at each
    later position): the conditional alphas they imply, and every K's cell at its own measured tau."""

    def test_a_reused_mtp_module_is_flagged_with_the_published_sweep(self):
        args = ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--weights-dtype", "fp8", "--draft", "mtp",
                "--json", "--no-write"]
        status, out, err = run(args)
        self.assertEqual(status, 0, err)
        summary = " ".join(json.loads(out)["summary"])
        # Shares 0.92, 0.66, 0.24, 0.17, 0.02 of rounds reach positions 1-5: conditional alphas by hand.
        self.assertIn("conditional alphas 0.92, 0.72, 0.36, 0.71, 0.12 by position", summary)
        # One alpha of 0.92: tau = (1 - 0.92^(K+1)) / (1 - 0.92) at K = 1..5.
        self.assertIn("would give " + ", ".join(f"{(1 - 0.92 ** (k + 1)) / 0.08:.2f}" for k in range(1, 6)), summary)
        status, out, err = run(args + ["--ks", "1,2", "--acceptance-length", "1.9,2.6"])   # measured by position
        self.assertNotIn("reuses it", " ".join(json.loads(out)["summary"]))

    def test_lengths_of_one_alpha_give_that_alpha_at_every_position(self):
        lengths = [acceptance.acceptance_length(0.8, k) for k in (1, 2, 3, 4)]   # 1.8, 2.44, 2.952, 3.3616
        self.assertEqual([round(a, 9) for a in acceptance.profile_from_lengths(lengths)], [0.8] * 4)

    def test_a_published_mtp_sweep_by_hand(self):
        # DeepSeek-R1 MTP on TensorRT-LLM (tech blog 1): acceptance length 1.92, 2.58, 2.82, 2.99, 3.01 at K = 1..5.
        lengths = [1.92, 2.58, 2.82, 2.99, 3.01]
        status, out, err = run(["--model", "deepseek-v3", "--gpu", "b200", "--tp", "8", "--weights-dtype", "fp4",
                                "--engine", "trtllm", "--draft", "mtp", "--ks", "1,2,3,4,5", "--acceptance-length",
                                ",".join(map(str, lengths)), "--concurrency", "1,8", "--json", "--no-write"])
        self.assertEqual(status, 0, err)
        data = json.loads(out)
        shares = [0.92, 0.66, 0.24, 0.17, 0.02]                      # tau_(i+1) - tau_i: rounds reaching i
        by_hand = [0.92] + [b / a for a, b in zip(shares, shares[1:])]
        for got, want in zip(data["measured"]["per_position_alpha"], by_hand):
            self.assertAlmostEqual(got, want, places=6)
        # Each K's cells carry the tau measured at that K, and the speedup is tau / (1 + eps) there.
        for cell in data["cells"]:
            self.assertAlmostEqual(cell["acceptance_length"], lengths[cell["k"] - 1], places=6)
        # The best K of the measured profile is the K whose tau / (1 + eps_seen) is largest, by hand.
        dep = build_deployment("deepseek-v3", "b200", 8, weights_dtype="fp4", kv_dtype="bf16", context=None, draft="mtp", engine="trtllm")
        best = {}
        for b in (1, 8):
            speedups = {k: lengths[k - 1] / (1 + costmodel.eps_seen(costmodel.eps_decode(dep, b, k), lengths[k - 1], dep, b))
                        for k in range(1, 6)}
            # The smallest K within K_TIE of the best (a shorter draft where the gain is a tie): at B = 1, K = 2's
            # 1.864x against K = 3's 1.871x.
            best[b] = min(k for k, s in speedups.items() if s >= max(speedups.values()) / (1 + bestk.K_TIE))
        self.assertEqual({r["concurrency"]: r["k"] for r in data["best_k"]}, best)


if __name__ == "__main__":
    unittest.main()
