"""A benchmark run simulated step by step (serve_run), the files it predicts (--predict-bench) and their
comparison with measured ones (--compare): hand counts, queueing theory and vLLM's own arithmetic."""
import dataclasses
import json
import math
import statistics
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import support
from support import build_deployment, run

from rollout import acceptance, calibration, catalog, costmodel, deployment, serving, trust, workload


DEP = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=512, output_tokens=64)
SMALL = ["--model", "llama-3.1-8b", "--tp", "1", "--weights-dtype", "bf16", "--input-tokens", "512",
         "--output-tokens", "64", "--alphas", "0.7", "--ks", "3", "--concurrency", "1,8", "--no-write"]


def closed(batch, prompts, output=64, spread=0.0, rate=math.inf):
    return workload.Workload(num_prompts=prompts, max_concurrency=batch, request_rate=rate, burstiness=1.0,
                      input_tokens=512, output_tokens=output, output_spread=spread)


class ConstantSteps:
    """Every step costs `decode` ms, plus `prefill` ms when it carries prompt tokens; no jitter."""

    def __init__(self, decode, prefill=0.0):
        self.decode, self.prefill = decode, prefill

    def __enter__(self):
        self.patches = [mock.patch.object(serving, "step_cost", lambda dep, d, k, p, fit: self.decode + (self.prefill if p
                                                                                                  else 0.0)),
                        mock.patch.object(serving, "STEP_JITTER", [1.0] * serving.JITTER_LEVELS)]
        for p in self.patches:
            p.start()
        serving.RUN_MEMO.clear()   # runs simulated at the real step costs are not these
        serving.COST_TABLES.clear()
        return self

    def __exit__(self, *exc):
        for p in self.patches:
            p.stop()
        serving.RUN_MEMO.clear()
        serving.COST_TABLES.clear()


class HandCounts(unittest.TestCase):
    def test_one_slot_runs_requests_back_to_back(self):
        # C = 1, 64 output tokens: a request is one prefill step (its first token) and 63 decode steps.
        # Each request reaches the server request_ms after its send (the client and API server): in its TTFT and
        # E2EL, and a gap the one slot waits through between requests.
        with ConstantSteps(decode=10.0, prefill=30.0):
            r = serving.bench_result(support.serve_run(DEP, closed(1, 5)), closed(1, 5), DEP)
        request = costmodel.FIT.request_ms
        one = request + (10.0 + 30.0) + 63 * 10.0                     # ms: the prefill step decodes nothing
        self.assertAlmostEqual(r["duration"], 5 * one / 1e3, places=9)
        self.assertAlmostEqual(r["mean_ttft_ms"], request + 40.0, places=6)
        self.assertAlmostEqual(r["mean_tpot_ms"], 10.0, places=6)
        self.assertAlmostEqual(r["p99_itl_ms"], 10.0, places=6)
        self.assertAlmostEqual(r["mean_e2el_ms"], one, places=6)
        self.assertAlmostEqual(r["output_throughput"], 5 * 64 / (5 * one / 1e3), places=6)
        self.assertEqual((r["completed"], r["total_input_tokens"], r["total_output_tokens"]), (5, 5 * 512, 5 * 64))
        self.assertEqual(r["max_concurrent_requests"], 1)

    def test_a_prefill_beside_decodes_stalls_them(self):
        # C = 2, three requests of spread length, sent at once: step 1 prefills A and B (1024 tokens fit one
        # 8192-token step). When the shorter, A, ends, C is sent, and the next step prefills it beside B's decode:
        # 10 + 30 ms, B's one stalled chunk.
        work = closed(2, 3, output=64, spread=0.8)
        with ConstantSteps(decode=10.0, prefill=30.0):   # no request cost: C reaches the step right after A's end
            served = support.serve_run(DEP, work, fit=costmodel.FIT._replace(request_ms=0.0))
            r = serving.bench_result(served, work, DEP)
        a, b, c = served.output_tokens
        self.assertNotEqual(a, b)
        short, long_ = min(a, b), max(a, b)
        self.assertGreater(long_ - short, 1)   # the long one still decodes when the third arrives
        ends = sorted(e * 1e3 for e in served.end)
        self.assertAlmostEqual(ends[0], 40 + (short - 1) * 10, places=6)            # the short one
        self.assertAlmostEqual(ends[1], 40 + (long_ - 1) * 10 + 30, places=6)       # the long one, one stall
        self.assertAlmostEqual(max(served.itl)[0] * 1e3, 40.0, places=6)
        self.assertEqual(dict(served.itl)[0.04], 1)                                  # one chunk waited for C
        # C's own: sent at A's end, its first token with the next step (a prefill beside B), then alone or not.
        self.assertAlmostEqual(r["max_concurrent_requests"], 2)

    def test_vllm_budget_and_sglang_prefill_first(self):
        # 8B on an H100 (80 GiB): vLLM steps carry 8192 tokens (arg_utils.py), SGLang chunks 8192 (memory_hook.py).
        self.assertEqual(deployment.step_budget(DEP), 8192)
        sglang = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", engine="sglang", input_tokens=512,
                                   output_tokens=64)
        # Long-lived decodes, then a stream of prompts: under SGLang's prefill-first scheduling a decode waits
        # out every prefill step; vLLM's mixed step carries it. With C = 2 and one request ending at a time,
        # the difference is visible in the decodes' ITL.
        work = closed(2, 40, output=64, spread=0.8)
        with ConstantSteps(decode=10.0, prefill=30.0):
            mixed = serving.bench_result(support.serve_run(DEP, work), work, DEP)
            alone = serving.bench_result(support.serve_run(sglang, work, plan_batch=2), work, sglang)
        self.assertAlmostEqual(mixed["p99_itl_ms"], 40.0, places=6)   # a mixed step: 10 + 30
        self.assertAlmostEqual(alone["p99_itl_ms"], 50.0, places=6)              # prefill alone, then a decode

    def test_rounds_deliver_tau_tokens(self):
        # A request's rounds are drawn (decode_request, renewal_draw), its tokens are not: the tokens after the
        # first over the rounds that made them is tau = 1 + a + a^2 + a^3, less the last round's cut-off.
        for output in (40, 256):   # the round-by-round loop and the renewal limit
            work = closed(8, 400, output=output)
            r = serving.bench_result(support.serve_run(DEP, work, k=3, alpha=0.6, spread=0.0), work, DEP)
            tau = acceptance.acceptance_length(0.6, 3)
            realized = (r["total_output_tokens"] - r["completed"]) / r["spec_decode_num_drafts"]
            # the last round of a request delivers on average (E[T^2] / E[T] - 1) / 2 tokens past its end
            square = acceptance.round_moments(0.6, 3)[1]
            rounds = (output - 1) / tau + (square - tau) / (2 * tau * tau)
            self.assertAlmostEqual(realized / ((output - 1) / rounds), 1.0, delta=0.02)


class DraftSlots(unittest.TestCase):
    def test_vllm_0_17_to_0_27_take_a_slot_a_sequence_off_a_draft_models_budget(self):
        # A100: 2048 tokens a step, 256 sequences. Seven 512-token prompts at once, K = 3. At 0.16 a step holds four
        # prompts, then the four decodes' 16 tokens and the other three: two steps. At 0.20 the budget is
        # 2048 - 256 = 1792: three prompts and 256 tokens; then 12 decode tokens, the 256 left, two prompts and 500
        # of the last; then its 12: three steps.
        dep = build_deployment("llama-3.1-8b", "a100-sxm-80gb", 1, weights_dtype="bf16", draft="llama-3.2-1b")
        for release, steps in (("0.16", 2), ("0.20", 3), ("0.28", 2)):
            at = dataclasses.replace(dep, release=catalog.release_of(release))
            with self.subTest(release=release), ConstantSteps(decode=10.0, prefill=30.0):
                run_ = support.simulate_run(at, closed(7, 7, output=64), 3, 0.7)
                self.assertEqual(len(set(run_.first)), steps)


class Capacity(unittest.TestCase):
    def test_tensorrt_llm_reserves_the_whole_answer(self):
        # vLLM grows a sequence's KV block by block: on average a running request holds its prompt and half its
        # answer. TensorRT-LLM's GUARANTEED_NO_EVICT starts one only when prompt and whole answer fit: with
        # 2048 + 2048 tokens, 4096 against 3072 held, three quarters as many run.
        dep = build_deployment("llama-3.1-8b", "h200", 1, weights_dtype="bf16", draft="eagle3", input_tokens=2048,
                                output_tokens=2048)
        reserving = dataclasses.replace(dep, engine=dataclasses.replace(dep.engine, reserves_whole_request=True))
        grows, holds = deployment.running_cap(dep, False), deployment.running_cap(reserving, False)
        self.assertGreater(grows, 200)                       # whole sequences: the ratio is not rounding's
        self.assertAlmostEqual(holds / grows, 3072 / 4096, delta=0.01)
        self.assertTrue(catalog.ENGINES["trtllm"].reserves_whole_request)
        self.assertFalse(catalog.ENGINES["vllm"].reserves_whole_request or catalog.ENGINES["sglang"].reserves_whole_request)


class QueueingTheory(unittest.TestCase):
    # With a step of constant cost D whatever it carries, a request holds one of the server's c slots for
    # exactly L steps (its prefill and L - 1 decodes): an M/D/c queue, its service S = L D.
    D, L = 10.0, 20

    def open_run(self, rate, prompts, cap, seed=0):
        work = workload.Workload(num_prompts=prompts, max_concurrency=None, request_rate=rate, burstiness=1.0,
                          input_tokens=512, output_tokens=self.L, output_spread=0.0)
        with ConstantSteps(decode=self.D), mock.patch.object(serving, "running_cap", lambda dep, spec, batch=None: cap):
            return serving.bench_result(support.serve_run(DEP, work, seed=seed), work, DEP)

    def test_m_d_1_waiting_time_is_pollaczek_khinchine(self):
        # An idle server starts a request as it arrives and a busy one as the last ends: TTFT is the M/D/1 wait
        # plus the prefill step. Tolerance: 4 standard errors of the mean, from 20 batches of 1,000 requests.
        service = self.L * self.D / 1e3
        for rho in (0.3, 0.6):
            work = workload.Workload(num_prompts=20000, max_concurrency=None, request_rate=rho / service, burstiness=1.0,
                              input_tokens=512, output_tokens=self.L, output_spread=0.0)
            with ConstantSteps(decode=self.D), mock.patch.object(serving, "running_cap", lambda dep, spec, batch=None: 1):
                served = support.serve_run(DEP, work)
            ttft = [f - s for s, f in zip(served.start, served.first)]
            batches = [statistics.fmean(ttft[i:i + 1000]) for i in range(0, 20000, 1000)]
            se = statistics.stdev(batches) / math.sqrt(len(batches))
            expected = (rho * service / (2 * (1 - rho)) + self.D / 1e3    # Wq = rho S / (2 (1 - rho)), then D,
                        + costmodel.FIT.request_ms / 1e3)                 # after the request's way in
            self.assertLess(abs(statistics.fmean(ttft) - expected), 4 * se, rho)
            if rho == 0.3:   # where it can tell this from a wait for the next step's start (half a step more)
                self.assertLess(4 * se, 0.5 * self.D / 1e3)

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


class LittlesLaw(unittest.TestCase):
    def test_a_closed_loop_holds_its_concurrency(self):
        """Little's law, L = X W: a closed loop keeps C requests in flight from send to last token, so its request
        throughput times its mean E2EL is C, whatever the steps cost. Checked on the real step costs, jitter and
        decode stretches taken in one move, at C = 1 (every step decode-only but one), 16 and 64, off and on. The
        answers are capped at their mean (as the plan's runs cap them), so the last wave's drain (at most one
        answer's time with fewer than C in flight) is under 1% of 200 requests a slot."""
        for c, k in ((1, 0), (16, 3), (64, 0), (64, 2)):
            with self.subTest(concurrency=c, k=k):
                work = dataclasses.replace(closed(c, 200 * c, output=128, spread=0.8), output_cap=128)
                run_ = support.serve_run(DEP, work, k=k, alpha=0.7)
                r = serving.bench_result(run_, work, DEP)
                in_flight = r["request_throughput"] * r["mean_e2el_ms"] / 1e3
                self.assertAlmostEqual(in_flight / c, 1.0, delta=0.01)

    def test_an_open_loop_s_time_in_system(self):
        """Little's law on the sample path of an open loop below saturation: the requests in the server, integrated
        over the run, are the sum of their times in it; over 2,000 Poisson arrivals that mean number is the arrival
        rate times the mean E2EL within the rate's own sampling error (the send times are rescaled to end at N / R:
        the realised rate is N over the last send)."""
        work = workload.Workload(num_prompts=2000, max_concurrency=None, request_rate=20.0, burstiness=1.0,
                                input_tokens=512, output_tokens=64, output_spread=0.8)
        run_ = support.serve_run(DEP, work, k=3, alpha=0.7)
        events = sorted([(t, 1) for t in run_.start] + [(t, -1) for t in run_.end])
        area, level, last = 0.0, 0, events[0][0]
        for t, step in events:   # the integral of the number in the system, counted step by step
            area += level * (t - last)
            level, last = level + step, t
        mean_in_system = area / (max(run_.end) - min(run_.start))
        rate = len(run_.start) / (max(run_.end) - min(run_.start))
        mean_e2el = statistics.fmean(e - s for s, e in zip(run_.start, run_.end))
        self.assertAlmostEqual(mean_in_system / (rate * mean_e2el), 1.0, delta=1e-9)   # the identity, exactly
        self.assertAlmostEqual(rate / work.request_rate, 1.0, delta=0.02)              # the client's rate, sampled
        self.assertGreater(mean_in_system, 2.0)   # a loaded server, not one request at a time


class VllmArithmetic(unittest.TestCase):
    def test_every_statistic_as_calculate_metrics_takes_it(self):
        run_ = support.serve_run(DEP, closed(8, 60, spread=0.8), k=3, alpha=0.7)
        r = serving.bench_result(run_, closed(8, 60, spread=0.8), DEP)
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
        r = serving.bench_result(support.simulate_run(DEP, work), work, DEP)   # simulated afresh: not RUN_MEMO's
        self.assertGreater(r["p99_tpot_ms"], 1.15 * r["mean_tpot_ms"])
        # Without what a prompt adds to a step, the same run's P99 is its mean's, jitter and all.
        free = mock.patch.object(serving, "step_cost", lambda dep, d, k, p, fit, real=serving.step_cost: real(dep, d, k, 0, fit))
        serving.COST_TABLES.clear()   # the tables hold the real steps' costs
        with free:
            flat = serving.bench_result(support.simulate_run(DEP, work), work, DEP)
        serving.COST_TABLES.clear()
        self.assertLess(flat["p99_tpot_ms"], 1.05 * flat["mean_tpot_ms"])


class TwoSimulations(unittest.TestCase):
    def test_the_step_simulation_meets_the_closed_form_mean(self):
        # The grid's mean TPOT (plain_step_ms; spec_tpot_ms over round_ms) averages a step's prefill share in
        # closed form, (B - 1) I / O prompt tokens a step; serve_run charges each step the prompts it carries.
        # With read and math added (overlap 1) they are two implementations of one model: their mean TPOTs agree
        # within 3% at C = 32 and 128. With the fitted overlap a prompt chunk costs more beside a verify pass (whose
        # math already weighs against the read) than beside a plain step, which the closed form charges in both:
        # the simulation's speculative mean is then above it (5% at C = 32, 11% at C = 128 here: the closed form's
        # known shortfall under load, left for the prefill share to be charged at the verify pass's margin).
        for fit in (costmodel.FIT._replace(overlap=1.0), costmodel.FIT):
            for batch in (32, 128):
                work = closed(batch, 10 * batch, output=256, spread=0.8)
                dep = deployment.at_lengths(DEP, 512, 256)
                plain = serving.bench_result(support.serve_run(dep, work, fit=fit), work, dep)
                self.assertAlmostEqual(plain["mean_tpot_ms"] / costmodel.plain_step_ms(dep, batch, fit), 1.0, delta=0.03)
                spec = serving.bench_result(support.serve_run(dep, work, k=3, alpha=0.7, spread=0.0, fit=fit), work, dep)
                closed_form = costmodel.spec_tpot_ms(dep, batch, 1 / acceptance.acceptance_length(0.7, 3),
                                                     costmodel.round_ms(dep, batch, 3, fit), fit)
                if fit.overlap == 1.0:
                    self.assertAlmostEqual(spec["mean_tpot_ms"] / closed_form, 1.0, delta=0.03)
                else:
                    self.assertGreater(spec["mean_tpot_ms"] / closed_form, 1.0)


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
            low, high = data[workload.PREDICTION_KEY]["intervals"]["mean_tpot_ms"]
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

    def test_answers_of_the_traffic_s_lengths(self):
        # The files send the traffic's workload, as the SLO search does: answers spread (OUTPUT_SPREAD) around a
        # mean that is --output-tokens after the cut; with --output-spread 0 and --input-spread 0, the plan's
        # random-prompt runs (--ignore-eos: every answer and prompt as long).
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            self.assertEqual(run(SMALL + ["--predict-bench", a])[0], 0)
            self.assertEqual(run(SMALL + ["--predict-bench", b, "--output-spread", "0", "--input-spread", "0"])[0], 0)
            spread, fixed = (json.loads((Path(d) / "baseline_c8.json").read_text()) for d in (a, b))
        self.assertEqual((spread[workload.PREDICTION_KEY]["output_spread"], fixed[workload.PREDICTION_KEY]["output_spread"]),
                         (support.main.SETTINGS.output_spread, 0.0))
        self.assertEqual(fixed["total_output_tokens"], 64 * fixed["completed"])
        self.assertEqual(fixed["total_input_tokens"], 512 * fixed["completed"])
        self.assertNotEqual(spread["total_output_tokens"], 64 * spread["completed"])
        self.assertAlmostEqual(spread["total_output_tokens"] / spread["completed"], 64, delta=0.02 * 64)
        self.assertAlmostEqual(spread["total_input_tokens"] / spread["completed"], 512, delta=0.02 * 512)

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
        self.assertLess(spec[workload.PREDICTION_KEY]["running_cap"], base[workload.PREDICTION_KEY]["running_cap"])
        self.assertLessEqual(spec[workload.PREDICTION_KEY]["peak_running"], spec[workload.PREDICTION_KEY]["running_cap"])

    def test_flags_that_need_predict_bench(self):
        status, _, err = run(SMALL + ["--request-rate", "2"])
        self.assertEqual(status, 2)
        self.assertIn("give --predict-bench DIR too", err)
        for flags, words in ((["--num-prompts", "9"], "an integer from 10 to"), (["--burstiness", "0"], "0.01 to 100"),
                             (["--num-prompts", "5001"], "at most 5,000 here")):   # the SLO search's runs send them
            status, _, err = run(SMALL + ["--no-write"] + flags)   # they shape the SLO search's runs too
            self.assertEqual(status, 2, flags)
            self.assertIn(words, err)
        with tempfile.TemporaryDirectory() as tmp:
            for flags, words in ((["--request-rate", "0"], "a rate from 0.001"), (["--num-prompts", "0"], "10 to"),
                                 (["--burstiness", "nan"], "0.01 to 100")):
                status, _, err = run(SMALL + ["--predict-bench", tmp] + flags)
                self.assertEqual(status, 2, flags)
                self.assertIn(words, err)
                self.assertEqual(list(Path(tmp).iterdir()), [])
        status, _, err = run(SMALL + ["--predict-bench", "/no/such/folder"])
        self.assertEqual((status, "is not an existing folder" in err), (2, True))
        with tempfile.TemporaryDirectory() as tmp:
            for flags, words in ((["--ks", "plan,3"], "stands alone"),
                                 (["--ks", "plan", "--acceptance-length", "2.5"], "give --ks K"),
                                 (["--request-rate", "1.234567,1.234568"], "would both write baseline_r1.23457.json"),
                                 (["--num-prompts", "5000", "--input-tokens", "60000", "--gpu", "a100-sxm-80gb"],
                                  "steps' work")):
                status, _, err = run([a for a in SMALL if a not in ("--ks", "3")] + ["--predict-bench", tmp] + flags)
                self.assertEqual(status, 2, (flags, err))
                self.assertIn(words, err)
                self.assertEqual(list(Path(tmp).iterdir()), [])


class Compare(unittest.TestCase):
    def test_a_run_of_spread_lengths_replays_its_tail(self):
        # Answers of spread length (s.d. 1.0 in log): the replay infers the spread from the file's own E2EL and
        # TTFT spreads and keeps its total; P99 TPOT, set by the short requests that meet prefills, comes back
        # within 10% (the draws are others than the original's), mean TPOT within 2%.
        dep = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=512, output_tokens=256)
        work = workload.Workload(num_prompts=640, max_concurrency=64, request_rate=math.inf, burstiness=1.0,
                                 input_tokens=512, output_tokens=256, output_spread=1.0)
        pb = calibration.predict_bench(dep, "x.json", work, k=0, alpha=0.0, trust=trust.trust_in(dep),
                                     fit=costmodel.FIT, **support.replayed())
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

    def test_hostile_files_found_by_fuzzing(self):
        # A target holding the marker as a string, not a prediction's object, is someone else's: kept.
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "baseline_c1.json"
            target.write_text('["eagle3_rollout_prediction", "keep me"]')
            status, _, err = run(SMALL + ["--predict-bench", tmp])
            self.assertEqual(status, 2)
            self.assertIn("is not a prediction this tool wrote", err)
            self.assertEqual(target.read_text(), '["eagle3_rollout_prediction", "keep me"]')
            good = {"completed": 10, "mean_tpot_ms": 10.0, "std_e2el_ms": 5.0, "mean_e2el_ms": 700.0,
                    "total_input_tokens": 5120, "total_output_tokens": 640, "request_rate": "inf",
                    "max_concurrency": 2, "output_throughput": 0, "model_id": "meta-llama/Llama-3.1-8B-Instruct"}
            for change, words in (({"burstiness": 0}, "burstiness must be a number from 0.01 to 100; got 0"),
                                  ({"burstiness": "x"}, "burstiness must be a number from 0.01 to 100"),
                                  ({"request_rate": 1e-300, "max_concurrency": None}, "a rate from 0.001"),
                                  ({"completed": 10 ** 6, "total_input_tokens": 512 * 10 ** 6,
                                    "total_output_tokens": 64 * 10 ** 6}, "replays at most 100,000")):
                path = Path(tmp) / "m.json"
                path.write_text(json.dumps(dict(good, **change)))
                status, _, err = run(SMALL + ["--compare", str(path)])
                self.assertEqual(status, 2, change)
                self.assertIn(words, err)
            path.write_text(json.dumps(good))
            status, out, err = run(SMALL + ["--compare", str(path)])
            self.assertEqual(status, 0, err)
            self.assertIn("not compared, the file gives no value above 0:", " ".join(out.split()))
            self.assertIn("output_throughput", out.split("not compared")[1])
        status, _, err = run(SMALL + ["--predict-bench", "/tmp", "--request-rate", "1e-12"])
        self.assertEqual(status, 2)
        self.assertIn("a rate from 0.001", err)
        status, _, err = run(SMALL + ["--concurrency", "100000", "--predict-bench", "/tmp"])
        self.assertEqual(status, 2)
        self.assertIn("give --num-prompts", err)

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
