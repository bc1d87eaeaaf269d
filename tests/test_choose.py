"""--choose: the cheapest deployment for a traffic within an SLO. Costs checked by hand from each candidate's own
simulated run, every candidate listed re-simulated afresh within the SLO, the candidate set across GPUs, engines,
layouts and speculation off and on, and the refusals."""
import json
import math
import unittest
from unittest import mock

from support import main, run

from rollout import catalog, choose, costmodel, goodput, serving

SLO = "ttft:2000,tpot:50"
# Short requests keep each search to a fraction of a second (the suite runs them in one process).
SMALL = ["--input-tokens", "512", "--output-tokens", "256", "--slo", SLO, "--no-write", "--json"]
DENSE = ["--choose", "--model", "llama-3.1-8b", "--gpus", "h100-sxm,h200,mi300x", "--engines", "vllm,sglang",
         "--tp", "1", "--request-rate", "20"] + SMALL
MOE = ["--choose", "--model", "qwen3-30b-a3b", "--gpus", "h200", "--engines", "vllm", "--tp", "2", "--request-rate",
       "40", "--gpu-price", "h200=3.5"] + SMALL + ["--slo", "ttft:1000,tpot:25"]   # the last --slo wins
_ANSWERS = {}


def answer(argv):
    """The --json choice of a run (each asked once in this module)."""
    key = tuple(argv)
    if key not in _ANSWERS:
        status, out, err = run(argv)
        assert status == 0, err
        _ANSWERS[key] = json.loads(out)
    return _ANSWERS[key]


class TheCost(unittest.TestCase):
    def test_two_candidates_cost_their_price_over_the_tokens_they_serve(self):
        choice = answer(DENSE)["choice"]
        prices = {gpu: usd for gpu, usd, *_ in choice["prices"]}
        self.assertEqual(prices, {gpu: catalog.GPU_PRICES[gpu][0] for gpu in ("h100-sxm", "h200", "mi300x")})
        tokens_an_hour = 20.0 * 256 * 3600   # the traffic's: every simulation's answers average --output-tokens
        picked = [choice["candidates"][0], choice["candidates"][-1]]
        for c in picked:
            with self.subTest(gpu=c["gpu"], engine=c["engine"], draft=c["draft"]):
                replicas = math.ceil(20.0 / c["capacity"])   # requests/s to serve over one replica's capacity
                self.assertEqual(c["replicas"], replicas)
                self.assertEqual(c["gpus"], replicas * c["tp"])
                self.assertAlmostEqual(c["cost_per_hour"], replicas * c["tp"] * prices[c["gpu"]], places=4)
                self.assertAlmostEqual(c["cost_per_million"] / (c["cost_per_hour"] / tokens_an_hour * 1e6), 1.0,
                                       places=4)
                low, high = c["cost_per_hour_interval"]
                self.assertLessEqual(low, c["cost_per_hour"] + 1e-9)
                self.assertGreaterEqual(high, c["cost_per_hour"] - 1e-9)
        self.assertEqual({c["tokens_per_hour"] for c in choice["candidates"]}, {tokens_an_hour})

    def test_one_row_per_deployment_and_way_of_running_it(self):
        choice = answer(DENSE)["choice"]
        rows = [(c["gpu"], c["tp"], c["ep"], c["dp_attention"], c["engine"], c["draft"]) for c in choice["candidates"]]
        self.assertEqual(len(rows), len(set(rows)))
        self.assertFalse([c for c in choice["candidates"] if c["draft"] != "off" and c["k"] == 0])

    def test_a_given_price_replaces_the_catalogs(self):
        choice = answer(MOE)["choice"]
        self.assertEqual([(gpu, usd, source) for gpu, usd, source, _ in choice["prices"]], [("h200", 3.5, "--gpu-price")])
        for c in choice["candidates"]:
            self.assertAlmostEqual(c["cost_per_hour"], c["gpus"] * 3.5, places=4)

    def test_the_chosen_is_the_cheapest_and_the_table_is_ranked(self):
        choice = answer(DENSE)["choice"]
        costs = [c["cost_per_hour"] for c in choice["candidates"]]
        self.assertEqual(costs, sorted(costs))
        self.assertEqual(choice["chosen"], choice["candidates"][0])
        self.assertEqual(choice["cheapest_off"], next(c for c in choice["candidates"] if c["draft"] == "off"))
        self.assertEqual(choice["cheapest_on"], next(c for c in choice["candidates"] if c["draft"] != "off"))
        runner = choice["runner_up"]
        self.assertEqual(choice["too_close"], runner["cost_per_hour_interval"][0]
                         <= choice["chosen"]["cost_per_hour_interval"][1])


    def test_a_candidate_left_unsearched_costs_more_as_one_replica_than_any_range_found(self):
        with mock.patch.object(choose, "ROUND", 4):   # the bound moves after every 4 of the 8 candidates
            choice = answer(["--choose", "--model", "llama-3.1-8b", "--gpus", "h200,b200", "--engines", "vllm",
                             "--request-rate", "2"] + SMALL)["choice"]
        prices = {gpu: usd for gpu, usd, *_ in choice["prices"]}
        skipped = [u for u in choice["unserved"] if not u["searched"]]
        self.assertTrue(skipped)   # at 2 requests/s one GPU serves it: TP 2 is dearer than any range's end
        dearest_end = min(c["cost_per_hour_interval"][1] for c in choice["candidates"])
        for u in skipped:
            self.assertGreater(u["tp"] * prices[u["gpu"]], dearest_end)
        self.assertEqual({c["tp"] for c in choice["candidates"]}, {1})


class EveryCandidateMeetsTheSlo(unittest.TestCase):
    def test_each_candidates_own_run_simulated_afresh_is_within_every_bound(self):
        """Each listed candidate's capacity, run again past every memo with the K its server ran, is within every
        bound and its queue does not grow; 10% more traffic is not (the search's resolution is 5%)."""
        inputs = main.parse(DENSE, main.SETTINGS)
        traffic = inputs.traffic
        deployments = {(dep.gpu, dep.engine.key, dep.draft if speculative else "off"): dep
                       for dep, speculative, _ in (o for o in inputs.choose.options
                                                   if not isinstance(o, choose.Unserved))}
        for c in answer(DENSE)["choice"]["candidates"]:
            with self.subTest(gpu=c["gpu"], engine=c["engine"], draft=c["draft"]):
                dep = deployments[c["gpu"], c["engine"], c["draft"]]
                goodput.RUN_MEMO.clear()   # the run itself simulated again (a step's cost is a pure function)
                serving.RUN_MEMO.clear()
                ks = 0 if c["draft"] == "off" else goodput.KTable(tuple(map(tuple, c["served"]["rows"])),
                                                                   c["served"]["fallback"])
                if c["draft"] != "off" and c["engine"] == "vllm":   # vLLM runs the plan's table
                    self.assertEqual(list(map(list, ks.rows)), c["k_schedule"])
                alpha, spread = c["request_alpha"] or 0.0, c["request_spread"] or 0.0
                for rate, within in ((c["capacity"], True), (c["capacity"] * 1.10, False)):
                    point = goodput.simulated_point(dep, ks, alpha, spread, rate, traffic.slo, traffic, costmodel.FIT)
                    self.assertEqual(point.within, within, (rate, point.tail_ms, point.growing))
                    if within:   # the same run, to the JSON's six decimals of alpha
                        for key, bound in traffic.slo:
                            self.assertAlmostEqual(point.tail_ms[key] / c["tails_ms"][key], 1.0, delta=1e-4)
                        self.assertAlmostEqual(point.concurrency / c["concurrency"], 1.0, delta=1e-4)


class TheCandidates(unittest.TestCase):
    def test_three_gpus_two_engines_speculation_off_and_on(self):
        choice = answer(DENSE)["choice"]
        candidates = choice["candidates"]
        self.assertEqual({c["gpu"] for c in candidates}, {"h100-sxm", "h200", "mi300x"})
        self.assertEqual({c["engine"] for c in candidates}, {"vllm", "sglang"})
        self.assertEqual({c["draft"] for c in candidates}, {"off", "eagle3"})
        # 3 GPUs x 2 engines x (off, EAGLE-3) at TP 1: an EAGLE-3 server that runs K 0 at its capacity is the off row
        as_off = [u for u in choice["unserved"] if u["why"].endswith("the off candidate's row")]
        self.assertEqual(len(candidates) + len(as_off), 12)
        self.assertEqual(sum(c["draft"] == "off" for c in candidates), 6)

    def test_a_moe_target_is_searched_with_experts_and_attention_data_parallel(self):
        choice = answer(MOE)["choice"]
        layouts = {(c["tp"], c["ep"], c["dp_attention"]) for c in choice["candidates"]}
        self.assertTrue(any(ep == 1 for _, ep, _ in layouts))
        self.assertTrue(any(ep == tp > 1 and not dp for tp, ep, dp in layouts))
        self.assertTrue(any(ep == tp > 1 and dp for tp, ep, dp in layouts))   # its own SLO search runs it
        self.assertEqual({c["draft"] for c in choice["candidates"]}, {"off", "eagle3"})

    def test_the_plan_is_the_chosen_deployments(self):
        data = answer(DENSE)
        chosen, deployment = data["choice"]["chosen"], data["deployment"]
        self.assertEqual((deployment["gpu"], deployment["tp"], deployment["engine"]),
                         (chosen["gpu"], chosen["tp"], chosen["engine"]))
        # the plan's batch: what a replica holds at its capacity, with room for two s.d.s of their Poisson number
        held = chosen["concurrency"]
        self.assertEqual(data["verdict"]["concurrency"], min(math.ceil(held + 2 * math.sqrt(held)),
                                                             data["deployment"]["max_concurrency"]))


class WhatSpeculationBuys(unittest.TestCase):
    def test_where_the_replicas_tie_the_sentence_gives_the_tail_at_the_traffic(self):
        """At 5 requests/s one H200 serves it either way: the sentence gives P99 TPOT and E2EL off and on at 5
        requests/s a replica, each the run simulated afresh at that rate."""
        argv = ["--choose", "--model", "llama-3.1-8b", "--gpus", "h200", "--engines", "vllm", "--tp", "1",
                "--request-rate", "5"] + SMALL
        choice = answer(argv)["choice"]
        self.assertEqual(choice["chosen"]["replicas"], 1)
        self.assertAlmostEqual(choice["saving"], 0.0, places=9)
        bought = choice["at_traffic"]
        self.assertEqual(bought["rate"], 5.0)
        inputs = main.parse(argv, main.SETTINGS)
        for arm, (dep, speculative, _) in zip(("off", "on"), sorted(
                (o for o in inputs.choose.options if not isinstance(o, choose.Unserved)), key=lambda o: o[1])):
            c = next(c for c in choice["candidates"] if (c["draft"] != "off") == speculative)
            ks = goodput.KTable(tuple(map(tuple, c["served"]["rows"])), c["served"]["fallback"]) if speculative else 0
            goodput.RUN_MEMO.clear()
            serving.RUN_MEMO.clear()
            point = goodput.simulated_point(dep, ks, c["request_alpha"] or 0.0, c["request_spread"] or 0.0, 5.0,
                                            inputs.traffic.slo, inputs.traffic, costmodel.FIT)
            for key in ("tpot", "e2el"):
                self.assertAlmostEqual(bought[arm][key] / point.tail_ms[key], 1.0, delta=1e-4)
        status, text, _ = run([a for a in argv if a != "--json"])
        first = " ".join(text.split("\n\n")[0].split())
        self.assertIn(f"from {bought['off']['tpot']:,.1f} to {bought['on']['tpot']:,.1f} ms", first)


class Refusals(unittest.TestCase):
    def refused(self, argv, words):
        status, out, err = run(argv)
        self.assertEqual(status, 2)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn(words, err)

    def test_the_default_model_when_none_is_named(self):
        status, out, err = run(["--choose", "--request-rate", "5", "--gpus", "h200", "--engines", "vllm", "--tp", "2",
                                "--input-tokens", "512", "--output-tokens", "256", "--no-write", "--json"])
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["deployment"]["model"], main.SETTINGS.deployment.model)

    def test_what_choose_refuses(self):
        base = ["--choose", "--model", "llama-3.1-8b", "--no-write"]
        self.refused(base, "--request-rate R")
        self.refused(base + ["--request-rate", "5", "--slo", "none"], "needs one")
        self.refused(base + ["--request-rate", "5", "--target-concurrency", "8"], "one way")
        self.refused(base + ["--request-rate", "5", "--gpu", "h200"], "--gpus")
        self.refused(base + ["--request-rate", "5", "--gpus", "gh200"], "--gpu-price gh200=USD")
        self.refused(base + ["--request-rate", "5", "--gpu-price", "h200=-1"], "--gpu-price")
        self.refused(base + ["--request-rate", "5", "--gpu-price", "h200=1,h200=2"], "twice")
        self.refused(base + ["--request-rate", "5", "--engines", "tgi"], "--engines")
        self.refused(["--gpus", "h200", "--no-write"], "give --choose too")


if __name__ == "__main__":
    unittest.main()
