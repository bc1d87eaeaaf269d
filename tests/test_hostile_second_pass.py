"""Hostile input, fourth round (issue 34), second pass: what a tester found in the fixed tool. Each case is refused with
its reason, or shown as text, or bounded in work; the independent check is the input's own contradiction or the
Markdown rule it would break."""
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from support import main, ROOT, run

from rollout import cli, flags, records, writes
from rollout.render.plan import md

FIXTURES = ROOT / "tests" / "fixtures"
SMALL = ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,8"]
BASE, SPEC = FIXTURES / "bench_baseline.json", FIXTURES / "bench_spec.json"
MODEL = 'model_name="meta-llama/Llama-3.3-70B-Instruct"'


class Temporary(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, data):
        path = self.dir / name
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return str(path)

    def refused(self, argv, *needles):
        status, _, err = run(argv)
        self.assertEqual(status, 2, err)
        self.assertEqual(err.count("\n"), 1, err)
        for needle in needles:
            self.assertIn(needle, err)
        return err


class MarkdownFromInput(Temporary):
    def test_a_backslash_cannot_undo_the_escape_of_a_bracket(self):
        # \[x\](evil) is a live link once its brackets are escaped and the backslashes left alone: \\[x\\](evil).
        self.assertEqual(md("\\[x\\](evil)"), "\\\\\\[x\\\\\\](evil)")
        scrape = self.dir / "\\[x\\](evil).prom"
        scrape.write_text((FIXTURES / "metrics_after.prom").read_text())
        out = self.dir / "plan.md"
        status, _, err = run(["--metrics", str(scrape), "--out", str(out), "--ks", "3", "--concurrency", "1,8"])
        self.assertEqual(status, 0, err)
        # GFM opens a link at a [ preceded by an even number of backslashes (none counts): none may be left.
        self.assertEqual(re.findall(r"(?<!\\)(?:\\\\)*\[x", out.read_text()), [])

    def test_emphasis_and_strikethrough_from_names_stay_text(self):
        out = self.dir / "plan.md"
        status, _, err = run(["--mix", "_x_:0.5:0.7,__b__:0.5:0.2", "--out", str(out)] + SMALL)
        self.assertEqual(status, 0, err)
        table = [line for line in out.read_text().splitlines() if line.startswith("| \\_")]
        self.assertEqual([line.split(" | ")[0] for line in table], ["| \\_x\\_", "| \\_\\_b\\_\\_"])
        self.assertEqual(md("org/~~strike~~ *b*"), "org/\\~\\~strike\\~\\~ \\*b\\*")
        self.assertEqual(md("sharegpt_spec_c8.json"), "sharegpt_spec_c8.json")   # inside a word: no emphasis


class ScrapesAndFiles(Temporary):
    def test_one_series_with_its_labels_reordered_is_counted_once(self):
        lines = []
        for labels in (f'{MODEL},engine="0"', f'engine="0",{MODEL}'):
            lines += [f"vllm:spec_decode_num_drafts_total{{{labels}}} 60",
                      f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} 180",
                      f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} 120"]
        path = self.write("d.prom", "\n".join(lines) + "\n")
        self.refused(["--metrics", path, "--gate", "--no-write"] + SMALL, "appears twice")

    def test_percentiles_that_fall_are_not_one_run(self):
        spec = dict(json.loads(SPEC.read_text()), p99_tpot_ms=0.001)
        path = self.write("spec.json", spec)
        self.refused(["--bench-baseline", str(BASE), "--bench-spec", path, "--gate", "--no-write"] + SMALL,
                     "p99_tpot_ms 0.001 is below its median_tpot_ms")
        for rate in (-1, float("nan")):
            with self.subTest(rate=rate):
                path = self.write("rate.json", dict(json.loads(SPEC.read_text()), request_rate=rate))
                self.refused(["--bench-baseline", str(BASE), "--bench-spec", path, "--no-write"] + SMALL,
                             "request_rate must be")

    def test_sglang_gauges_out_of_range_are_refused_by_line(self):
        cases = [("sglang:spec_accept_rate", "-0.5", "a fraction from 0 to 1"), ("sglang:spec_accept_length", "NaN", "from 0 to 33"),
                 ("sglang:spec_accept_length", "+Inf", "from 0 to 33"), ("sglang:spec_accept_length", "1e308", "1e308")]
        for name, value, needle in cases:
            with self.subTest(name=name, value=value):
                text = ('sglang:spec_accept_length{model_name="m"} 2.5\n' if name != "sglang:spec_accept_length"
                        else "") + f'{name}{{model_name="m"}} {value}\n'
                path = self.write("s.prom", text)
                err = self.refused(["--metrics", path, "--engine", "sglang", "--ks", "3", "--no-write",
                                    "--served-model", "m"], "line", name, needle)
                self.assertLess(len(err), 300)

    def test_calibration_runs_of_another_model_are_refused(self):
        other = dict(json.loads(BASE.read_text()), model_id="meta-llama/Llama-3.1-8B-Instruct")
        paths = [self.write(f"other{c}.json", dict(other, max_concurrency=c)) for c in (1, 8, 64)]
        self.refused(["--calibrate", ",".join(paths), "--no-write"] + SMALL, "--calibrate", "measures the model")

    def test_the_served_model_confirms_a_compared_files_alias(self):
        alias = self.write("alias.json", dict(json.loads(BASE.read_text()), model_id="-prod-70b"))
        err = self.refused(["--compare", alias, "--no-write"] + SMALL, "--served-model=-prod-70b")
        status, _, err = run(["--compare", alias, "--served-model=-prod-70b", "--no-write"] + SMALL)
        self.assertEqual(status, 0, err)   # the advice, followed, is taken


class Bounds(Temporary):
    def test_a_grid_of_long_drafts_is_weighed_by_its_k(self):
        rates = ",".join(f"{0.9 + i * 0.0005:.4f}" for i in range(200))
        self.refused(["--acceptance-rates", rates, "--ks", "32", "--no-write"], "units of simulation",
                     f"more than {records.GRID_WORK_LIMIT}")
        # 200 pairs at K 1-5 (1.17 units a pair on average) are within it, as before
        alphas = ",".join(f"{0.3 + 0.015 * i:.3f}" for i in range(40))
        self.assertLessEqual(40 * sum(1 + (k / 8) ** 2 for k in range(1, 6)), records.GRID_WORK_LIMIT)
        args = flags.build_parser(main.SETTINGS).parse_args(["--alphas", alphas, "--ks", "1,2,3,4,5"])
        self.assertEqual(len(flags.parse_grid(args, main.SETTINGS).acceptance), 40)

    def test_requests_count_in_the_work_a_prediction_simulates(self):
        # 20 concurrencies x 3 files x 100,000 prompts of 2 tokens: 6 M requests of a 1-token prompt (one chunk),
        # each counting as REQUEST_WORK steps and one for its chunk, whatever its answer's length.
        concurrencies = ",".join(str(c) for c in range(1, 21))
        err = self.refused(["--no-write", "--output-tokens", "2", "--input-tokens", "1", "--num-prompts", "100000",
                            "--slo", "none", "--concurrency", concurrencies, "--ks", "1,2", "--predict-bench",
                            str(self.dir)],
                           "--predict-bench")
        self.assertIn(f"{60 * 100_000 * (cli.REQUEST_WORK + 1):,} steps' work", err)

    def test_the_benchmark_results_one_run_reads_are_bounded_together(self):
        # The limit scaled down to 2 MiB (the rule, not the size, is under test): three padded results of about
        # 1 MiB, each within the per-file limit, pass it together.
        padded = dict(json.loads(BASE.read_text()), itls=[0] * 500_000)
        paths = [self.write(f"c{i}.json", padded) for i in range(3)]
        total = sum(os.path.getsize(p) for p in paths)
        with mock.patch("rollout.cli.BENCH_TOTAL_BYTES", 2 << 20):
            self.assertGreater(total, 2 << 20)
            self.refused(["--compare", ",".join(paths), "--no-write"] + SMALL,
                         f"are {total / (1 << 20):,.0f} MiB together, more than the 2 MiB")
            self.assertEqual(run(["--compare", ",".join(paths[:1]), "--no-write"] + SMALL)[0], 0)   # one is within

    def test_a_scrape_line_past_its_limit_is_refused(self):
        wide = ",".join(f'l{j}=""' for j in range(2000))
        path = self.write("w.prom", f'vllm:spec_decode_num_drafts_total{{{MODEL},{wide}}} 100\n')
        self.refused(["--metrics", path, "--no-write"] + SMALL, f"longer than {records.LINE_LIMIT_BYTES >> 10} KiB")


class FinalRound(Temporary):
    """What the last hostile round found in these fixes."""

    def test_a_closed_standard_error_keeps_the_report_and_the_error_off_standard_output(self):
        good = subprocess.run(f"{sys.executable} code/main.py --json --no-write {' '.join(SMALL)} 2>&-", shell=True,
                              cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        self.assertEqual(good.returncode, 0)
        self.assertIn("verdict", json.loads(good.stdout))
        bad = subprocess.run(f"{sys.executable} code/main.py --alphas 2 --no-write 2>&-", shell=True, cwd=ROOT,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True)
        self.assertEqual((bad.returncode, bad.stdout), (2, ""))

    def test_a_run_without_a_time_or_with_a_nan_rate_is_refused(self):
        for key, value in (("duration", 0), ("duration", float("nan")), ("request_throughput", float("nan"))):
            with self.subTest(key=key, value=value):
                path = self.write("b.json", json.dumps(dict(json.loads(BASE.read_text()), **{key: value})))
                self.refused(["--bench-baseline", path, "--bench-spec", str(SPEC), "--gate", "--no-write"] + SMALL,
                             f"{key} is {value}")

    def test_a_pipe_that_trickles_is_refused_in_its_time(self):
        writer = subprocess.Popen(["bash", "-c", "while :; do echo '# x'; sleep 0.05; done"], stdout=subprocess.PIPE)
        try:
            with mock.patch("rollout.bounded.PIPE_TOTAL_LIMIT", 0.3):
                status, _, err = run(["--metrics", f"/dev/fd/{writer.stdout.fileno()}", "--no-write"] + SMALL)
        finally:
            writer.kill()
            writer.wait()
            writer.stdout.close()
        self.assertEqual(status, 2)
        self.assertIn("is a pipe still sending after 0.3 s", err)

    def test_a_result_whose_own_numbers_cannot_be_one_run_is_refused(self):
        cases = [(dict(failed=10 ** 9), "completed 1,000 and failed 1,000,000,000 requests of its num_prompts 1,000"),
                 (dict(mean_tpot_ms=0), "mean_tpot_ms is 0 while its percentiles are not"),
                 (dict(burstiness=0), "burstiness must be a number from 0.01 to 100"),
                 (dict(failed=-3), "failed must be a whole number of requests, at least 0; got -3"),
                 (dict(num_prompts=200.5), "num_prompts must be a whole number of requests, at least 1; got 200.5")]
        for changes, needle in cases:
            with self.subTest(changes=changes):
                path = self.write("b.json", json.dumps(dict(json.loads(BASE.read_text()), **changes)))
                self.refused(["--bench-baseline", path, "--bench-spec", str(SPEC), "--gate", "--no-write"] + SMALL,
                             needle)

    def test_a_signal_once_the_run_has_ended_is_ignored_through_the_interpreters_exit(self):
        # Python puts its own handlers back to the default as it shuts down; the run leaves them ignoring instead.
        script = (f"import atexit, os, signal, sys; sys.path.insert(0, {str(ROOT / 'code')!r})\n"
                  "from rollout import writes\n"
                  "atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))   # during the shutdown\n"
                  "from rollout.report import Output\n"
                  "sys.exit(writes.finish(lambda argv: Output(status=0, text='report\\n', files={}), [], whole_process=True))\n")
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (0, "report\n", ""))

    def test_the_front_matter_escapes_the_name_too(self):
        config = self.dir / "a@b.co www.x.com.json"
        config.write_text((FIXTURES / "configs" / "llama-3.3-70b.config.json").read_text())
        out = self.dir / "p.md"
        status, _, err = run(["--model-config", str(config), "--out", str(out)] + SMALL)
        self.assertEqual(status, 0, err)
        front = out.read_text().split("---")[1]
        self.assertIn("a\\@b.co www\\.x.com", front)


class Environment(Temporary):
    def test_safe_path_mode_still_finds_the_package(self):
        for argv, env in (([sys.executable, "-I"], {}), ([sys.executable], {"PYTHONSAFEPATH": "1"})):
            with self.subTest(argv=argv, env=env):
                proc = subprocess.run(argv + [str(ROOT / "code" / "main.py"), "--no-write"] + SMALL,
                                      capture_output=True, text=True, cwd=self.dir, env=dict(os.environ, **env))
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("== Verdict", proc.stdout)

    def test_an_ascii_only_output_shows_escapes_not_a_failure(self):
        proc = subprocess.run([sys.executable, str(ROOT / "code" / "main.py"), "--no-write"] + SMALL,
                              capture_output=True, cwd=ROOT, env=dict(os.environ, PYTHONIOENCODING="ascii"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(b"\\xb1", proc.stdout)   # the report's plus-minus sign, escaped

    def test_the_error_line_starts_a_terminal_line_over_the_progress_line(self):
        class Terminal(io.StringIO):
            def isatty(self):
                return True
        with mock.patch("sys.stderr", Terminal()) as err, mock.patch("sys.stdout", io.StringIO()):
            status = writes.finish(lambda argv: (_ for _ in ()).throw(KeyboardInterrupt), [], whole_process=False)
        self.assertEqual((status, err.getvalue()), (2, "\r\x1b[Kmain.py: error: interrupted; nothing was written\n"))


if __name__ == "__main__":
    unittest.main()
