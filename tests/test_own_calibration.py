"""Calibrating on your own runs (issue 12): benchmark files written from a known deployment whose
constants differ from the published fit; the fit on some concurrencies and K predicts the others."""
import json
import tempfile
import unittest
from pathlib import Path

from load_main import load_main, run

m = load_main()
# The "true" deployment: slower memory, dearer passes, engine cost per token and draft steps.
TRUE = m.FIT._replace(bw_hopper=0.70, pass_fixed_ms_vllm=2.5, token_us=25.0, draft_fixed_ms_vllm=1.2)
DEP = m.make_deployment()                      # Llama 3.3 70B fp8, 4 x H100, vLLM
PROMPT, OUTPUT = 600, 300
TAU = {2: 2.0, 3: 2.35, 5: 2.8}                # acceptance length the runs measured at each K


def bench_file(folder, batch, k=None, fit=TRUE, scale=1.0):
    """A `vllm bench serve --save-result` JSON as vLLM writes it, its mean TPOT from `fit`."""
    spec_run = m.Run(batch=batch, k=k, tau=TAU.get(k), input_tokens=PROMPT, output_tokens=OUTPUT)
    tpot = m.run_tpot_ms(DEP, spec_run, fit) * scale
    completed = max(200, 10 * batch)
    data = dict(date="20261129-120000", backend="openai-chat", model_id="meta-llama/Llama-3.3-70B-Instruct",
                num_prompts=completed, request_rate="inf", max_concurrency=batch, completed=completed,
                total_input_tokens=PROMPT * completed, total_output_tokens=OUTPUT * completed,
                output_throughput=batch * 1000.0 / tpot, mean_tpot_ms=tpot, median_tpot_ms=tpot, p99_tpot_ms=1.2 * tpot,
                mean_itl_ms=tpot, p99_itl_ms=1.5 * tpot, mean_ttft_ms=200.0)
    if k:
        drafts = 10_000
        accepted = round((TAU[k] - 1) * drafts)
        data.update(spec_decode_num_drafts=drafts, spec_decode_draft_tokens=k * drafts,
                    spec_decode_accepted_tokens=accepted, spec_decode_acceptance_rate=100.0 * accepted / (k * drafts),
                    spec_decode_acceptance_length=1 + accepted / drafts)
    path = Path(folder) / (f"spec_k{k}_c{batch}.json" if k else f"baseline_c{batch}.json")
    path.write_text(json.dumps(data))
    return str(path)


class OwnRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        # Four baselines and two speculative runs, as the plan's stages 0 and 1 write them.
        cls.files = [bench_file(d, b) for b in (1, 8, 32, 128)] + [bench_file(d, 1, 3), bench_file(d, 32, 3)]
        cls.runs = m.read_calibration_runs(cls.files)
        cls.fit, cls.report = m.calibrate_on_runs(DEP, cls.runs)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_runs_are_read_as_written(self):
        self.assertEqual([(r.batch, r.k) for r in self.runs],
                         [(1, None), (8, None), (32, None), (128, None), (1, 3), (32, 3)])
        self.assertEqual((self.runs[0].input_tokens, self.runs[0].output_tokens), (PROMPT, OUTPUT))
        self.assertAlmostEqual(self.runs[-1].tau, 2.35, places=9)

    def test_the_fit_reproduces_its_own_runs(self):
        self.assertLess(self.report.worst_error, 0.02)
        self.assertEqual(set(self.report.fitted_fields),
                         {"bw_hopper", "pass_fixed_ms_vllm", "token_us", "draft_fixed_ms_vllm"})

    def test_predictions_at_unseen_batches_and_ks_within_three_percent(self):
        errors = []
        for batch, k in ((16, None), (64, None), (256, None), (16, 2), (64, 2), (16, 5), (128, 5)):
            probe = m.Run(batch=batch, k=k, tau=TAU.get(k), input_tokens=PROMPT, output_tokens=OUTPUT)
            errors.append(abs(m.run_tpot_ms(DEP, probe, self.fit) / m.run_tpot_ms(DEP, probe, TRUE) - 1))
        errors.sort()
        self.assertLessEqual(errors[len(errors) // 2], 0.03)
        # The published fit, for comparison, misses this deployment by far more.
        before = [abs(m.run_tpot_ms(DEP, m.Run(batch=b, k=None, tau=None, input_tokens=PROMPT, output_tokens=OUTPUT), m.FIT)
                      / m.run_tpot_ms(DEP, m.Run(batch=b, k=None, tau=None, input_tokens=PROMPT, output_tokens=OUTPUT), TRUE) - 1)
                  for b in (16, 64, 256)]
        self.assertGreater(min(before), 0.10)

    def test_the_cli_uses_the_calibrated_model_everywhere(self):
        status, out, err = run(["--calibrate", ",".join(self.files), "--alphas", "0.7", "--ks", "3",
                                "--concurrency", "1,64", "--json", "--no-write"])
        self.assertEqual(status, 0, err)
        data = json.loads(out)
        self.assertEqual(len(data["calibration"]["runs"]), 6)
        self.assertLess(data["calibration"]["worst_error"], 0.02)
        # The plain step the grid uses is the fitted deployment's, at the deployment's own lengths.
        self.assertAlmostEqual(data["cells"][0]["plain_step_ms"], m.plain_step_ms(DEP, 1, self.fit), places=4)
        self.assertAlmostEqual(data["cells"][0]["tpot_plain_mean_ms"] / m.plain_step_ms(DEP, 1, self.fit), 1,
                               delta=0.001)

    def test_the_plan_says_it_is_calibrated(self):
        with tempfile.TemporaryDirectory() as tmp:
            plan = Path(tmp) / "plan.md"
            status, _, err = run(["--calibrate", ",".join(self.files), "--out", str(plan)])
            self.assertEqual(status, 0, err)
            text = plan.read_text()
        self.assertIn(f"Calibrated on 6 of your runs: median error {self.report.median_error * 100:.1f}%", text)
        self.assertIn("| `baseline_c128.json` | 128 |", text)


class TooLittle(unittest.TestCase):
    def refused(self, files, *needles):
        status, out, err = run(["--calibrate", ",".join(files), "--no-write"])
        self.assertEqual(status, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1)
        for needle in needles:
            self.assertIn(needle, err)

    def test_what_cannot_be_fitted_says_what_to_run(self):
        with tempfile.TemporaryDirectory() as d:
            self.refused([bench_file(d, 8)], "too little", "three concurrencies")
            self.refused([bench_file(d, 8), bench_file(d, 8, 3)], "baselines at 8", "three concurrencies")
            self.refused([bench_file(d, 8, 3), bench_file(d, 32, 3)], "no baseline")

    def test_files_that_disagree(self):
        with tempfile.TemporaryDirectory() as d:
            files = [bench_file(d, 1), bench_file(d, 8), bench_file(d, 32, scale=2.5)]
            self.refused(files, "disagree", "baseline_c32.json")


if __name__ == "__main__":
    unittest.main()
