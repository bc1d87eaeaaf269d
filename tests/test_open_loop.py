"""Capacity as traffic arrives: the SLO search's capacities are the open loop's edge, as --predict-bench's files of
the same workload show them; every simulation sends the mean lengths asked; a server that runs K by batch size
drafts as its table says."""
import dataclasses
import json
import math
import tempfile
import unittest
from pathlib import Path

import support
from support import build_deployment, run

from rollout import costmodel, goodput, serving, workload
from rollout.acceptance import round_moments
from rollout.schedule import KTable

SLO = {"ttft": 2000.0, "tpot": 50.0}
SHORT = ["--input-tokens", "512", "--output-tokens", "256", "--slo", "ttft:2000,tpot:50", "--alphas", "0.7", "--ks",
         "3", "--concurrency", "1,64"]
DENSE = ["--model", "llama-3.1-8b", "--tp", "1", "--weights-dtype", "bf16"] + SHORT   # vLLM: its K by batch size
MOE = ["--model", "qwen3-30b-a3b", "--gpu", "h200", "--tp", "1", "--weights-dtype", "bf16", "--engine",
       "sglang"] + SHORT   # SGLang: one K


def at_slo(argv):
    status, out, err = run(argv + ["--no-write", "--json"])
    assert status == 0, err
    return json.loads(out)["at_slo"]


class TheEdge(unittest.TestCase):
    """The done-when: --predict-bench --request-rate at 0.95x each arm's capacity meets both P99 bounds, and at
    1.10x misses one (speculation at the plan's K by batch size, --ks plan)."""

    def check(self, argv):
        at = at_slo(argv)
        base, spec = at["baseline"]["best"]["rate"], at["speculative"]["best"]["rate"]
        rates = {"baseline": (0.95 * base, 1.10 * base), "spec_kplan": (0.95 * spec, 1.10 * spec)}
        with tempfile.TemporaryDirectory() as tmp:
            listed = ",".join(f"{r:.6g}" for pair in rates.values() for r in pair)
            status, _, err = run(argv + ["--no-write", "--predict-bench", tmp, "--request-rate", listed, "--ks",
                                         "plan"])
            self.assertEqual(status, 0, err)
            for name, (below, above) in rates.items():
                with self.subTest(arm=name):
                    within, past = (json.loads((Path(tmp) / f"{name}_r{r:.6g}.json").read_text())
                                    for r in (below, above))
                    self.assertEqual(within["num_prompts"], at["prompts"])
                    for key, bound in SLO.items():
                        self.assertLessEqual(within[f"p99_{key}_ms"], bound, key)
                    self.assertTrue(any(past[f"p99_{key}_ms"] > bound for key, bound in SLO.items()),
                                    {key: past[f"p99_{key}_ms"] for key in SLO})
        return at

    def test_a_dense_target_on_vllm(self):
        at = self.check(DENSE)
        self.assertTrue(at["speculative"]["served"]["rows"])   # vLLM runs the table

    def test_a_moe_target_on_sglang(self):
        at = self.check(MOE)
        self.assertEqual(at["speculative"]["served"]["rows"], [])   # one K throughout
        self.assertGreater(at["speculative"]["served"]["fallback"], 0)


class OneWorkload(unittest.TestCase):
    """Every simulation's answers average --output-tokens (within 2%) and its prompts --input-tokens."""

    def test_the_slo_search_and_predict_bench(self):
        dep = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=700,
                               output_tokens=300)
        traffic = support.traffic(slo=(("ttft", 2000.0), ("tpot", 50.0)))
        for concurrency, rate in ((None, 3.0), (16, math.inf), (None, 40.0)):
            with self.subTest(concurrency=concurrency, rate=rate):
                work = workload.traffic_workload(dep, traffic, concurrency=concurrency, rate=rate)
                run_ = serving.serve_run(dep, work, 0, 0.0, 0.0, traffic.seed, costmodel.FIT)
                n = len(run_.output_tokens)
                self.assertAlmostEqual(sum(run_.output_tokens) / n, 300, delta=0.02 * 300)
                self.assertAlmostEqual(sum(run_.input_tokens) / n, 700, delta=0.02 * 700)
                self.assertLessEqual(max(run_.output_tokens), workload.answer_cap(300))
        with tempfile.TemporaryDirectory() as tmp:
            status, _, err = run(["--model", "llama-3.1-8b", "--tp", "1", "--weights-dtype", "bf16",
                                  "--input-tokens", "700", "--output-tokens", "300", "--no-write", "--predict-bench",
                                  tmp, "--request-rate", "3", "--num-prompts", "50"])
            self.assertEqual(status, 0, err)
            for path in Path(tmp).glob("*.json"):
                result = json.loads(path.read_text())
                self.assertAlmostEqual(result["total_output_tokens"] / result["completed"], 300, delta=6)

    def test_choose_s_runs(self):
        status, out, err = run(["--choose", "--model", "llama-3.1-8b", "--gpus", "h200", "--engines", "vllm", "--tp",
                                "1", "--request-rate", "5", "--input-tokens", "512", "--output-tokens", "256",
                                "--slo", "ttft:2000,tpot:50", "--no-write", "--json"])
        self.assertEqual(status, 0, err)
        choice = json.loads(out)["choice"]
        traffic = support.traffic(slo=(("ttft", 2000.0), ("tpot", 50.0)))
        dep = build_deployment("llama-3.1-8b", "h200", 1, weights_dtype="bf16", input_tokens=512, output_tokens=256)
        for c in choice["candidates"]:
            work = workload.traffic_workload(dep, traffic, rate=c["capacity"])
            lengths = serving.serve_run(dep, work, 0, 0.0, 0.0, traffic.seed, costmodel.FIT).output_tokens
            self.assertAlmostEqual(sum(lengths) / len(lengths), 256, delta=0.02 * 256)
            self.assertEqual(c["tokens_per_hour"], 5 * 256 * 3600)


class SearchReadsTheBenchmark(unittest.TestCase):
    def test_the_search_s_numbers_are_bench_result_s(self):
        """goodput.run_tails is vLLM's arithmetic as serving.bench_result does it, key for key."""
        dep = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=512, output_tokens=256)
        work = workload.traffic_workload(dep, support.traffic(), rate=20.0)
        run_ = serving.serve_run(dep, work, 3, 0.7, 0.1, 0, costmodel.FIT)
        full = serving.bench_result(run_, work, dep)
        for key, value in goodput.run_tails(run_).items():
            self.assertEqual(value, full[key], key)


class KBySize(unittest.TestCase):
    """A run at K by batch size (serving.KSwitch): its rounds, drafts and K as the table says, against closed forms."""
    DEP = build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=256, output_tokens=200)

    def work(self, concurrency):
        return workload.Workload(num_prompts=400, max_concurrency=concurrency, request_rate=math.inf, burstiness=1.0,
                                 input_tokens=256, output_tokens=200, output_spread=0.0)

    def test_one_request_at_a_time_runs_the_first_row(self):
        """At concurrency 1 every step runs the table's K at B = 1: 3 rounds of 3 drafts, accepting alpha^(p+1) at
        position p; its rounds are the tokens over tau(alpha, 3), within 2%."""
        table = KTable(((1, 1, 3), (2, 64, 1)), 0)
        run_ = serving.simulate_run(self.DEP, self.work(1), table, 0.7, 0.0, 0)
        self.assertEqual(run_.k, 3)
        self.assertEqual(dict(run_.k_steps).keys(), {3})
        tokens = sum(n - 1 for n in run_.output_tokens)
        self.assertAlmostEqual(run_.drafts / (tokens / round_moments(0.7, 3)[0]), 1.0, delta=0.02)
        self.assertAlmostEqual(run_.draft_tokens, 3 * run_.drafts, places=6)
        for position, accepted in enumerate(run_.accepted_at):
            self.assertAlmostEqual(accepted, run_.drafts * 0.7 ** (position + 1), delta=1e-6 * run_.drafts)

    def test_a_full_batch_runs_the_row_of_its_size(self):
        """At 32 concurrent, the table's K 0 past B = 1 leaves nearly every step plain: most steps run K 0, and the
        few drafts (the ramp at the end) are rounds of 3."""
        table = KTable(((1, 1, 3),), 0)
        run_ = serving.simulate_run(self.DEP, self.work(32), table, 0.7, 0.0, 0)
        steps = dict(run_.k_steps)
        self.assertEqual(run_.k, 0)
        self.assertGreater(steps[0], 20 * steps.get(3, 0))
        self.assertAlmostEqual(run_.draft_tokens, 3 * run_.drafts, places=6)
        result = serving.bench_result(run_, self.work(32), self.DEP)
        plain = serving.bench_result(serving.simulate_run(self.DEP, self.work(32), 0, 0.0, 0.0, 0), self.work(32),
                                     self.DEP)
        self.assertAlmostEqual(result["mean_tpot_ms"] / plain["mean_tpot_ms"], 1.0, delta=0.02)

    def test_a_table_of_one_k_is_that_k(self):
        fixed = serving.simulate_run(self.DEP, self.work(8), 3, 0.7, 0.1, 0)
        table = serving.simulate_run(self.DEP, self.work(8), KTable((), 3), 0.7, 0.1, 0)
        self.assertEqual(fixed, table)


class DataParallelRanks(unittest.TestCase):
    """Attention data parallelism: one rank simulated for all (serving.simulate_run's ranks, goodput.others_of)."""
    DEP = build_deployment("deepseek-v3", "h200", 8, weights_dtype="fp8", ep=8, dp_attention=True, input_tokens=256,
                           output_tokens=128)

    def test_one_request_a_rank_decodes_at_the_replica_s_pass_of_all_ranks(self):
        """One request at a time on a rank: every decode step is the replica's pass with each of the 8 ranks holding
        one (step_cost at B = 8), times a jitter of mean 1: its mean TPOT within 2%; one scheduler at B = 1, the
        pass of one sequence."""
        work = workload.Workload(num_prompts=200, max_concurrency=1, request_rate=math.inf, burstiness=1.0,
                                 input_tokens=256, output_tokens=128, output_spread=0.0)
        for ranks, batch in ((8, 8), (1, 1)):
            with self.subTest(ranks=ranks):
                run_ = serving.simulate_run(self.DEP, work, 0, 0.0, 0.0, 0, ranks=ranks)
                tpot = serving.bench_result(run_, work, self.DEP)["mean_tpot_ms"]
                self.assertAlmostEqual(tpot / serving.step_cost(self.DEP, batch, 0, 0, costmodel.FIT), 1.0, delta=0.02)

    def test_the_others_prefill_as_often_as_this_rank(self):
        """p = 30 of 120 steps prefilled: another of 7 ranks prefills in a step with 1 - 0.75^7 = 0.867, their
        chunk 9,000 / 30 = 300 tokens."""
        run_ = dataclasses.replace(serving.simulate_run(self.DEP, self.work(), 0, 0.0, 0.0, 0, ranks=8), steps=120,
                                   prefill_steps=30, prefilled=9000)
        self.assertEqual(goodput.others_of(run_, 8), (round(1 - 0.75 ** 7, 3), 300))
        self.assertIsNone(goodput.others_of(dataclasses.replace(run_, prefill_steps=0), 8))

    def work(self):
        return workload.Workload(num_prompts=20, max_concurrency=4, request_rate=math.inf, burstiness=1.0,
                                 input_tokens=256, output_tokens=128, output_spread=0.0)

    def test_the_slo_is_searched(self):
        at = at_slo(["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--engine", "sglang", "--draft", "mtp",
                     "--ep", "8", "--dp-attention"] + SHORT)
        self.assertIsNone(at["skipped"])
        self.assertIsNotNone(at["baseline"]["best"])
        self.assertIsNotNone(at["speculative"]["best"])


if __name__ == "__main__":
    unittest.main()
