"""The command line: determinism, JSON, bad input, and the committed rollout plan."""
import io
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from load_main import MAIN_PATH, ROOT, load_main, run

m = load_main()
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
            self.assertAlmostEqual(tau, m.acceptance_length(cell["alpha"], k), places=5)
            self.assertAlmostEqual(cell["speedup_exact"], tau / (1 + eps), places=5)
            self.assertAlmostEqual(cell["speedup_lesson"], (1 + k * cell["alpha"]) / (1 + eps), places=5)
            self.assertAlmostEqual(cell["breakeven_alpha_lesson"], cell["eps_decode"] / k, places=5)
            self.assertAlmostEqual(cell["round_ms"], (1 + eps) * cell["plain_step_ms"], places=4)
        self.assertEqual(data["deployment"]["max_concurrency"], 472)

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


class Progress(unittest.TestCase):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    def test_only_long_runs_on_a_terminal_show_progress(self):
        big = m.Grid(tuple(i / 100 for i in range(30, 81, 2)), tuple(range(1, 9)), (0.1, "auto"),
                     (1, 2, 4, 8, 16, 32, 64, 128))
        stream = self.Terminal()
        show = m.progress_meter(big, stream)
        self.assertIsNotNone(show)
        show(1, 208)
        self.assertTrue(stream.getvalue().startswith("\rsimulating requests: 1/208"))
        show(208, 208)                                     # the last call clears the line
        self.assertTrue(stream.getvalue().endswith("\r"))
        self.assertIsNone(m.progress_meter(big, io.StringIO()))                     # not a terminal
        default = m.Grid(m.ALPHAS, m.KS, m.VERIFY_OVERHEADS, m.CONCURRENCIES)
        self.assertIsNone(m.progress_meter(default, self.Terminal()))               # a short run


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
