"""A benchmark run simulated step by step (serve_run), the files it predicts (--predict-bench) and their
comparison with measured ones (--compare): hand counts, queueing theory and vLLM's own arithmetic."""
import json
import math
import statistics
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from load_main import load_main, run

m = load_main()
DEP = m.make_deployment("llama-3.1-8b", "h100-sxm", 1, "bf16", input_tokens=512, output_tokens=64)
SMALL = ["--model", "llama-3.1-8b", "--tp", "1", "--weights-dtype", "bf16", "--input-tokens", "512",
         "--output-tokens", "64", "--alphas", "0.7", "--ks", "3", "--concurrency", "1,8", "--no-write"]


def closed(batch, prompts, output=64, spread=0.0, rate=math.inf):
    return m.Workload(num_prompts=prompts, max_concurrency=batch, request_rate=rate, burstiness=1.0,
                      input_tokens=512, output_tokens=output, output_spread=spread)


class ConstantSteps:
    """Every step costs `decode` ms, plus `prefill` ms when it carries prompt tokens; no jitter."""

    def __init__(self, decode, prefill=0.0):
        self.decode, self.prefill = decode, prefill

    def __enter__(self):
        self.patches = [mock.patch.object(m, "step_cost", lambda dep, d, k, p, fit: self.decode + (self.prefill if p
                                                                                                  else 0.0)),
                        mock.patch.object(m, "STEP_JITTER", [1.0] * m.JITTER_LEVELS)]
        for p in self.patches:
            p.start()
        return self

    def __exit__(self, *exc):
        for p in self.patches:
            p.stop()


class HandCounts(unittest.TestCase):
    def test_one_slot_runs_requests_back_to_back(self):
        # C = 1, 64 output tokens: a request is one prefill step (its first token) and 63 decode steps.
        with ConstantSteps(decode=10.0, prefill=30.0):
            r = m.bench_result(m.serve_run(DEP, closed(1, 5)), closed(1, 5), DEP)
        one = (10.0 + 30.0) + 63 * 10.0                               # ms: the prefill step decodes nothing
        self.assertAlmostEqual(r["duration"], 5 * one / 1e3, places=9)
        self.assertAlmostEqual(r["mean_ttft_ms"], 40.0, places=6)
        self.assertAlmostEqual(r["mean_tpot_ms"], 10.0, places=6)
        self.assertAlmostEqual(r["p99_itl_ms"], 10.0, places=6)
        self.assertAlmostEqual(r["mean_e2el_ms"], one, places=6)
        self.assertAlmostEqual(r["output_throughput"], 5 * 64 / (5 * one / 1e3), places=6)
        self.assertEqual((r["completed"], r["total_input_tokens"], r["total_output_tokens"]), (5, 5 * 512, 5 * 64))
        self.assertEqual(r["max_concurrent_requests"], 1)

    def test_a_prefill_beside_decodes_stalls_them(self):
        # C = 2, all sent at once: step 1 prefills both (1024 tokens fit one 8192-token step), then both decode.
        # Each step costs 10 ms, 30 more with a prompt in it. No new prompt ever arrives (2 prompts): no stall.
        with ConstantSteps(decode=10.0, prefill=30.0):
            r = m.bench_result(m.serve_run(DEP, closed(2, 2)), closed(2, 2), DEP)
        self.assertAlmostEqual(r["mean_ttft_ms"], 40.0, places=6)
        self.assertAlmostEqual(r["p99_tpot_ms"], 10.0, places=6)
        # Three prompts at C = 2: the third arrives when the first two end (step 64) and prefills alone.
        with ConstantSteps(decode=10.0, prefill=30.0):
            r = m.bench_result(m.serve_run(DEP, closed(2, 3)), closed(2, 3), DEP)
        self.assertAlmostEqual(r["duration"], (40 + 63 * 10 + 40 + 63 * 10) / 1e3, places=9)

    def test_vllm_budget_and_sglang_prefill_first(self):
        # 8B on an H100 (80 GiB): vLLM steps carry 8192 tokens (arg_utils.py), SGLang chunks 8192 (memory_hook.py).
        self.assertEqual(m.step_budget(DEP), 8192)
        sglang = m.make_deployment("llama-3.1-8b", "h100-sxm", 1, "bf16", engine="sglang", input_tokens=512,
                                   output_tokens=64)
        # Long-lived decodes, then a stream of prompts: under SGLang's prefill-first scheduling a decode waits
        # out every prefill step; vLLM's mixed step carries it. With C = 2 and one request ending at a time,
        # the difference is visible in the decodes' ITL.
        work = closed(2, 40, output=64, spread=0.8)
        with ConstantSteps(decode=10.0, prefill=30.0):
            mixed = m.bench_result(m.serve_run(DEP, work), work, DEP)
            alone = m.bench_result(m.serve_run(sglang, work, plan_batch=2), work, sglang)
        self.assertAlmostEqual(mixed["p99_itl_ms"], 40.0, places=6)   # a mixed step: 10 + 30
        self.assertAlmostEqual(alone["p99_itl_ms"], 50.0, places=6)              # prefill alone, then a decode

    def test_acceptance_counts_follow_the_chain(self):
        # Per position p the chain accepts with alpha^(p + 1); tau = 1 + sum of them.
        work = closed(8, 200, output=256)
        r = m.bench_result(m.serve_run(DEP, work, k=3, alpha=0.6, spread=0.0), work, DEP)
        for p, rate in enumerate(r["spec_decode_per_position_acceptance_rates"]):
            self.assertAlmostEqual(rate, 0.6 ** (p + 1), places=9)
        self.assertAlmostEqual(r["spec_decode_acceptance_length"], m.acceptance_length(0.6, 3), places=9)
        # Rounds: each request needs about its 255 tokens over tau of them (renewal theory), within 2%.
        self.assertAlmostEqual(r["spec_decode_num_drafts"] / (200 * 255 / m.acceptance_length(0.6, 3)), 1.0,
                               delta=0.02)


class Capacity(unittest.TestCase):
    def test_tensorrt_llm_reserves_the_whole_answer(self):
        # vLLM grows a sequence's KV block by block: on average a running request holds its prompt and half its
        # answer. TensorRT-LLM's GUARANTEED_NO_EVICT starts one only when prompt and whole answer fit.
        per_token = {}
        for engine in ("vllm", "trtllm"):
            dep = m.make_deployment("llama-3.1-8b", "h100-sxm", 1, "bf16", draft="eagle3", engine=engine,
                                    input_tokens=2048, output_tokens=2048)
            free = m.memory_budget_bytes(dep) - m.static_bytes(m.replace(dep, drafter=m.NO_MODEL))
            per_token[engine] = dep.target.kv_bytes_per_token
            held = 2048 + (2048 if engine == "trtllm" else 1024)
            self.assertEqual(m.running_cap(dep, False, 4096), min(1024 if engine == "vllm" else 4096,
                                                                   int(free // (held * per_token[engine]))))


class QueueingTheory(unittest.TestCase):
    # With a step of constant cost D whatever it carries, a request holds one of the server's c slots for
    # exactly L steps (its prefill and L - 1 decodes): an M/D/c queue, its service S = L D.
    D, L = 10.0, 20

    def open_run(self, rate, prompts, cap, seed=0):
        work = m.Workload(num_prompts=prompts, max_concurrency=None, request_rate=rate, burstiness=1.0,
                          input_tokens=512, output_tokens=self.L, output_spread=0.0)
        with ConstantSteps(decode=self.D), mock.patch.object(m, "running_cap", lambda dep, spec, batch=None: cap):
            return m.bench_result(m.serve_run(DEP, work, seed=seed), work, DEP)

    def test_m_d_1_waiting_time_is_pollaczek_khinchine(self):
        service = self.L * self.D / 1e3
        rho = 0.6
        r = self.open_run(rho / service, 20000, 1)
        wait = rho * service / (2 * (1 - rho))    # M/D/1: Wq = rho S / (2 (1 - rho))
        # TTFT = the wait, half a step to the next step boundary on average, and the prefill step.
        expected = wait + (0.5 + 1) * self.D / 1e3
        self.assertAlmostEqual(r["mean_ttft_ms"] / 1e3 / expected, 1.0, delta=0.05)

    def test_past_saturation_throughput_stops_and_ttft_grows_with_the_run(self):
        cap = 8
        service_rate = cap / (self.L * self.D / 1e3)             # requests/s the slots can finish
        small, large = (self.open_run(3 * service_rate, n, cap) for n in (1000, 2000))
        for r in (small, large):
            self.assertAlmostEqual(r["request_throughput"] / service_rate, 1.0, delta=0.02)
        # In overload the k-th request waits about k (1 / mu - 1 / R): the mean doubles with the run.
        for r, n in ((small, 1000), (large, 2000)):
            wait = n / 2 * (1 / service_rate - 1 / (3 * service_rate))
            self.assertAlmostEqual(r["mean_ttft_ms"] / 1e3 / wait, 1.0, delta=0.05)
        self.assertGreater(large["mean_ttft_ms"], 1.9 * small["mean_ttft_ms"])

    def test_below_saturation_throughput_follows_the_rate(self):
        cap = 8
        service_rate = cap / (self.L * self.D / 1e3)
        small, large = (self.open_run(0.5 * service_rate, n, cap) for n in (1000, 2000))
        for r in (small, large):
            self.assertAlmostEqual(r["request_throughput"] / (0.5 * service_rate), 1.0, delta=0.05)
        self.assertAlmostEqual(large["mean_ttft_ms"] / small["mean_ttft_ms"], 1.0, delta=0.1)


class VllmArithmetic(unittest.TestCase):
    def test_every_statistic_as_calculate_metrics_takes_it(self):
        run_ = m.serve_run(DEP, closed(8, 60, spread=0.8), k=3, alpha=0.7)
        r = m.bench_result(run_, closed(8, 60, spread=0.8), DEP)
        ttft = [f - s for s, f in zip(run_.start, run_.first)]
        tpot = [(e - f) / (n - 1) for f, e, n in zip(run_.first, run_.end, run_.output_tokens) if n > 1]
        itl = [gap for gap, count in run_.itl for _ in range(count)]
        for name, values in (("ttft", ttft), ("tpot", tpot), ("itl", itl)):
            p = statistics.quantiles(values, n=100, method="inclusive")   # numpy's linear percentiles
            self.assertAlmostEqual(r[f"p99_{name}_ms"], p[98] * 1e3, places=6)
            self.assertAlmostEqual(r[f"median_{name}_ms"], statistics.median(values) * 1e3, places=6)
            self.assertAlmostEqual(r[f"mean_{name}_ms"], statistics.fmean(values) * 1e3, places=6)
            self.assertAlmostEqual(r[f"std_{name}_ms"], statistics.pstdev(values) * 1e3, places=6)
        # One ITL per chunk after the first token: a request's chunks are its rounds.
        self.assertEqual(len(itl), r["spec_decode_num_drafts"])
        self.assertEqual(r["total_output_tokens"], sum(run_.output_tokens))


class TheTail(unittest.TestCase):
    def test_p99_tpot_at_load_carries_the_prefill_stalls(self):
        # Plain decoding at C = 128: answers of spread length end one by one, each bringing a prompt that a
        # step prefills beside the decodes. Short requests that meet several of those steps are the P99.
        work = closed(128, 1280, output=256, spread=0.8)
        r = m.bench_result(m.serve_run(DEP, work), work, DEP)
        self.assertGreater(r["p99_tpot_ms"], 1.15 * r["mean_tpot_ms"])
        # Without what a prompt adds to a step, the same run's P99 is its mean's, jitter and all.
        free = mock.patch.object(m, "step_cost", lambda dep, d, k, p, fit, real=m.step_cost: real(dep, d, k, 0, fit))
        with free:
            flat = m.bench_result(m.serve_run(DEP, work), work, DEP)
        self.assertLess(flat["p99_tpot_ms"], 1.05 * flat["mean_tpot_ms"])


class TwoSimulations(unittest.TestCase):
    def test_the_step_simulation_meets_the_closed_form_mean(self):
        # The grid's mean TPOT (plain_step_ms; spec_tpot_ms over round_ms) averages a step's prefill share in
        # closed form, (B - 1) I / O prompt tokens a step; serve_run charges each step the prompts it carries.
        # Two implementations of one model: their mean TPOTs agree within 3% at C = 32 and 128.
        for batch in (32, 128):
            work = closed(batch, 10 * batch, output=256, spread=0.8)
            dep = m.at_lengths(DEP, 512, 256)
            plain = m.bench_result(m.serve_run(dep, work), work, dep)
            self.assertAlmostEqual(plain["mean_tpot_ms"] / m.plain_step_ms(dep, batch), 1.0, delta=0.03)
            spec = m.bench_result(m.serve_run(dep, work, k=3, alpha=0.7, spread=0.0), work, dep)
            closed_form = m.spec_tpot_ms(dep, batch, 1 / m.acceptance_length(0.7, 3), m.round_ms(dep, batch, 3))
            self.assertAlmostEqual(spec["mean_tpot_ms"] / closed_form, 1.0, delta=0.03)


class PredictBench(unittest.TestCase):
    def test_files_in_vllms_schema_and_refused_as_measurements(self):
        with tempfile.TemporaryDirectory() as tmp:
            status, out, err = run(SMALL + ["--predict-bench", tmp])
            self.assertEqual(status, 0, err)
            names = sorted(p.name for p in Path(tmp).iterdir())
            self.assertEqual(names, ["baseline_c1.json", "baseline_c8.json", "spec_k3_c1.json", "spec_k3_c8.json"])
            data = json.loads((Path(tmp) / "spec_k3_c8.json").read_text())
            for key in ("duration", "completed", "total_input_tokens", "total_output_tokens", "request_throughput",
                        "output_throughput", "total_token_throughput", "max_concurrency", "request_rate",
                        "mean_ttft_ms", "p99_tpot_ms", "median_itl_ms", "p99_e2el_ms", "spec_decode_num_drafts",
                        "spec_decode_acceptance_length", "spec_decode_per_position_acceptance_rates"):
                self.assertIn(key, data)
            self.assertEqual((data["max_concurrency"], data["request_rate"], data["num_prompts"]), (8, "inf", 200))
            low, high = data[m.PREDICTION_KEY]["intervals"]["mean_tpot_ms"]
            self.assertLess(low, data["mean_tpot_ms"])
            self.assertGreater(high, data["mean_tpot_ms"])
            self.assertIn("spec_k3_c8.json", out)
            # A prediction is no measurement: the readers refuse it.
            status, _, err = run(SMALL + ["--bench-baseline", str(Path(tmp) / "baseline_c8.json"),
                                          "--bench-spec", str(Path(tmp) / "spec_k3_c8.json")])
            self.assertEqual(status, 2)
            self.assertIn("is a prediction this tool wrote", err)
            # A second run replaces its own predictions, never a measured file.
            status, _, err = run(SMALL + ["--predict-bench", tmp])
            self.assertEqual(status, 0, err)
            (Path(tmp) / "baseline_c1.json").write_text(json.dumps({"completed": 1}))
            status, _, err = run(SMALL + ["--predict-bench", tmp])
            self.assertEqual(status, 2)
            self.assertIn("is not a prediction this tool wrote", err)
            self.assertEqual(json.loads((Path(tmp) / "baseline_c1.json").read_text()), {"completed": 1})

    def test_same_seed_same_bytes(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            for tmp in (a, b):
                self.assertEqual(run(SMALL + ["--predict-bench", tmp])[0], 0)
            for name in ("baseline_c8.json", "spec_k3_c8.json"):
                self.assertEqual((Path(a) / name).read_bytes(), (Path(b) / name).read_bytes())

    def test_open_loop_files_and_speculations_lower_capacity(self):
        # 8B on one RTX 4090 (24 GiB): the draft's weights and KV leave fewer sequences; past the service rate the
        # speculative run admits fewer at once.
        with tempfile.TemporaryDirectory() as tmp:
            status, out, err = run(SMALL + ["--gpu", "rtx-4090", "--predict-bench", tmp, "--request-rate", "50",
                                            "--num-prompts", "300"])
            self.assertEqual(status, 0, err)
            base = json.loads((Path(tmp) / "baseline_r50.json").read_text())
            spec = json.loads((Path(tmp) / "spec_k3_r50.json").read_text())
        self.assertEqual((base["request_rate"], base["max_concurrency"], base["num_prompts"]), (50, None, 300))
        self.assertLess(spec[m.PREDICTION_KEY]["running_cap"], base[m.PREDICTION_KEY]["running_cap"])
        self.assertLessEqual(spec["max_concurrent_requests"], base["max_concurrent_requests"] + 0)

    def test_flags_that_need_predict_bench(self):
        for flags in (["--num-prompts", "10"], ["--request-rate", "2"], ["--burstiness", "0.5"]):
            status, _, err = run(SMALL + flags)
            self.assertEqual(status, 2)
            self.assertIn("give --predict-bench DIR too", err)
        with tempfile.TemporaryDirectory() as tmp:
            for flags, words in ((["--request-rate", "0"], "a rate above 0"), (["--num-prompts", "0"], "1 to"),
                                 (["--burstiness", "nan"], "0.01 to 100")):
                status, _, err = run(SMALL + ["--predict-bench", tmp] + flags)
                self.assertEqual(status, 2, flags)
                self.assertIn(words, err)
                self.assertEqual(list(Path(tmp).iterdir()), [])
        status, _, err = run(SMALL + ["--predict-bench", "/no/such/folder"])
        self.assertEqual((status, "is not an existing folder" in err), (2, True))


class Compare(unittest.TestCase):
    def test_a_run_compared_with_its_own_prediction(self):
        # Strip the prediction's mark and hand it back as a measurement: the replay reads its lengths,
        # concurrency, prompts and acceptance from the file, so every key comes back within a few percent (the
        # acceptance is re-derived from the counts as one chain's alpha, the requests' spread aside).
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(run(SMALL + ["--predict-bench", tmp])[0], 0)
            paths = []
            for name in ("baseline_c8.json", "spec_k3_c8.json"):
                data = json.loads((Path(tmp) / name).read_text())
                del data[m.PREDICTION_KEY]
                path = Path(tmp) / f"measured_{name}"
                path.write_text(json.dumps(data))
                paths.append(str(path))
            status, out, err = run(SMALL + ["--compare", ",".join(paths), "--json"])
        self.assertEqual(status, 0, err)
        data = json.loads(out)["compare"]
        base, spec = data
        self.assertEqual((base["k"], spec["k"]), (0, 3))
        for row in base["keys"]:
            self.assertAlmostEqual(row["error"], 0.0, places=9, msg=row["key"])
        # The speculative replay centres its requests on the file's tau (center_requests), so they draw other
        # rounds than the original's: the headline keys agree within 2%, spreads (std_*) within 8%.
        headline = {"output_throughput", "mean_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "p99_itl_ms", "mean_e2el_ms"}
        for row in spec["keys"]:
            self.assertLess(abs(row["error"]), 0.02 if row["key"] in headline else 0.08, row["key"])
        self.assertEqual({row["key"] for row in spec["keys"]} & headline, headline)

    def test_a_run_of_spread_lengths_replays_its_tail(self):
        # Answers of spread length (s.d. 1.0 in log): the replay infers the spread from the file's own E2EL and
        # TTFT spreads and keeps its total; P99 TPOT, set by the short requests that meet prefills, comes back
        # within 10% (the draws are others than the original's), mean TPOT within 2%.
        dep = m.make_deployment("llama-3.1-8b", "h100-sxm", 1, "bf16", input_tokens=512, output_tokens=256)
        work = m.bench_workload(dep, 64, output_spread=1.0)
        pb = m.predict_bench(dep, "x.json", work, 0, 0.0, m.trust_in(dep))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "x.json"
            path.write_text(json.dumps(pb.result))
            status, out, err = run(["--model", "llama-3.1-8b", "--tp", "1", "--weights-dtype", "bf16",
                                    "--input-tokens", "512", "--output-tokens", "256", "--alphas", "0.7", "--ks", "3",
                                    "--concurrency", "64", "--no-write", "--compare", str(path), "--json"])
        self.assertEqual(status, 0, err)
        data = json.loads(out)["compare"][0]
        errors = {row["key"]: row["error"] for row in data["keys"]}
        self.assertLess(abs(errors["mean_tpot_ms"]), 0.02)
        self.assertLess(abs(errors["p99_tpot_ms"]), 0.10)
        self.assertTrue(any("as its E2EL and TTFT spreads imply" in note for note in data["notes"]), data["notes"])

    def test_compare_refuses_what_it_cannot_replay(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "x.json"
            path.write_text(json.dumps({"completed": 10, "mean_tpot_ms": 10.0, "total_input_tokens": 5120,
                                        "total_output_tokens": 640, "request_rate": "inf", "max_concurrency": None,
                                        "model_id": "meta-llama/Llama-3.1-8B-Instruct"}))
            status, _, err = run(SMALL + ["--compare", str(path)])
        self.assertEqual(status, 2)
        self.assertIn("neither max_concurrency nor a request rate", err)


if __name__ == "__main__":
    unittest.main()
