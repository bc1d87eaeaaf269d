"""Serving at an SLO: vLLM's goodput counted by hand, --slo's forms, the search's answer against runs of its own,
and the chart read back through its own axes."""
import contextlib
import dataclasses
import json
import math
import re
import statistics
import tempfile
import unittest
from pathlib import Path

import support
from support import build_deployment, run

from rollout import benchfiles, calibration, costmodel, deployment, flags, goodput, serving, trust, workload

from rollout.render import charts
from rollout.records import UsageError

DEP = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=512, output_tokens=256)
SMALL = ["--model", "llama-3.1-8b", "--tp", "1", "--weights-dtype", "bf16", "--input-tokens", "512",
         "--output-tokens", "256", "--alphas", "0.7", "--ks", "3", "--concurrency", "1,64"]


def hand_run(requests):
    """A ServedRun of (start s, first token s, end s, output tokens) rows, nothing else simulated."""
    start, first, end, tokens = zip(*requests)
    return serving.ServedRun(arrival=start, start=start, first=first, end=end, output_tokens=tokens,
                             input_tokens=(1,) * len(requests), itl=((0.01, 1),), peak_per_second=1.0, k=0,
                             drafts=0.0, accepted_at=(), cap=8, steps=1, peak_running=len(requests))


class VllmGoodput(unittest.TestCase):
    """calculate_metrics (vllm/benchmarks/serve.py): a request is good when each metric the SLO names is at most its
    bound; TPOT = (E2EL - TTFT) / (output - 1), and 0 for a one-token answer."""
    RUN = hand_run([
        (0.0, 0.100, 2.100, 101),   # TTFT 100 ms (on the bound: good), TPOT 20 ms, E2EL 2100
        (0.0, 0.101, 0.601, 51),    # TTFT 101: past a 100 ms TTFT bound; TPOT 10, E2EL 601
        (0.5, 0.550, 2.600, 42),    # TTFT 50, TPOT 2.05 s / 41 = 50 ms: past a 20 ms TPOT bound
        (1.0, 1.900, 1.900, 1),     # one token: TPOT 0, TTFT 900 ms
        (1.0, 1.050, 3.050, 201),   # TTFT 50, TPOT 10, E2EL 2050
    ])

    def test_counts_by_hand(self):
        for slo, good in (({"ttft": 100.0}, 3),                    # requests 1, 3, 5
                          ({"tpot": 20.0}, 4),                     # all but 3
                          ({"ttft": 100.0, "tpot": 20.0}, 2),      # 1 and 5
                          ({"e2el": 2060.0}, 3),                   # 2, 4 and 5 (1 and 3 take 2100)
                          ({"ttft": 1000.0, "tpot": 51.0, "e2el": 2101.0}, 5)):
            with self.subTest(slo=slo):
                self.assertEqual(serving.good_requests(self.RUN, slo), good)

    def test_request_goodput_is_good_requests_over_the_duration(self):
        work = workload.Workload(num_prompts=5, max_concurrency=8, request_rate=math.inf, burstiness=1.0,
                                input_tokens=1, output_tokens=79, output_spread=0.0)
        result = serving.bench_result(self.RUN, work, DEP, {"ttft": 100.0, "tpot": 20.0})
        self.assertEqual(result["duration"], 3.05)
        self.assertAlmostEqual(result["request_goodput"], 2 / 3.05, places=12)
        self.assertIsNone(serving.bench_result(self.RUN, work, DEP)["request_goodput"])   # no --goodput: null

    def test_a_simulated_run_counted_independently(self):
        work = workload.Workload(num_prompts=300, max_concurrency=32, request_rate=math.inf, burstiness=1.0,
                                input_tokens=512, output_tokens=256, output_spread=0.8, output_cap=256)
        served = support.serve_run(DEP, work, 3, 0.7)
        slo = {"ttft": 120.0, "tpot": 6.5}
        good = 0
        for s, f, e, n in zip(served.start, served.first, served.end, served.output_tokens):
            tpot_ms = (e - f) / (n - 1) * 1e3 if n > 1 else 0.0
            good += (f - s) * 1e3 <= 120.0 and tpot_ms <= 6.5
        self.assertTrue(0 < good < 300, good)   # the bounds cut through the run: the count is a real one
        result = serving.bench_result(served, work, DEP, slo)
        self.assertAlmostEqual(result["request_goodput"], good / max(served.end), places=12)


class PromptSpread(unittest.TestCase):
    def test_log_normal_around_the_mean(self):
        work = workload.Workload(num_prompts=20000, max_concurrency=8, request_rate=math.inf, burstiness=1.0,
                                input_tokens=1000, output_tokens=8, output_spread=0.0, input_spread=0.8)
        prompts = serving.prompt_lengths(work, 0)
        logs = [math.log(p) for p in prompts]
        mean_log = sum(logs) / len(logs)
        self.assertAlmostEqual(sum(prompts) / len(prompts), 1000, delta=20)          # the mean is the workload's
        self.assertAlmostEqual(math.sqrt(sum((x - mean_log) ** 2 for x in logs) / len(logs)), 0.8, delta=0.016)
        self.assertEqual(serving.prompt_lengths(dataclasses.replace(work, input_spread=0.0), 0), [1000] * 20000)

    def test_the_result_counts_each_prompt(self):
        work = workload.Workload(num_prompts=50, max_concurrency=8, request_rate=math.inf, burstiness=1.0,
                                input_tokens=300, output_tokens=16, output_spread=0.0, input_spread=1.0)
        served = support.serve_run(DEP, work)
        self.assertEqual(serving.bench_result(served, work, DEP)["total_input_tokens"],
                         sum(serving.prompt_lengths(work, 0)))
        # a longer prompt waits longer for its first token, on the same server
        order = sorted(range(50), key=lambda i: served.input_tokens[i])
        short = [served.first[i] - served.start[i] for i in order[:5]]
        long = [served.first[i] - served.start[i] for i in order[-5:]]
        self.assertGreater(sum(long), sum(short))


class GrowingQueue(unittest.TestCase):
    """goodput.growing, on runs whose waits for admission are counted by hand: 20 requests, tenths of two (the middle
    tenth: requests 8 and 9; the last: 18 and 19)."""

    def run_of(self, waits, e2els=None):
        start = [float(i) for i in range(len(waits))]
        rows = [(s, s + 0.5, s + e, 10) for s, e in zip(start, e2els or [5.0] * len(waits))]
        return dataclasses.replace(hand_run(rows), admitted=tuple(s + w for s, w in zip(start, waits)))

    def test_a_steady_run_does_not_grow(self):
        waits = [0.01] * 8 + [0.02, 0.03] + [0.02] * 8 + [0.04, 0.058]   # medians 0.025 (middle), 0.049 (last)
        self.assertFalse(goodput.growing(self.run_of(waits)))

    def test_a_last_tenth_waiting_twice_as_long_grows(self):
        waits = [0.01] * 8 + [0.02, 0.03] + [0.02] * 8 + [0.04, 0.062]   # 0.051 > 2 x 0.025
        self.assertTrue(goodput.growing(self.run_of(waits)))

    def test_a_longer_end_to_end_is_no_queue(self):
        """The last tenth taking 50% longer end to end (a batch still filling in a run shorter than its answers)
        with no more wait for admission: not growing."""
        self.assertFalse(goodput.growing(self.run_of([0.02] * 20, [5.0] * 18 + [7.4, 7.7])))

    TRAFFIC = support.traffic(output_spread=0.0, input_spread=0.0, num_prompts=200)
    LOOSE = (("ttft", 1e7), ("tpot", 1e5))

    def capped(self, slots):
        """The server's running cap patched to `slots`, in the search and the simulation, their memos cleared."""
        from unittest import mock
        cap = lambda dep, speculative, batch=None: slots   # noqa: E731
        stack = contextlib.ExitStack()
        stack.enter_context(mock.patch.object(goodput, "running_cap", cap))
        stack.enter_context(mock.patch.object(serving, "running_cap", cap))
        serving.RUN_MEMO.clear()
        self.addCleanup(serving.RUN_MEMO.clear)
        return stack

    def test_a_growing_queue_is_past_the_slo(self):
        """Past what the server holds (a cap of 4 sequences), the queue grows at any bound: the run is not within."""
        with self.capped(4):
            point = goodput.simulated_point(DEP, 0, 0.0, 0.0, 500.0, self.LOOSE, self.TRAFFIC, costmodel.FIT,
                                            plan_batch=4)
        self.assertTrue(point.growing)
        self.assertFalse(point.within)
        self.assertEqual(point.past, ("queue",))


    def test_a_rate_that_holds_more_than_the_cap_queues_in_a_longer_run(self):
        """200 requests sent within 0.4 s to a server of 1,000 slots: all run at once, no queue in this run; but the
        rate times their mean E2EL (Little's law) is past the 1,000 slots, so a longer run would queue: not within."""
        with self.capped(1000):
            point = goodput.simulated_point(DEP, 0, 0.0, 0.0, 500.0, self.LOOSE, self.TRAFFIC, costmodel.FIT)
            run_ = serving.serve_run(DEP, workload.traffic_workload(DEP, self.TRAFFIC, rate=500.0), 0, 0.0, 0.0,
                                     self.TRAFFIC.seed, costmodel.FIT)
        self.assertFalse(goodput.growing(run_))   # no queue within the run
        self.assertGreater(point.concurrency, 1000)
        self.assertEqual((point.growing, point.within, point.past), (True, False, ("queue",)))


class Search(unittest.TestCase):
    SLO = (("ttft", 400.0), ("tpot", 8.0))

    @classmethod
    def setUpClass(cls):
        traffic = support.traffic(output_spread=0.8, num_prompts=300)
        cls.table = goodput.KTable(((1, 16, 4), (17, 64, 3)), 2)
        cls.at = goodput.at_slo(DEP, cls.table, 0.7, 0.11, cls.SLO, traffic)
        cls.traffic = traffic

    def test_the_best_is_within_and_a_run_five_percent_above_it_past(self):
        for arm in (self.at.baseline, self.at.speculative):
            with self.subTest(speculative=arm.speculative):
                self.assertIsNotNone(arm.best)
                # Checked against runs the test makes itself, past the search's memos.
                goodput.RUN_MEMO.clear()
                serving.RUN_MEMO.clear()
                ks = self.table if arm.speculative else 0
                spread = 0.11 if arm.speculative else 0.0
                best = goodput.simulated_point(DEP, ks, 0.7, spread, arm.best.rate, self.SLO, self.traffic,
                                               costmodel.FIT)
                self.assertTrue(best.tail_ms["ttft"] <= 400.0 and best.tail_ms["tpot"] <= 8.0 and not best.growing)
                past = min(p.rate for p in arm.points if p.rate > arm.best.rate)
                self.assertLessEqual(past, arm.best.rate * (1 + goodput.RATE_RESOLUTION) * goodput.ROUNDING)
                above = goodput.simulated_point(DEP, ks, 0.7, spread, arm.best.rate * 1.10, self.SLO, self.traffic,
                                                costmodel.FIT)
                self.assertFalse(above.within)
                self.assertLessEqual(len(arm.points), goodput.SEARCH_RUNS)
                # the requests in the replica are at least the rate times a request's first-token time, and what a
                # replica holds (goodput.holds) bounds them
                self.assertGreater(arm.best.concurrency, arm.best.rate * arm.best.tail_ms["ttft"] / 1e3)
                self.assertLessEqual(arm.best.concurrency, arm.cap)

    def test_the_gain_is_the_ratio_of_the_capacities(self):
        self.assertEqual(self.at.gain, self.at.speculative.best.rate / self.at.baseline.best.rate)
        self.assertEqual(self.at.speculative.served, self.table)

    def test_nothing_meets_an_slo_below_one_request_alone(self):
        at = goodput.at_slo(DEP, self.table, 0.7, 0.11, (("tpot", 0.5),), self.traffic)
        self.assertIsNone(at.baseline.best)
        self.assertIsNone(at.gain)
        self.assertEqual(len(at.baseline.points), 1)   # the least rate is past it: no more runs


class ServedK(unittest.TestCase):
    """What the speculative server runs at the SLO: vLLM's table from 0.24 (not under data parallelism from 0.26),
    else one K, the table's at the load its capacity holds."""
    SCHEDULE = [[1, 20, 5], [21, 80, 3], [81, 1024, 2]]

    def test_by_engine_and_release(self):
        from rollout.catalog import era_of, release_of
        table = goodput.KTable.of(self.SCHEDULE, 2)
        for engine, release, runs in (("vllm", "0.24", True), ("vllm", "0.23", False), ("sglang", None, False),
                                      ("trtllm", None, False)):
            with self.subTest(engine=engine, release=release):
                dep = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", engine=engine,
                                       input_tokens=512, output_tokens=256,
                                       **({"era": era_of(engine, release)} if release else {}))
                if release:
                    dep = dataclasses.replace(dep, release=release_of(release))
                self.assertEqual(goodput.runs_table(dep), runs)
                arm = goodput.speculative_arm(dep, table, 0.7, 0.1, (("ttft", 2000.0), ("tpot", 50.0)),
                                              support.traffic(num_prompts=200), costmodel.FIT)
                if runs:
                    self.assertEqual(arm.served, table)
                else:   # one K: the table's at the requests its capacity holds
                    self.assertEqual(arm.served.rows, ())
                    self.assertEqual(arm.served.fallback, table.at(round(arm.best.concurrency)))


class RecvInterval(unittest.TestCase):
    def runs(self, deps, k=0):
        """The third request's TTFT (ms) on each deployment: steps (rounds at K = k) of 10 ms, two long requests sent
        at 0 and the third 5 ms in, no request cost."""
        from unittest import mock
        work = workload.Workload(num_prompts=3, max_concurrency=None, request_rate=1.0, burstiness=1.0,
                                input_tokens=512, output_tokens=256, output_spread=0.0)
        fit = costmodel.FIT._replace(request_ms=0.0)
        times = [0.0, 0.0, 0.005]   # the third sent 5 ms after the first two
        serving.COST_TABLES.clear()   # the step costs below are the patch's, not tables the real ones filled
        self.addCleanup(serving.COST_TABLES.clear)
        with mock.patch.object(serving, "send_times", lambda work, rng: list(times)), \
                mock.patch.object(serving, "step_cost", lambda dep, d, k, p, fit: 10.0), \
                mock.patch.object(serving, "STEP_JITTER", [1.0] * serving.JITTER_LEVELS):
            runs = [support.simulate_run(dep, work, k, 0.7 if k else 0.0, fit=fit, plan_batch=3)
                    for dep in deps]   # afresh, patched
        return [(run.first[2] - run.start[2]) * 1e3 for run in runs]

    def test_a_request_waits_for_the_scheduler_s_poll(self):
        """SGLang's --scheduler-recv-interval N: the scheduler looks for new requests every N steps; its overlap loop
        plans each step while the one before runs (schedules_ahead). Polled every step, the third request (5 ms in,
        during step 1 of 0-10 ms) missed step 2, planned at 0 ms: it is admitted at 20 ms and prefilled in step 3,
        a TTFT of 30 - 5 ms. Polled every tenth step (at 0 and 100 ms), it waits to 100 ms, long after it arrived,
        and is prefilled in 100-110 ms."""
        sglang = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", engine="sglang", input_tokens=512,
                                  output_tokens=256)
        self.assertTrue(deployment.schedules_ahead(sglang, False))
        polled = dataclasses.replace(sglang, engine=dataclasses.replace(sglang.engine, recv_interval=10))
        every, tenth = self.runs([sglang, polled])
        self.assertAlmostEqual(every, 30.0 - 5.0, places=6)
        self.assertAlmostEqual(tenth, 110.0 - 5.0, places=6)

    def test_a_synchronous_loop_takes_a_request_into_the_next_step(self):
        """vLLM 0.10's V1 engine schedules a step when the one before has ended: the third request, 5 ms in, is
        admitted at 10 ms and prefilled in step 2 (TTFT 20 - 5 ms); vLLM 0.14's async scheduling planned step 2 at
        0 ms without it, so it waits one more step (30 - 5 ms), as SGLang's overlap loop does."""
        from rollout.catalog import era_of
        sync = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=512,
                                output_tokens=256, era=era_of("vllm", "0.10"))
        ahead = dataclasses.replace(sync, era=era_of("vllm", "0.14"))
        self.assertEqual([deployment.schedules_ahead(d, False) for d in (sync, ahead)], [False, True])
        waits = self.runs([sync, ahead])
        self.assertAlmostEqual(waits[0], 20.0 - 5.0, places=6)
        self.assertAlmostEqual(waits[1], 30.0 - 5.0, places=6)

    def test_speculative_rounds_planned_ahead_or_not(self):
        """With speculation on, vLLM 0.14 plans EAGLE-3 rounds ahead (the third request waits 30 - 5 ms, as plain
        decoding does) and a draft model's synchronously (admitted at 10 ms, prefilled by 20: 20 - 5 ms)."""
        from rollout.catalog import era_of
        eagle = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=512,
                                 output_tokens=256, draft="eagle3", era=era_of("vllm", "0.14"))
        drafter = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=512,
                                   output_tokens=256, draft="llama-3.2-1b", era=era_of("vllm", "0.14"))
        self.assertEqual([deployment.schedules_ahead(d, True) for d in (eagle, drafter)], [True, False])
        waits = self.runs([eagle, drafter], k=3)
        self.assertAlmostEqual(waits[0], 30.0 - 5.0, places=6)
        self.assertAlmostEqual(waits[1], 20.0 - 5.0, places=6)

    def test_which_rounds_are_planned_ahead_by_release(self):
        """vLLM plans EAGLE rounds ahead from 0.14 (PR #31998) and a draft model's from 0.28 (PR #48341); SGLang's
        rounds only from spec v2 (0.5.11); TensorRT-LLM's MTP runs inside the forward its overlap scheduler
        launches."""
        from rollout.catalog import era_of
        cases = (("vllm", "0.14", "eagle3", True), ("vllm", "0.14", "llama-3.2-1b", False),
                 ("vllm", "0.28", "llama-3.2-1b", True), ("vllm", "0.10", "eagle3", False),
                 ("sglang", "0.5.10", "eagle3", False), ("sglang", "0.5.11", "eagle3", True),
                 ("trtllm", "1.2", "eagle3", False))
        for engine, release, draft, planned in cases:
            with self.subTest(engine=engine, release=release, draft=draft):
                dep = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", engine=engine, draft=draft,
                                       era=era_of(engine, release))
                self.assertEqual(deployment.schedules_ahead(dep, True), planned)
                self.assertEqual(deployment.schedules_ahead(dep, False), release != "0.10")   # plain steps too


class ChunkCost(unittest.TestCase):
    def test_exact_on_the_grain_and_close_between(self):
        """Exact below CHUNKS_EXACT and on the grain's multiples (CHUNK_GRAIN below WIDE_CHUNKS, WIDE_GRAIN past it),
        and on DECODER_GRAIN's and at every batch up to DECODERS_EXACT; between them within half a percent of
        step_cost beside decodes, on a dense model and a MoE."""
        grains = (serving.CHUNKS_EXACT, serving.CHUNK_GRAIN, serving.WIDE_CHUNKS, serving.WIDE_GRAIN,
                  serving.DECODER_GRAIN, serving.DECODERS_EXACT)
        self.assertEqual(grains, (128, 64, 512, 256, 8, 32))   # the grains the comment's errors are for
        for dep in (build_deployment(), build_deployment("qwen3-30b-a3b", "h100-sxm", 1, weights_dtype="bf16")):
            for decoders in (0, 8, 31, 40):
                for chunk in (1, 127, 128, 448, 512, 768, 4096):   # below the first grain, and multiples
                    self.assertEqual(serving.chunk_cost({}, dep, decoders, 3, chunk, costmodel.FIT),
                                     serving.step_cost(dep, decoders, 3, chunk, costmodel.FIT))
            for decoders in (1, 8, 40, 45, 200):
                for chunk in (129, 300, 700, 4133, 8191):
                    exact = serving.step_cost(dep, decoders, 3, chunk, costmodel.FIT)
                    self.assertAlmostEqual(serving.chunk_cost({}, dep, decoders, 3, chunk, costmodel.FIT) / exact,
                                           1.0, delta=0.005, msg=(dep.model, decoders, chunk))
            for decoders in (45, 200):   # a decode-only step between two batches on the grain
                exact = serving.step_cost(dep, decoders, 3, 0, costmodel.FIT)
                self.assertAlmostEqual(serving.chunk_cost({}, dep, decoders, 3, 0, costmodel.FIT) / exact, 1.0,
                                       delta=0.005, msg=(dep.model, decoders))


class RequestCost(unittest.TestCase):
    """--calibrate's request_ms, from runs whose mean TTFTs were simulated at a known one."""

    def runs(self, request_ms):
        truth = costmodel.FIT._replace(request_ms=request_ms)
        out = []
        for batch, k, tau in ((1, None, None), (8, None, None), (32, None, None), (8, 3, 2.5), (32, 3, 2.5)):
            run_ = benchfiles.Run(batch=batch, k=k, tau=tau, input_tokens=512, output_tokens=256, tpot_ms=10.0,
                               requests=max(50, 10 * batch))
            ttfts = calibration.replayed_ttfts_ms(DEP, run_, truth, **support.replayed())
            out.append(dataclasses.replace(run_, ttft_ms=statistics.fmean(ttfts)))
        return out

    def test_recovers_the_cost_the_runs_were_made_with(self):
        for request_ms in (5.0, 37.0, 120.0):
            with self.subTest(request_ms=request_ms):
                fitted, errors = calibration.fit_request_ms(DEP, self.runs(request_ms), costmodel.FIT, **support.replayed())
                self.assertAlmostEqual(fitted, request_ms, delta=0.005 * request_ms)
                self.assertLess(max(map(abs, errors)), 0.005)

    def test_a_median_is_fitted_where_a_file_gives_one(self):
        """A warm-up's few slow requests triple a run's mean TTFT and leave its median: the cost is the median's."""
        truth = costmodel.FIT._replace(request_ms=37.0)
        runs = []
        for r in self.runs(37.0):
            median = statistics.median(calibration.replayed_ttfts_ms(DEP, r, truth, **support.replayed()))
            runs.append(dataclasses.replace(r, ttft_ms=3 * r.ttft_ms, median_ttft_ms=median))
        fitted, errors = calibration.fit_request_ms(DEP, runs, costmodel.FIT, **support.replayed())
        self.assertAlmostEqual(fitted, 37.0, delta=0.005 * 37.0)
        self.assertLess(max(map(abs, errors)), 0.005)
        means_only = [dataclasses.replace(r, median_ttft_ms=None) for r in runs]   # the mean, where a file has no median
        self.assertGreater(calibration.fit_request_ms(DEP, means_only, costmodel.FIT, **support.replayed())[0], 100.0)

    def test_never_below_zero_and_none_without_ttfts(self):
        runs = [dataclasses.replace(r, ttft_ms=r.ttft_ms / 10) for r in self.runs(0.0)]   # faster than no cost at all
        self.assertEqual(calibration.fit_request_ms(DEP, runs, costmodel.FIT, **support.replayed())[0], 0.0)
        bare = [dataclasses.replace(r, ttft_ms=None) for r in runs]
        self.assertEqual(calibration.fit_request_ms(DEP, bare, costmodel.FIT, **support.replayed()), (None, []))


class SloFlag(unittest.TestCase):
    def test_forms(self):
        self.assertEqual(flags.parse_slo("tpot:50,ttft:2000"), (("ttft", 2000.0), ("tpot", 50.0)))
        self.assertEqual(flags.parse_slo(" E2EL:1e4 "), (("e2el", 10000.0),))
        self.assertEqual(flags.parse_slo("none"), ())

    def test_refused(self):
        for text in ("ttft", "ttft:", "ttft:0", "ttft:-5", "ttft:nan", "ttft:inf", "itl:20", "ttft:10,ttft:20",
                     "ttft:１０", "ttft:1_0", "ttft:1e9", "tpot:50,", ":50"):
            with self.subTest(text=text), self.assertRaises(UsageError):
                flags.parse_slo(text)

    def test_exit_2_with_one_line(self):
        status, out, err = run([*SMALL, "--no-write", "--slo", "tpot:fast"])
        self.assertEqual(status, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("--slo", err)


class InThePlan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = Path(tempfile.mkdtemp(prefix="eagle3-slo-"))
        cls.status, cls.out, cls.err = run([*SMALL, "--slo", "ttft:400,tpot:8", "--out", str(cls.folder / "plan.md")])
        cls.plan = (cls.folder / "plan.md").read_text()
        cls.svg = (cls.folder / "chart-slo.svg").read_text()
        status, text, _ = run([*SMALL, "--slo", "ttft:400,tpot:8", "--no-write", "--json"])
        cls.at = json.loads(text)["at_slo"]

    def test_the_verdict_gain_is_the_table_s(self):
        self.assertEqual(self.status, 0, self.err)
        rows = [line.strip("| ").split(" | ") for line in self.plan.splitlines() if re.match(r"\| (off|on) \| ", line)]
        capacity = {arm: max(float(r[1]) for r in rows if r[0] == arm and r[-1] == "yes") for arm in ("off", "on")}
        said = float(re.search(r"([\d.]+)x the traffic per GPU", self.plan).group(1))
        # the capacities' ratio over one plus the class's median held-out error (trust.corrected)
        bias = statistics.median(math.expm1(r["log_error"]) for r in trust.HELD_OUT if r["what"] == "speedup" and
                                 (r["target"], r["engine"], r["draft"], r["family"]) == ("dense", "vllm", "eagle3",
                                                                                         "hopper"))
        self.assertAlmostEqual(said, capacity["on"] / capacity["off"] / (1 + bias), delta=0.01 * said)
        self.assertIn(f"--request-rate {capacity['on']:g} ", self.plan)
        self.assertIn(f"--request-rate {capacity['off']:g} ", self.plan)
        self.assertIn("--goodput ttft:400 tpot:8 ", self.plan)
        self.assertNotIn("--max-concurrency", self.plan[self.plan.index("## Serving at the SLO"):
                                                         self.plan.index("## Stage 2")])

    def test_the_chart_is_the_predicted_data(self):
        """Each polyline read back through the chart's own tick labels is the JSON's points: a P99 over its bound
        against the rate per GPU, one line per arm and bound, and the bound at 1."""
        left, top, right, bottom = charts.PLOT_BOX
        x_ticks = [float(v) for v in re.findall(rf'<text x="[\d.]+" y="{bottom + 18:.1f}"[^>]*>([\d.e+-]+)</text>',
                                                self.svg)]
        y_ticks = [float(v) for v in re.findall(rf'<text x="{left - 8:.1f}" y="[\d.]+"[^>]*>([\d.e+-]+)</text>',
                                                self.svg)]
        lines = re.findall(r'<polyline class="series" points="([^"]+)"', self.svg)
        self.assertEqual(len(lines), 5)   # off TTFT and TPOT, on TTFT and TPOT, the bound
        expected_lines = [(arm, key, ms) for arm in (self.at["baseline"], self.at["speculative"])
                          for key, ms in (("ttft", 400.0), ("tpot", 8.0))]
        x0, x1, y1 = x_ticks[0], x_ticks[-1], y_ticks[-1]
        for line, (arm, key, ms) in zip(lines, expected_lines):
            points = [tuple(map(float, p.split(","))) for p in line.split()]
            data = [(x0 + (x - left) / (right - left) * (x1 - x0), (bottom - y) / (bottom - top) * y1)
                    for x, y in points]
            expected = [(p["rate"] / self.at["gpus"], min(p["tail_ms"][key] / ms, y1)) for p in arm["points"]]
            self.assertEqual(len(data), len(expected))
            for (x, y), (ex, ey) in zip(data, expected):
                self.assertAlmostEqual(x, ex, delta=0.002 * (x1 - x0))
                self.assertAlmostEqual(y, ey, delta=0.002 * y1)
        bound = [tuple(map(float, p.split(","))) for p in lines[4].split()]
        self.assertAlmostEqual((bottom - bound[0][1]) / (bottom - top) * y1, 1.0, delta=0.005)

    def test_no_slo_no_section(self):
        status, out, err = run([*SMALL, "--slo", "none", "--no-write"])
        self.assertEqual(status, 0, err)
        self.assertNotIn("At the SLO", out)

    def test_predicted_files_count_goodput(self):
        folder = Path(tempfile.mkdtemp(prefix="eagle3-slo-bench-"))
        status, _, err = run([*SMALL, "--no-write", "--slo", "ttft:400,tpot:8", "--predict-bench", str(folder)])
        self.assertEqual(status, 0, err)
        results = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]
        self.assertEqual(len(results), 4)
        for result in results:
            self.assertLessEqual(result["request_goodput"], result["request_throughput"] + 1e-12)
        # the SLO cuts: some runs keep requests within it, some lose them
        self.assertTrue(any(r["request_goodput"] > 0 for r in results))
        self.assertTrue(any(r["request_goodput"] < r["request_throughput"] for r in results))
        status, _, err = run([*SMALL, "--no-write", "--slo", "none", "--predict-bench", str(folder)])
        self.assertEqual(status, 0, err)
        self.assertIsNone(json.loads(next(folder.glob("*.json")).read_text())["request_goodput"])


if __name__ == "__main__":
    unittest.main()
