"""Engine eras (issue 22): a round's host costs by engine release. The published fit's rounds were measured in one
era per engine; a later era either has its own fitted round costs (vLLM's async rounds, fitted on served runs of
its era) or takes off a round what a published before/after measurement saved (SGLang's spec v2), counted here by
hand from the numbers the source prints."""
import json
import math
import statistics
import tempfile
import unittest
from pathlib import Path

from support import build_deployment, run

from rollout import benchfiles, calibration, catalog, costmodel, records, trust
from rollout.render import plan as plan_module


Z80 = statistics.NormalDist().inv_cdf(0.9)
SGLANG_V2 = 2.99 * 1000 / 246.80 - 3.01 * 1000 / 273.43   # PR #11398: a round's ms from tokens/s and acceptance


def dep(engine="vllm", version=None, **kw):
    era = catalog.era_of(engine, version) if version else None
    return build_deployment("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=1024, engine=engine, era=era, **kw)


class Releases(unittest.TestCase):
    def test_a_release_finds_its_era(self):
        for engine, version, key in (("vllm", "0.8", "v1-sync"), ("vllm", "0.13.2", "v1-sync"),
                                     ("vllm", "0.14.0", "v1-async"), ("vllm", "0.25.1", "v1-async"),
                                     ("sglang", "0.4.4", "spec-v1"), ("sglang", "0.5.10.post1", "spec-v1"),
                                     ("sglang", "0.5.11", "spec-v2"), ("trtllm", "1.2.0", "pytorch"),
                                     ("vllm", "0.14.0.dev3", "v1-sync"), ("vllm", "v0.14.0rc1", "v1-sync"),
                                     ("vllm", "0.14.0.post1", "v1-async"),
                                     ("sglang", "0.5.11.dev0+g1234", "spec-v1")):   # a pre-release precedes its release
            with self.subTest(engine=engine, version=version):
                self.assertEqual(catalog.era_of(engine, version).key, key)

    def test_the_default_is_the_newest_era(self):
        for engine in catalog.ENGINES:
            self.assertIs(build_deployment(engine=engine).era, catalog.ENGINES[engine].eras[-1])

    def test_releases_before_the_first_era_and_junk_are_refused(self):
        for argv, words in ((["--engine-version", "0.7"], "vLLM releases before 0.8"),
                            (["--engine-version", "0.14;rm -rf /"], "a release as vLLM publishes it"),
                            (["--engine-version", "0.014"], "a release as vLLM publishes it"),   # no leading zeros
                            (["--engine", "trtllm", "--engine-version", "0.9"], "return_perf_metrics, both from 1.0"),
                            (["--engine", "sglang", "--engine-version", "0.3.9"], "SGLang releases before 0.4")):
            status, out, err = run(argv + ["--no-write"])
            self.assertEqual((status, out), (2, ""))
            self.assertIn(words, err)
            self.assertEqual(len(err.strip().splitlines()), 1)


class RoundSavings(unittest.TestCase):
    def test_the_saving_is_the_sources_numbers(self):
        self.assertAlmostEqual(catalog.SGLANG_SPEC_V2.saved_ms, SGLANG_V2, places=12)

    def test_a_newer_sglang_round_is_the_fitted_one_less_its_hidden_host_time(self):
        old, new = dep("sglang", "0.5.10"), dep("sglang", "0.5.11")
        for batch, k in ((1, 3), (64, 5)):
            with self.subTest(batch=batch, k=k):
                self.assertAlmostEqual(costmodel.round_ms(old, batch, k) - costmodel.round_ms(new, batch, k), SGLANG_V2,
                                       places=9)
                self.assertEqual(costmodel.decode_step_ms(old, batch), costmodel.decode_step_ms(new, batch))

    def test_vllm_async_rounds_hide_their_fixed_costs_whole(self):
        # A round is its bookkeeping plus K draft steps (each its fixed cost plus the head's pass) plus the verify
        # pass. On 0.14 an EAGLE round's fixed costs are hidden whole, and its verify pass's cost per token with them;
        # PR #31998 runs async rounds for EAGLE and MTP only, so a draft model's and n-gram's rounds keep theirs. A
        # plain step (the baseline server's, asynchronous since PR #27614) hides its cost per token in both.
        f = costmodel.FIT
        for draft in ("eagle3", "eagle", "llama-3.2-1b", "ngram"):
            old, new = dep("vllm", "0.13", draft=draft), dep("vllm", "0.14", draft=draft)
            async_rounds = draft in ("eagle3", "eagle")
            for batch, k in ((1, 3), (64, 5)):
                with self.subTest(draft=draft, batch=batch, k=k):
                    fixed = f.round_fixed_ms_vllm + k * f.draft_fixed_ms_vllm if async_rounds else 0.0
                    tokens = batch * (k + 1) * f.token_us_vllm / 1e3 if async_rounds else 0.0
                    self.assertAlmostEqual(costmodel.round_ms(old, batch, k) - costmodel.round_ms(new, batch, k),
                                           fixed + tokens, places=9)
                    self.assertAlmostEqual(costmodel.hidden_ms(new, k), fixed, places=12)
                    self.assertAlmostEqual(costmodel.decode_step_ms(old, batch) - costmodel.decode_step_ms(new, batch),
                                           batch * f.token_us_vllm / 1e3, places=9)

    def test_changes_run_only_for_the_drafts_they_serve(self):
        # SGLang's spec v2 runs chains only (PR #12113).
        kw = dict(draft="eagle3", topk=4, verify_tokens=8)
        self.assertEqual(costmodel.round_ms(dep("sglang", "0.5.10", **kw), 1, 3), costmodel.round_ms(dep("sglang", **kw), 1, 3))

    def test_no_more_is_hidden_than_the_rounds_fixed_costs(self):
        new = dep("sglang")
        fit = costmodel.FIT._replace(round_fixed_ms_sglang=0.2, draft_fixed_ms_sglang=0.1)   # 0.2 + 3 x 0.1 < 1.11
        old = dep("sglang", "0.5.10")
        self.assertAlmostEqual(costmodel.round_ms(old, 1, 3, fit) - costmodel.round_ms(new, 1, 3, fit), 0.5, places=12)

    def test_the_calibration_closed_form_hides_the_same(self):
        run_ = benchfiles.Run(batch=8, k=3, tau=2.5, input_tokens=1024, output_tokens=1024)
        for engine, version in (("sglang", "0.5.10"), ("sglang", None), ("vllm", "0.13"), ("vllm", None)):
            d = dep(engine, version)
            own = dict.fromkeys(records.OWN_TERMS, 1.0)
            self.assertAlmostEqual(calibration.terms_tpot_ms(calibration.run_terms(d, run_), own), calibration.run_tpot_ms(d, run_, costmodel.FIT),
                                   places=9)


class WhatTheRunSays(unittest.TestCase):
    def test_the_model_md_table_gives_the_savings_the_code_computes(self):
        model_md = (Path(__file__).resolve().parent.parent / "code" / "rollout" / "MODEL.md").read_text()
        for key, saving in (("spec-v2", catalog.SGLANG_SPEC_V2),):
            row = next(line for line in model_md.splitlines() if line.startswith("| ") and f"`{key}`" in line)
            self.assertIn(f"{saving.saved_ms:.2f} ms less", row)

    def test_the_plan_json_and_gate_name_the_era(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "plan.md"
            status, text, err = run(["--engine-version", "0.13", "--json", "--out", str(out)])
            self.assertEqual(status, 0, err)
            deployment = json.loads(text)["deployment"]
            self.assertEqual((deployment["engine_release"], deployment["engine_era"], deployment["engine_releases"],
                              deployment["era_saving_ms"]), ("0.13.0", "v1-sync", "0.8 until 0.14", 0.0))
            self.assertEqual(deployment["era_hides_token_cost"], {"plain": False, "verify": False})
            # PR #31998: EAGLE/MTP rounds only from 0.14 (draft models run from 0.15); PR #48341: theirs too from 0.28.
            for draft, version, verify in (("eagle3", "0.14", True), ("llama-3.2-1b", "0.15", False),
                                           ("llama-3.2-1b", "0.28", True)):
                _, text, _ = run(["--draft", draft, "--engine-version", version, "--json", "--no-write",
                                  "--concurrency", "1"])
                self.assertEqual(json.loads(text)["deployment"]["era_hides_token_cost"],
                                 {"plain": True, "verify": verify})
            plan = out.read_text()
        self.assertIn("| engine release | 0.8 until 0.14: the V1 engine, rounds scheduled synchronously", plan)
        self.assertIn("--engine-version 0.13.0", plan)          # the gate rebuilds the same deployment, release and all

    def test_the_era_row_reads_without_nested_parentheses(self):
        # Each era's account in the plan's deployment table, for each kind of draft: one level of parentheses at most.
        for engine in catalog.ENGINES.values():
            for era in engine.eras:
                for draft in ("eagle3", "llama-3.2-1b", "ngram"):
                    account = plan_module.era_account(build_deployment(engine=engine.key, era=era, draft=draft))
                    depth = deepest = 0
                    for ch in account:
                        depth += {"(": 1, ")": -1}.get(ch, 0)
                        deepest = max(deepest, depth)
                    with self.subTest(engine=engine.key, era=era.key, draft=draft):
                        self.assertEqual(depth, 0, account)
                        self.assertLessEqual(deepest, 1, account)

    def test_a_derived_era_widens_the_speedup_interval_by_its_own_size(self):
        new, old = (build_deployment(engine="sglang"),
                    build_deployment(engine="sglang", era=catalog.fitted_era("sglang")))
        shift = math.log(costmodel.round_ms(old, 1, 3) / costmodel.round_ms(new, 1, 3))
        self.assertGreater(shift, 0.03)
        self.assertIn("era", trust.trust_in(new).outside)
        self.assertAlmostEqual(trust.trust_in(new).speedup_sd, math.hypot(trust.trust_in(old).speedup_sd, shift), places=12)


if __name__ == "__main__":
    unittest.main()
