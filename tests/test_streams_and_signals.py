"""Hostile input, fourth round (issue 34): a signal at the swap of the files, full or closed output streams, files the
tool did not write, impossible measured files and flags that were read too loosely."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from support import ROOT, run

from rollout import charts, cli

MAIN = ROOT / "code" / "main.py"
SMALL = ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,8"]
GATE = ["--no-write", "--gate", "--acceptance-length", "3.9", "--ks", "3", "--concurrency", "1"]


def shell(command):
    """A shell line's exit status and standard error (the streams set up by the shell itself)."""
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT)
    return proc.returncode, proc.stderr


class SignalAtTheSwap(unittest.TestCase):
    """Ctrl-C or SIGTERM right after a file is renamed into place: all or none, and the message says which."""

    def swap(self, signum):
        with tempfile.TemporaryDirectory() as tmp:
            old = {Path(tmp) / f"f{i}.txt": f"old {i}" for i in range(4)}
            for path, text in old.items():
                path.write_text(text)
            new = {path: f"new {i}" for i, path in enumerate(old)}
            real_replace, calls = os.replace, []

            def replace_then_signal(src, dst):
                real_replace(src, dst)
                calls.append(dst)
                if len(calls) == 2:   # between two renames: the worst moment
                    os.kill(os.getpid(), signum)
            previous = signal.getsignal(signal.SIGTERM)
            cli.stop_on_terminate()
            try:
                with mock.patch.object(os, "replace", replace_then_signal):
                    release = cli.write_all(new)
                    with self.assertRaises(KeyboardInterrupt):
                        release()        # the signal lands here, after the whole swap
            finally:
                signal.signal(signal.SIGTERM, previous)
            self.assertEqual({p: p.read_text() for p in old}, new)                 # every file is the new one
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), sorted(p.name for p in old))   # no debris

    def test_ctrl_c_between_two_renames(self):
        self.swap(signal.SIGINT)

    def test_sigterm_between_two_renames(self):
        self.swap(signal.SIGTERM)

    def test_a_failed_rename_puts_everything_back(self):
        with tempfile.TemporaryDirectory() as tmp:
            old = {Path(tmp) / f"f{i}.txt": f"old {i}" for i in range(3)}
            for path, text in old.items():
                path.write_text(text)
            real_replace, calls = os.replace, []

            def fail_third(src, dst):
                calls.append(dst)
                if len(calls) == 3:
                    raise OSError(28, "No space left on device")
                real_replace(src, dst)
            with mock.patch.object(os, "replace", fail_third), self.assertRaises(OSError):
                cli.write_all({p: "new" for p in old})
            self.assertEqual({p: p.read_text() for p in old}, old)
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), sorted(p.name for p in old))

    def test_a_run_killed_in_the_swap_is_rolled_back_by_the_next(self):
        # SIGKILL (or a power cut) cannot be held: the run dies between two renames. Its journal lets the next write
        # put every file back as it was before the dead run, and leave no temporaries.
        with tempfile.TemporaryDirectory() as tmp:
            old = {Path(tmp) / f"f{i}.txt": f"old {i}" for i in range(3)}
            for path, text in old.items():
                path.write_text(text)
            fresh = Path(tmp) / "new.txt"   # a file the dead run was adding
            script = (f"import os, sys; sys.path.insert(0, {str(ROOT / 'code')!r}); from pathlib import Path\n"
                      "from rollout import cli\n"
                      "real, n = os.replace, []\n"
                      "def die(src, dst):\n"
                      "    real(src, dst); n.append(dst)\n"
                      "    if len(n) == 2: os.kill(os.getpid(), 9)\n"
                      "os.replace = die\n"
                      f"cli.write_all({{Path(p): 'new' for p in {sorted(map(str, old)) + [str(fresh)]!r}}})\n")
            proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
            self.assertEqual(proc.returncode, -9, proc.stderr)
            self.assertEqual(sum(p.read_text() == "new" for p in old), 2)          # half swapped
            self.assertEqual(cli.recover_interrupted([*old, fresh]), 1)
            self.assertEqual({p: p.read_text() for p in old}, old)                # all back as they were
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), sorted(p.name for p in old))

    def test_a_planted_journal_touches_nothing_but_the_runs_own_files(self):
        # A journal of a dead process naming files outside the write (delete one, replace another with a third):
        # left alone, and the run writes only its own files.
        with tempfile.TemporaryDirectory() as tmp:
            out, victim, other, evil = (Path(tmp) / n for n in ("o", "victim", "victim2", "evil"))
            out.mkdir()
            for path in (victim, other, evil):
                path.write_text(path.name)
            journal = out / ".eagle3-rollout-journal-4000000.json"
            journal.write_text(json.dumps({"files": [
                {"path": str(victim), "temporary": "/x", "backup": None},
                {"path": str(other), "temporary": None, "backup": str(evil)}]}))
            status, _, err = run(["--out", str(out / "plan.md")] + SMALL)
            self.assertEqual(status, 0, err)
            self.assertEqual([p.read_text() for p in (victim, other, evil)], ["victim", "victim2", "evil"])
            self.assertTrue(journal.exists())

    def test_sigterm_to_a_running_process_is_one_line_and_exit_2(self):
        # A run asked to simulate a large grid, stopped by SIGTERM (what timeout and CI send) while it computes.
        alphas = ",".join(f"{0.3 + 0.015 * i:.3f}" for i in range(40))   # 200 (alpha, K) pairs: seconds of work
        proc = subprocess.Popen([sys.executable, str(MAIN), "--no-write", "--alphas", alphas, "--ks", "1,2,3,4,5"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            proc.wait(timeout=1.2)   # past the imports (about 0.35 s here), inside the computation
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        if proc.returncode == 0:
            self.skipTest("the run finished before the signal")   # a fast machine: nothing to stop
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(err, "main.py: error: interrupted; nothing was written\n")


class OutputStreams(unittest.TestCase):
    def test_a_full_standard_output_is_exit_2_not_the_gates_1(self):
        status, err = shell(f"{sys.executable} code/main.py {' '.join(GATE)} > /dev/full")
        self.assertEqual((status, err), (2, "main.py: error: cannot write to standard output; nothing was written\n"))

    def test_a_closed_standard_output_is_exit_2(self):
        status, err = shell(f"{sys.executable} code/main.py {' '.join(GATE)} >&-")
        self.assertEqual((status, err), (2, "main.py: error: cannot write to standard output; nothing was written\n"))

    def test_bad_input_with_standard_error_closed_is_still_exit_2(self):
        status, _ = shell(f"{sys.executable} code/main.py --ks 0 --no-write 2>&-")
        self.assertEqual(status, 2)

    def test_the_gate_still_passes_with_its_output_read(self):
        status, err = shell(f"{sys.executable} code/main.py {' '.join(GATE)} > /dev/null")
        self.assertEqual((status, err), (0, ""))


class FilesNotItsOwn(unittest.TestCase):
    def test_out_never_replaces_the_tools_own_source(self):
        before = MAIN.read_bytes()
        status, _, err = run(["--out", str(MAIN)] + SMALL)
        self.assertEqual(status, 2)
        self.assertIn("is not a plan or chart this tool wrote", err)
        self.assertEqual(MAIN.read_bytes(), before)
        self.assertFalse((MAIN.parent / "chart-speedup.svg").exists())

    def test_a_chart_beside_the_plan_that_is_not_its_own_is_kept(self):
        with tempfile.TemporaryDirectory() as tmp:
            chart = Path(tmp) / "chart-speedup.svg"
            chart.write_text("<svg>the user's own</svg>")
            status, _, err = run(["--out", str(Path(tmp) / "plan.md")] + SMALL)
            self.assertEqual(status, 2)
            self.assertIn("chart-speedup.svg' exists and is not a plan or chart this tool wrote", err)
            self.assertEqual(chart.read_text(), "<svg>the user's own</svg>")
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), ["chart-speedup.svg"])
            chart.unlink()
            self.assertEqual(run(["--out", str(Path(tmp) / "plan.md")] + SMALL)[0], 0)   # its own: replaced again
            self.assertEqual(run(["--out", str(Path(tmp) / "plan.md")] + SMALL)[0], 0)


class MarkdownFromInput(unittest.TestCase):
    def test_a_path_that_is_markdown_stays_text(self):
        # A scrape whose path is an image's Markdown: the plan names the path, and no renderer fetches the image.
        with tempfile.TemporaryDirectory() as tmp:
            scrape = Path(tmp) / "![pix](https:evil.example).prom"
            scrape.write_text((ROOT / "tests" / "fixtures" / "metrics_after.prom").read_text())
            out = Path(tmp) / "plan.md"
            status, _, err = run(["--metrics", str(scrape), "--ks", "3", "--out", str(out)] + SMALL[:2] + SMALL[4:])
            self.assertEqual(status, 0, err)
            plan = out.read_text()
        self.assertNotIn("![pix](", plan)
        self.assertIn("!\\[pix\\](https:evil.example).prom", plan)


    def test_a_chart_of_a_release_before_the_mark_is_still_its_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            chart = Path(tmp) / "chart-speedup.svg"
            chart.write_text(cli.OLD_CHART_HEAD + "Speedup against per-token alpha</text>\n</svg>\n")
            status, _, err = run(["--out", str(Path(tmp) / "plan.md")] + SMALL)
            self.assertEqual(status, 0, err)
            self.assertIn(charts.CHART_MARK, chart.read_text())   # replaced by this release's, with the mark


class ImpossibleFilesAndLooseFlags(unittest.TestCase):
    def test_more_completed_than_sent_is_refused_with_its_contradiction(self):
        bench = json.loads((ROOT / "tests" / "fixtures" / "bench_baseline.json").read_text())
        bench.update(completed=5000, num_prompts=1000)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "b.json"
            path.write_text(json.dumps(bench))
            status, _, err = run(["--compare", str(path), "--no-write"] + SMALL)
        self.assertEqual(status, 2)
        self.assertIn("completed 5,000 requests of its num_prompts 1,000", err)

    def test_an_abbreviated_flag_is_not_taken_for_a_longer_one(self):
        status, _, err = run(["--predict", tempfile.gettempdir(), "--no-write"] + SMALL)
        self.assertEqual(status, 2)
        self.assertIn("unrecognized arguments: --predict", err)

    def test_a_batch_given_twice_is_refused_not_simulated_twice(self):
        status, _, err = run(["--concurrency", "1,1", "--no-write"])
        self.assertEqual((status, err), (2, "main.py: error: --concurrency: '1' is given twice; give each value "
                                            "once\n"))

    def test_predictions_are_not_written_through_a_linked_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            real, link = Path(tmp) / "real", Path(tmp) / "link"
            real.mkdir()
            link.symlink_to(real)
            status, _, err = run(["--predict-bench", str(link), "--no-write"] + SMALL)
            self.assertEqual(status, 2)
            self.assertIn("is a link", err)
            self.assertEqual(list(real.iterdir()), [])

    def test_a_deeply_nested_file_where_a_prediction_goes_is_refused_as_not_its_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(run(["--predict-bench", tmp, "--no-write"] + SMALL)[0], 0)   # its own files, then
            target = sorted(Path(tmp).glob("*.json"))[0]                                 # one made hostile
            target.write_text("[" * 100_000 + "]" * 100_000)
            status, _, err = run(["--predict-bench", tmp, "--no-write"] + SMALL)
        self.assertEqual(status, 2)
        self.assertIn("is not a prediction this tool wrote", err)

    def test_a_compared_file_whose_name_holds_a_comma_is_named_whole(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "run,1.json"
            path.write_text((ROOT / "tests" / "fixtures" / "bench_baseline.json").read_text())
            status, _, err = run(["--compare", str(path), "--no-write"] + SMALL)
        self.assertEqual(status, 2)
        self.assertIn(f"'{path}' is one file whose name holds a comma", err)

    def test_experts_a_token_past_the_limit_are_refused(self):
        # 4,096 experts a token on 4,096 experts ran past 14 minutes with --ep 4 (the busiest rank's count).
        config = json.loads((ROOT / "tests" / "fixtures" / "configs" / "qwen3-30b-a3b-fp8.config.json").read_text())
        config.update(num_experts=4096, num_experts_per_tok=4096)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "moe.json"
            path.write_text(json.dumps(config))
            status, _, err = run(["--model-config", str(path), "--tp", "4", "--ep", "4", "--gpu", "h200", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("num_experts_per_tok 4,096; this tool models at most 64 experts a token", err)

    def test_a_5000_digit_seed_is_refused_in_one_short_line(self):
        status, _, err = run(["--seed", "9" * 5000, "--no-write"] + SMALL)
        self.assertEqual(status, 2)
        self.assertIn("--seed: expected one value, an integer of at most 18 digits", err)
        self.assertLess(len(err), 200)


if __name__ == "__main__":
    unittest.main()
