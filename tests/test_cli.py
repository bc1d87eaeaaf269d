"""The command line: determinism, JSON, bad input, and the committed rollout plan."""
import dataclasses
import importlib
import io
import json
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from support import MAIN_PATH, ROOT, run

import main
import rollout
from rollout import acceptance, flags, report


SMALL = ["--alphas", "0.5,0.8", "--ks", "3", "--concurrency", "1,64"]


def reject_nan(token):
    raise AssertionError(f"JSON holds {token}")


class DefaultRun(unittest.TestCase):
    def test_committed_outputs_are_what_the_default_run_writes(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "skill-eagle3-rollout.md"
            status, _, _ = run(["--out", str(out)])
            self.assertEqual(status, 0)
            written = sorted(p.name for p in Path(tmp).iterdir())
            self.assertEqual(written, sorted(p.name for p in (ROOT / "outputs").iterdir()))
            for name in written:
                self.assertEqual((Path(tmp) / name).read_bytes(), (ROOT / "outputs" / name).read_bytes(), name)

    def test_same_seed_same_bytes_other_seed_other_numbers(self):
        first, second = run(["--json", "--no-write"]), run(["--json", "--no-write"])
        self.assertEqual(first, second)
        other = run(["--json", "--no-write", "--seed", "1"])
        self.assertNotEqual(first[1], other[1])

    def test_tables_fit_in_100_columns_and_blocks_stay_short(self):
        status, text, _ = run(["--no-write"])
        self.assertEqual(status, 0)
        self.assertLessEqual(max(len(line) for line in text.splitlines()), 100)
        for block in text.split("\n\n"):
            self.assertLessEqual(len(block.splitlines()), 27)

    def test_plan_sections_and_vllm_facts(self):
        plan = (ROOT / "outputs" / "skill-eagle3-rollout.md").read_text()
        self.assertTrue(plan.startswith("---\nname: eagle3-rollout\ndescription: "))
        for needle in ("--speculative-config", '"method": "eagle3"', "RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3",
                       "vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_drafts_total",
                       "p99_itl_ms", "p99_tpot_ms", "## Stage 3: the gate", "--gpu-memory-utilization 0.92",
                       "--dataset-path ShareGPT_V3_unfiltered_cleaned_split.json", "--temperature 0.7",
                       "--backend openai-chat --endpoint /v1/chat/completions", "--per-request-spec-decode-metrics"):
            self.assertIn(needle, plan)
        # Removed from vLLM (PR #35060) after doing nothing from v0.10.0: nowhere, not even as advice.
        for path in (ROOT / "outputs" / "skill-eagle3-rollout.md", ROOT / "README.md", MAIN_PATH):
            self.assertNotIn("disable_by_batch_size", path.read_text(), path)


    def test_plan_gate_uses_the_margin_flag(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "plan.md"
            status, _, _ = run(["--gate-margin", "0.2", "--out", str(out)])
            self.assertEqual(status, 0)
            self.assertIn("(break-even + 0.20)", out.read_text())


class JsonOutput(unittest.TestCase):
    KEYS = ("alpha", "k", "verify_overhead", "concurrency", "feasible", "eps_eff", "acceptance_length",
            "acceptance_rate", "speedup_lesson", "speedup_exact", "speedup_mc", "breakeven_alpha_lesson",
            "breakeven_alpha_exact", "itl_plain_p99_ms", "itl_spec_p99_ms", "itl_spec_two_pass_p99_ms",
            "round_itl_spec_p99_ms", "tpot_plain_p99_ms", "tpot_spec_p99_ms", "tpot_spec_two_pass_p99_ms",
            "tpot_spec_p50_ms")

    def test_cells_have_the_promised_keys(self):
        status, text, _ = run(SMALL + ["--json", "--no-write"])
        self.assertEqual(status, 0)
        data = json.loads(text, parse_constant=reject_nan)
        self.assertEqual(len(data["cells"]), 2 * 1 * 2 * 2)
        for cell in data["cells"]:
            for key in self.KEYS:
                self.assertIn(key, cell)
            # The values are the closed forms of their neighbours (JSON keeps 6 decimals).
            tau, eps, k = cell["acceptance_length"], cell["eps_eff"], cell["k"]
            self.assertAlmostEqual(tau, acceptance.acceptance_length(cell["alpha"], k), places=5)
            self.assertAlmostEqual(cell["speedup_exact"], tau / (1 + eps), places=5)
            self.assertAlmostEqual(cell["speedup_lesson"], (1 + k * cell["alpha"]) / (1 + eps), places=5)
            self.assertAlmostEqual(cell["breakeven_alpha_lesson"], cell["eps_decode"] / k, places=5)
            self.assertAlmostEqual(cell["round_ms"], (1 + eps) * cell["plain_step_ms"], places=4)
        self.assertEqual(data["deployment"]["max_concurrency"], 453)   # by hand: test_simulation

    def test_mix_lengths_turn_token_shares_into_request_shares(self):
        # 70% of tokens from 300-token chat answers, 30% from 900-token code: requests 7/3 : 1/3 = 87.5% : 12.5%.
        status, text, _ = run(SMALL + ["--mix", "chat:0.7:0.7:300,code:0.3:0.4:900", "--json", "--no-write"])
        self.assertEqual(status, 0)
        mix = json.loads(text, parse_constant=reject_nan)["mix"]
        self.assertAlmostEqual(mix["request_shares"]["chat"], 0.875, places=6)
        self.assertAlmostEqual(mix["request_shares"]["code"], 0.125, places=6)

    def test_no_break_even_is_null(self):
        # eps = 4 at K = 3: a round costs more than the 4 tokens it can deliver.
        status, text, _ = run(["--alphas", "0.9", "--ks", "3", "--verify-overheads", "4",
                               "--concurrency", "1", "--json", "--no-write"])
        self.assertEqual(status, 0)
        cell = json.loads(text, parse_constant=reject_nan)["cells"][0]
        self.assertIsNone(cell["breakeven_alpha_exact"])
        self.assertIsNone(cell["breakeven_alpha_lesson"])


# The --json keys a dashboard or script may read (a public interface): a change may add keys, never drop or rename
# one. Written out by hand from the JSON of the release that typed the records (issue 20).
JSON_KEYS = {
    "": "deployment interval_level trust cells breakeven best_k plan mix measured gate exercises summary",
    "trust": "level speedup_sd tpot_sd spec_tpot_sd calibrated outside basis",
    "deployment": "engine model gpu tp weights_dtype kv_dtype context draft draft_model draft_trained_context "
                  "gpu_memory_gib gpu_memory_utilization gpu_memory_utilization_of memory_setting memory_budget_bytes "
                  "gpu_bandwidth_tbs gpu_tflops target_params active_params experts experts_per_token draft_topk "
                  "verify_tokens draft_params weight_bytes draft_weight_bytes kv_bytes_per_token max_concurrency "
                  "input_tokens output_tokens plain_step_b1 plain_step_ms_b1",
    "cells.0": "alpha k verify_overhead concurrency feasible eps_eff eps_decode acceptance_length acceptance_rate "
               "alpha_spread acceptance_length_requests speedup_lesson speedup_exact speedup_requests speedup_mc "
               "speedup_mc_se speedup_two_pass_mc breakeven_alpha_lesson breakeven_alpha_exact plain_step_ms round_ms "
               "tpot_plain_mean_ms tpot_plain_p99_ms tpot_spec_mean_ms tpot_spec_p50_ms tpot_spec_p99_ms "
               "tpot_spec_two_pass_mean_ms tpot_spec_two_pass_p99_ms tpot_p99_change tpot_p99_change_two_pass "
               "itl_plain_mean_ms itl_plain_p50_ms itl_plain_p99_ms itl_spec_mean_ms itl_spec_p50_ms itl_spec_p99_ms "
               "itl_spec_two_pass_mean_ms itl_spec_two_pass_p50_ms itl_spec_two_pass_p99_ms round_itl_spec_p99_ms "
               "round_itl_two_pass_p99_ms p99_change p99_change_two_pass zero_accept_token_share slow_alpha "
               "simulated_requests tpot_p99_halfwidth speedup_interval tpot_plain_mean_interval_ms "
               "tpot_spec_mean_interval_ms",
    "breakeven.0": "k verify_overhead concurrency feasible eps_eff lesson exact",
    "best_k.0": "concurrency alpha k speedup speedup_interval too_close",
    "plan": "target feasible alpha request_alpha request_spread measured k rate_at_alpha margin required_rate "
            "required_alpha plain_ms_b1 shown_batch plain_ms_shown k_target speedup_target schedule k_zero_at eps "
            "gate_alpha gate_rate break_evens lesson_gate_as_rate lesson_gate_as_alpha p99_budget served_model "
            "speedup_target_interval too_close close_calls gate_rate_interval speedup_sd",
    "mix": "k concurrency eps prefill_share domains naive_alpha naive_speedup blended_speedup naive_error weak "
           "routed_speedup trained_speedup trained_alpha best_k best_k_speedup request_shares tau speedup_mc "
           "tpot_plain_p99_ms tpot_spec_p99_ms tpot_spec_mean_ms tpot_plain_mean_ms tpot_p99_change slow_alpha "
           "slow_domains assumed blended_speedup_interval",
    "mix.domains.0": "name share alpha tau speedup time_share",
    "measured": "k k_mean varying_k drafts acceptance_rate acceptance_length per_position_rates per_position_alpha "
                "alpha source notes by_concurrency tpot_speedup throughput_speedup p99_tpot_change p99_itl_change "
                "benchmark prediction",
    "measured.by_concurrency.0": "concurrency feasible eps speedup",
    "measured.benchmark": "baseline spec changes max_concurrency",
    "measured.prediction": "concurrency speedup p99_tpot_change requests_alpha requests_spread p99_itl_change "
                           "p99_token_itl_change",
    "gate": "verdict reasons concurrency k eps breakeven_rate required_rate required_alpha margin p99_budget",
    "gate.reasons.0": "check passed detail",
    "exercises": "speedup_targets traffic_mix methods tail_diagnosis draft_memory",
    "exercises.speedup_targets.rows.0": "eps source alpha_2x alpha_3x lesson_2x lesson_3x",
    "exercises.methods.rows.0": "draft method params weight_bytes kv_bytes_per_token draft_step_ms eps_b1 eps_target "
                                "max_concurrency config",
    "exercises.tail_diagnosis": "eps alpha tau k p99_change mean_change zero_accept_token_share round_mean_change "
                                "remedies concurrency schedule tpot symptom k_zero_at",
    "exercises.tail_diagnosis.remedies.0": "k eps token",
    "exercises.draft_memory.rows.0": "draft params weight_bytes kv_bytes_per_token kv_bytes_at_target max_concurrency",
}


class JsonSchema(unittest.TestCase):
    def test_every_documented_key_is_still_there(self):
        fixtures = ROOT / "tests" / "fixtures"
        status, out, err = run(SMALL + ["--json", "--no-write", "--exercises", "--metrics",
                                        str(fixtures / "metrics_after.prom"), "--bench-baseline",
                                        str(fixtures / "bench_baseline.json"), "--bench-spec",
                                        str(fixtures / "bench_spec.json")])
        self.assertEqual(status, 0, err)
        data = json.loads(out)
        for path, keys in JSON_KEYS.items():
            node = data
            for part in filter(None, path.split(".")):
                node = node[int(part)] if part.isdigit() else node[part]
            with self.subTest(path=path):
                missing = [key for key in keys.split() if key not in node]
                self.assertEqual(missing, [])


class Navigation(unittest.TestCase):
    def test_the_start_here_index_names_real_functions(self):
        # Each entry of main.py's map names functions, and the module that holds them where it is not main.py.
        index = main.__doc__.split("Start here")[1].split("Sources:")[0]
        names = [word for word in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", index) if "_" in word]
        self.assertGreaterEqual(len(names), 12)
        modules = [main] + [importlib.import_module(f"rollout.{name}") for name in rollout.MODULES]
        for name in names:
            with self.subTest(name=name):
                self.assertTrue(any(callable(getattr(module, name, None)) for module in modules), name)


class EditedConstants(unittest.TestCase):
    """main.py's constants are what a run falls back on: an edited one reaches the run through main.SETTINGS, not the
    package (which writes no default of its own)."""

    def test_settings_are_main_pys_constants(self):
        # Each field is the constant of its name in capitals, the very object: a miswired field (kv_dtype from
        # WEIGHTS_DTYPE) would make an edit of one constant move another.
        for record in (main.SETTINGS, main.SETTINGS.deployment):
            for name in (f.name for f in dataclasses.fields(record) if f.name != "deployment"):
                with self.subTest(field=name):
                    self.assertIs(getattr(record, name), getattr(main, name.upper()))

    def test_an_edited_constant_reaches_the_tables_the_plan_and_the_json(self):
        edited = main.SETTINGS.edited(model="llama-3.1-8b", temperature=0.3,
                                      model_settings={("llama-3.1-8b", "h100-sxm"): dict(tp=2, weights_dtype="fp8")},
                                      expected_alpha=0.6, input_tokens=700, ks=(2,), concurrencies=(1, 16))
        with mock.patch.object(main, "SETTINGS", edited), tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "plan.md"
            status, text, err = run(["--out", str(out)])
            self.assertEqual(status, 0, err)
            plan = out.read_text()
            status, dumped, err = run(["--json", "--no-write"])
            self.assertEqual(status, 0, err)
        data = json.loads(dumped)
        self.assertEqual((data["deployment"]["model"], data["deployment"]["tp"], data["deployment"]["input_tokens"]),
                         ("llama-3.1-8b", 2, 700))
        self.assertEqual(data["deployment"]["weights_dtype"], "fp8")
        self.assertEqual(sorted({c["k"] for c in data["cells"]}), [2])
        self.assertEqual(data["verdict"]["alpha"], 0.6)
        self.assertIn("--temperature 0.3 ", plan.replace("\\\n", " "))
        self.assertNotIn("--temperature 0.7", plan)
        self.assertIn("This assumes per-token alpha 0.60 until", text)
        self.assertIn("(default 700)", " ".join(flags.build_parser(edited).format_help().split()))


class Wrote(unittest.TestCase):
    def test_the_last_line_names_the_plan_its_charts_and_counts_the_benchmark_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            out, folder = Path(tmp) / "plan.json", Path(tmp) / "runs"   # a plan named .json is still the plan
            folder.mkdir()
            status, text, err = run(["--ks", "3", "--concurrency", "1,8", "--out", str(out), "--predict-bench",
                                     str(folder)])
            written = sorted(p.name for p in folder.iterdir())
        self.assertEqual(status, 0, err)
        self.assertEqual(len(written), 4)   # baseline and K = 3 at each of two concurrencies
        charts = ", ".join(str(Path(tmp) / name) for name in ("chart-speedup.svg", "chart-best-k.svg",
                                                               "chart-itl-cdf.svg", "chart-slo.svg"))
        self.assertEqual(text.splitlines()[-1], f"Wrote {out}, {charts}, 4 predicted benchmark files in {folder}.")

    def test_benchmark_files_beside_the_plan_are_counted_not_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "plan.md"
            status, text, err = run(["--ks", "3", "--concurrency", "1,8", "--out", str(out), "--predict-bench", tmp])
        self.assertEqual(status, 0, err)
        last = text.splitlines()[-1]
        self.assertTrue(last.endswith(f"chart-slo.svg, 4 predicted benchmark files in {tmp}."), last)
        self.assertNotIn(".json", last)


class Progress(unittest.TestCase):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    def test_only_long_runs_on_a_terminal_show_progress(self):
        big = report.Grid(tuple(i / 100 for i in range(30, 81, 2)), tuple(range(1, 9)), (0.1, "auto"),
                     (1, 2, 4, 8, 16, 32, 64, 128))
        stream = self.Terminal()
        show = flags.progress_meter(big, stream)
        self.assertIsNotNone(show)
        show(1, 208)
        self.assertTrue(stream.getvalue().startswith("\rsimulating requests: 1/208"))
        show(208, 208)                                     # the last call clears the line
        self.assertTrue(stream.getvalue().endswith("\r"))
        self.assertIsNone(flags.progress_meter(big, io.StringIO()))                     # not a terminal
        default = report.Grid(acceptance=main.ALPHAS, ks=main.KS, overheads=main.VERIFY_OVERHEADS, concurrencies=main.CONCURRENCIES)
        self.assertIsNone(flags.progress_meter(default, self.Terminal()))               # a short run


class BadInput(unittest.TestCase):
    CASES = [
        (["--alphas", "1.5"], "--alphas"),
        (["--alphas", "-0.1"], "--alphas"),
        (["--alphas", "nan"], "--alphas"),
        (["--alphas", "abc"], "--alphas"),
        (["--alphas", ""], "--alphas"),
        (["--alphas", "0.5,,0.6"], "--alphas"),
        (["--ks", "0"], "--ks"),
        (["--ks", "2.5"], "--ks"),
        (["--ks", "x"], "--ks"),
        (["--verify-overheads", "-0.1"], "--verify-overheads"),
        (["--verify-overheads", "inf"], "--verify-overheads"),
        (["--verify-overheads", "fast"], "--verify-overheads"),
        (["--concurrency", "0"], "--concurrency"),
        (["--concurrency", "1.5"], "--concurrency"),
        (["--seed", "x"], "--seed"),
        (["--alpha-spread", "0.7"], "--alpha-spread"),
        (["--alpha-spread", "-0.1"], "--alpha-spread"),
        (["--alpha-spread", "0.1,0.2"], "--alpha-spread"),
        (["--output-spread", "x"], "--output-spread"),
        (["--output-spread", "3"], "--output-spread"),
        (["--mix", "chat:0.7:0.7:1,code:0.3:0.4"], "--mix"),
        (["--mix", "chat:0.7:0.7:many,code:0.3:0.4"], "--mix"),
        (["--out", "/nonexistent-folder/plan.md"], "--out"),
        (["--bogus"], "--bogus"),
        (["--input-tokens", "0"], "--input-tokens"),
        (["--output-tokens", "many"], "--output-tokens"),
    ]

    def test_each_bad_value_exits_2_with_one_line_and_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "plan.md"
            for argv, flag in self.CASES:
                with self.subTest(argv=argv):
                    extra = [] if "--out" in argv else ["--out", str(target)]
                    status, out, err = run(argv + extra)
                    self.assertEqual(status, 2)
                    self.assertEqual(out, "")
                    self.assertEqual(len(err.strip().splitlines()), 1, err)
                    self.assertIn(flag, err)
                    self.assertFalse(target.exists())

    def test_message_names_range_and_value(self):
        _, _, err = run(["--alphas", "0.2,1.5"])
        self.assertIn("[0, 1]", err)
        self.assertIn("'1.5'", err)

    def test_no_traceback_from_a_real_process(self):
        proc = subprocess.run([sys.executable, str(MAIN_PATH), "--ks", "0", "--no-write"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
