"""Hostile input, fourth round (issue 34): a signal at the swap of the files, full or closed output streams, files the
tool did not write, impossible measured files and flags that were read too loosely."""
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from support import ROOT, run

from rollout.report import Output
from rollout import writes

from rollout.render import charts
from rollout.writes import PLAN_MARK

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
            old = {Path(tmp) / f"f{i}.md": f"{PLAN_MARK}old {i}" for i in range(4)}   # plans this tool wrote
            for path, text in old.items():
                path.write_text(text)
            new = {path: f"{PLAN_MARK}new {i}" for i, path in enumerate(old)}
            real_replace, calls = os.replace, []

            def replace_then_signal(src, dst):
                real_replace(src, dst)
                calls.append(dst)
                if len(calls) == 2:   # between two renames: the worst moment
                    os.kill(os.getpid(), signum)
            previous, _ = writes.stop_once()
            try:
                with mock.patch.object(os, "replace", replace_then_signal):
                    release = writes.write_all(new)
                    with self.assertRaises(KeyboardInterrupt):
                        release()        # the signal lands here, after the whole swap
            finally:
                for number, handler in previous.items():
                    signal.signal(number, handler)
            self.assertEqual({p: p.read_text() for p in old}, new)                 # every file is the new one
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), sorted(p.name for p in old))   # no debris

    def test_ctrl_c_between_two_renames(self):
        self.swap(signal.SIGINT)

    def test_sigterm_between_two_renames(self):
        self.swap(signal.SIGTERM)

    def test_a_hangup_between_two_renames(self):   # a closed terminal or ssh session: its default would kill
        self.swap(signal.SIGHUP)

    def test_a_dead_runs_temporaries_are_removed_by_the_next(self):
        # A run killed (SIGKILL) while it wrote its temporaries left them, with no journal: the swap never began.
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            debris = [out / ".eagle3-rollout-4000000-0.tmp", out / ".eagle3-rollout-4000000-0.bak"]
            kept = [out / ".eagle3-rollout-4000001-0.tmp", out / ".eagle3-rollout-journal-4000001.json",
                    out / ".eagle3-rollout-x-0.tmp", out / "notes.tmp"]   # a journal's own; not the tool's names
            for path in debris + kept:
                path.write_text("x")
            status, _, err = run(["--out", str(out / "plan.md")] + SMALL)
            self.assertEqual(status, 0, err)
            self.assertEqual([p.exists() for p in debris + kept], [False, False, True, True, True, True])

    def test_a_failed_rename_puts_everything_back(self):
        with tempfile.TemporaryDirectory() as tmp:
            old = {Path(tmp) / f"f{i}.md": f"{PLAN_MARK}old {i}" for i in range(3)}
            for path, text in old.items():
                path.write_text(text)
            real_replace, calls = os.replace, []

            def fail_third(src, dst):
                calls.append(dst)
                if len(calls) == 3:
                    raise OSError(28, "No space left on device")
                real_replace(src, dst)
            with mock.patch.object(os, "replace", fail_third), self.assertRaises(writes.WriteFailed) as caught:
                writes.write_all({p: PLAN_MARK + "new" for p in old})
            self.assertEqual((caught.exception.path, caught.exception.reason),
                             (sorted(old)[2], "No space left on device"))   # the file it was writing, and why
            self.assertEqual({p: p.read_text() for p in old}, old)
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), sorted(p.name for p in old))

    def test_a_run_killed_in_the_swap_is_rolled_back_by_the_next(self):
        # SIGKILL (or a power cut) cannot be held: the run dies between two renames. Its journal lets the next write
        # put every file back as it was before the dead run, and leave no temporaries.
        with tempfile.TemporaryDirectory() as tmp:
            old = {Path(tmp) / f"f{i}.md": f"{PLAN_MARK}old {i}" for i in range(3)}
            for path, text in old.items():
                path.write_text(text)
            fresh = Path(tmp) / "new.md"   # a file the dead run was adding
            script = (f"import os, sys; sys.path.insert(0, {str(ROOT / 'code')!r}); from pathlib import Path\n"
                      "from rollout import writes\n"
                      "real, n = os.replace, []\n"
                      "def die(src, dst):\n"
                      "    real(src, dst); n.append(dst)\n"
                      "    if len(n) == 2: os.kill(os.getpid(), 9)\n"
                      "os.replace = die\n"
                      f"writes.write_all({{Path(p): {PLAN_MARK + 'new'!r} for p in {sorted(map(str, old)) + [str(fresh)]!r}}})\n")
            proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
            self.assertEqual(proc.returncode, -9, proc.stderr)
            self.assertEqual(sum(p.read_text() == PLAN_MARK + "new" for p in old), 2)   # half swapped
            self.assertEqual(writes.recover_interrupted([*old, fresh]), 1)
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


class SignalsAnywhere(unittest.TestCase):
    """Hostile round 4, second pass: a signal while the package loads, during a rollback, before the swap, and
    after the run has ended."""

    def test_a_signal_while_the_package_loads_is_one_line_and_exit_2(self):
        # SIGTERM sent by the run itself as its first package module is imported: before main() can handle it.
        script = (f"import builtins, os, runpy, signal, sys; sys.path.insert(0, {str(ROOT / 'code')!r})\n"
                  "real = builtins.__import__\n"
                  "def load(name, *args, **kw):\n"
                  "    if name.startswith('rollout.'): os.kill(os.getpid(), signal.SIGTERM)\n"
                  "    return real(name, *args, **kw)\n"
                  "builtins.__import__ = load\n"
                  f"sys.argv = ['main.py', '--no-write']; runpy.run_path({str(MAIN)!r}, run_name='__main__')\n")
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
        self.assertEqual((proc.returncode, proc.stderr, proc.stdout),
                         (2, "main.py: error: interrupted; nothing was written\n", ""))

    def rollback_case(self, hook):
        """write_all over four plans of its own, with hook(call number) run at each os.replace: the exception it
        ends with, and whether every file is as it was with nothing else left in the folder."""
        with tempfile.TemporaryDirectory() as tmp:
            old = {Path(tmp) / f"f{i}.md": f"{PLAN_MARK}old {i}" for i in range(4)}
            for path, text in old.items():
                path.write_text(text)
            real_replace, calls = os.replace, []

            def replace(src, dst):
                calls.append(dst)
                hook(len(calls))
                real_replace(src, dst)
            previous, _ = writes.stop_once()
            try:
                with mock.patch.object(os, "replace", replace):
                    writes.write_all({p: PLAN_MARK + "new" for p in old})
                raised = None
            except BaseException as err:   # noqa: B902 (the test's subject is which one)
                raised = err
            finally:
                for number, handler in previous.items():
                    signal.signal(number, handler)
            untouched = ({p: p.read_text() for p in old} == old
                         and sorted(p.name for p in Path(tmp).iterdir()) == sorted(p.name for p in old))
            return raised, untouched

    def test_two_signals_during_a_rollback_leave_the_old_files_and_no_temporaries(self):
        def hook(call):
            if call == 3:   # two files placed; both signals come, then the third rename fails
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGTERM)
                raise OSError(28, "No space left on device")
            if call > 4:    # the rollback's own renames: a third signal in the middle of it
                os.kill(os.getpid(), signal.SIGINT)
        raised, untouched = self.rollback_case(hook)
        self.assertIsInstance(raised, KeyboardInterrupt)   # raised once the rollback is whole: nothing written
        self.assertTrue(untouched)

    def test_a_signal_while_the_temporaries_are_written_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            old = {Path(tmp) / f"f{i}.md": f"{PLAN_MARK}old {i}" for i in range(4)}
            for path, text in old.items():
                path.write_text(text)
            real_open, real_unlink, opened = os.open, os.unlink, []

            def open_then_signal(path, *args, **kw):
                opened.append(path)
                if len(opened) == 2:
                    os.kill(os.getpid(), signal.SIGTERM)
                return real_open(path, *args, **kw)

            def unlink_then_signal(path):   # a second signal in the middle of the clean-up
                os.kill(os.getpid(), signal.SIGINT)
                real_unlink(path)
            previous, _ = writes.stop_once()
            try:
                with mock.patch.object(os, "open", open_then_signal), mock.patch.object(os, "unlink", unlink_then_signal), \
                        self.assertRaises(KeyboardInterrupt):
                    writes.write_all({p: PLAN_MARK + "new" for p in old})
            finally:
                for number, handler in previous.items():
                    signal.signal(number, handler)
            self.assertEqual({p: p.read_text() for p in old}, old)
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), sorted(p.name for p in old))

    def test_a_file_that_became_the_users_before_the_swap_is_kept(self):
        # The ownership check at parse time passed; the file changed while the run computed.
        with tempfile.TemporaryDirectory() as tmp:
            plan = Path(tmp) / "plan.md"
            plan.write_text(PLAN_MARK + "an earlier plan")

            def compute(argv):
                plan.write_text("the user's notes")   # meanwhile
                return Output(status=0, text="report\n", files={plan: PLAN_MARK + "new"})
            with mock.patch("sys.stdout", io.StringIO()), mock.patch("sys.stderr", io.StringIO()) as err:
                status = writes.finish(compute, [], whole_process=False)
            self.assertEqual(status, 2)
            self.assertIn("--out: cannot write", err.getvalue())
            self.assertIn("this tool did not write", err.getvalue())
            self.assertEqual(plan.read_text(), "the user's notes")
            self.assertEqual(os.listdir(tmp), ["plan.md"])

    def test_a_failed_write_names_the_flag_whose_file_it_was(self):
        # A full disk where the plan goes, with predictions written to another folder: --out's, not --predict-bench's.
        with tempfile.TemporaryDirectory() as tmp:
            plan, prediction = Path(tmp) / "plan.md", Path(tmp) / "runs" / "b.json"
            prediction.parent.mkdir()
            files = {prediction: '{"eagle3_rollout_prediction": {}}', plan: PLAN_MARK + "new"}
            real_replace = os.replace

            def full(src, dst):
                if Path(dst) == plan:
                    raise OSError(28, "No space left on device")
                real_replace(src, dst)
            with mock.patch.object(os, "replace", full), mock.patch("sys.stdout", io.StringIO()), \
                    mock.patch("sys.stderr", io.StringIO()) as err:
                status = writes.finish(lambda argv: Output(status=0, text="report\n", files=files), [], whole_process=False)
            self.assertEqual((status, err.getvalue()), (2, f"main.py: error: --out: cannot write '{plan}': No space left "
                                                           "on device; nothing was written\n"))
            self.assertEqual(sorted(p.name for p in Path(tmp).rglob("*")), ["runs"])   # the prediction rolled back

    def test_signals_after_the_run_has_ended_change_nothing(self):
        script = (f"import os, signal, sys; sys.path.insert(0, {str(ROOT / 'code')!r})\n"
                  "from rollout import writes\n"
                  "from rollout.report import Output\n"
                  "status = writes.finish(lambda argv: Output(status=0, text='report\\n', files={}), [], whole_process=True)\n"
                  "os.kill(os.getpid(), signal.SIGINT); os.kill(os.getpid(), signal.SIGTERM)\n"
                  "print('ended', status)\n")
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (0, "report\nended 0\n", ""))


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

    def test_help_on_a_full_or_closed_standard_output_is_exit_2(self):
        for redirect in ("> /dev/full", ">&-"):
            with self.subTest(redirect=redirect):
                status, err = shell(f"{sys.executable} code/main.py --help {redirect}")
                self.assertEqual((status, err), (2, "main.py: error: cannot write the help to standard output\n"))

    def test_an_input_that_fails_to_read_is_named_not_the_output(self):
        status, _, err = run(["--metrics", "/proc/self/mem", "--no-write"] + SMALL)
        self.assertEqual((status, err), (2, "main.py: error: --metrics: cannot read /proc/self/mem: Input/output "
                                            "error\n"))

    def test_a_pipe_whose_writer_sends_nothing_is_refused_in_seconds(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = Path(tmp) / "scrape"
            os.mkfifo(fifo)
            writer = subprocess.Popen(["bash", "-c", f"exec 3>{fifo}; sleep 30"])   # opens it, writes nothing
            try:
                with mock.patch("rollout.bounded.PIPE_IDLE_LIMIT", 0.5):
                    status, _, err = run(["--metrics", str(fifo), "--no-write"] + SMALL)
            finally:
                writer.kill()
                writer.wait()
        self.assertEqual(status, 2)
        self.assertIn("is a pipe that sent nothing for 0.5 s", err)

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

    def test_names_and_paths_that_would_autolink_stay_text(self):
        # GFM links www.x, scheme://x and x@y.z in plain text: a scrape's path and a traffic domain's name that
        # look so reach the plan escaped. Checked with GFM's own triggers (cmark-gfm extensions/autolink.c).
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "https:" / "evil.example"
            folder.mkdir(parents=True)
            scrape = folder / "www.evil.example user@evil.example.prom"
            scrape.write_text((ROOT / "tests" / "fixtures" / "metrics_after.prom").read_text())
            out = Path(tmp) / "plan.md"
            status, _, err = run(["--metrics", f"{tmp}/https://evil.example/{scrape.name}", "--ks", "3", "--out",
                                  str(out), "--mix", "www.evil.co:0.5:0.6,chat:0.5:0.7"] + SMALL[:2] + SMALL[4:])
            self.assertEqual(status, 0, err)
            plan = out.read_text()
        prose = re.sub(r"```.*?```", "", plan, flags=re.S)   # code blocks link nothing
        self.assertIn("www\\.evil.example user\\@evil.example.prom", prose)   # the path, shown
        self.assertIn("| www\\.evil.co |", prose)                              # the domain, shown
        self.assertEqual(re.findall(r"(?<!\\)www\.|(?<!\\)://|[\w.+-](?<!\\)@\w", prose), [])


    def test_a_chart_of_a_release_before_the_mark_is_still_its_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            chart = Path(tmp) / "chart-speedup.svg"
            chart.write_text(writes.OLD_CHART_HEAD + "Speedup against per-token alpha</text>\n</svg>\n")
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
        # 4,096 experts a token on 4,096 experts ran past 14 minutes with --ep 4 (the busiest rank's count); within the
        # expert limit, a token routed to every one of 1,024 is refused by the limit a token
        config = json.loads((ROOT / "tests" / "fixtures" / "configs" / "qwen3-30b-a3b-fp8.config.json").read_text())
        config.update(num_experts=1024, num_experts_per_tok=1024)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "moe.json"
            path.write_text(json.dumps(config))
            status, _, err = run(["--model-config", str(path), "--tp", "4", "--ep", "4", "--gpu", "h200", "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("num_experts_per_tok 1,024; this tool models at most 64 experts a token", err)

    def test_links_are_not_a_way_around_the_named_folder(self):
        # The named folder through a link however it is spelled (link/., link/), a '..' after a link, and --out's
        # own folder: each refused, and nothing lands in the real folder.
        with tempfile.TemporaryDirectory() as tmp:
            real, link, sub = Path(tmp) / "real", Path(tmp) / "link", Path(tmp) / "sub"
            real.mkdir()
            (real / "x").mkdir()
            sub.mkdir()
            link.symlink_to(real / "x")
            cases = [(["--predict-bench", f"{link}/."], "is a link"), (["--predict-bench", f"{link}/"], "is a link"),
                     (["--predict-bench", f"{link}/../x"], "climbs out of a link with '..'"),
                     (["--out", f"{link}/plan.md"], "is a link"), (["--out", f"{link}/../plan.md"], "climbs out")]
            for flags, needle in cases:
                with self.subTest(flags=flags):
                    status, _, err = run(flags + SMALL + (["--no-write"] if flags[0] != "--out" else []))
                    self.assertEqual(status, 2, err)
                    self.assertIn(needle, err)
            self.assertEqual([p.name for p in real.rglob("*")], ["x"])
            self.assertEqual(run(["--predict-bench", f"{sub}/.", "--no-write"] + SMALL)[0], 0)   # no link: written
            self.assertEqual(len(list(sub.glob("*.json"))), 4)

    def test_one_file_spelled_many_ways_is_compared_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "b.json"
            path.write_text((ROOT / "tests" / "fixtures" / "bench_baseline.json").read_text())
            (Path(tmp) / "hard.json").hardlink_to(path)
            (Path(tmp) / "soft.json").symlink_to(path)
            spellings = [str(path), f"{tmp}/./b.json", f"{tmp}/../{Path(tmp).name}/b.json", f"{tmp}/hard.json",
                         f"{tmp}/soft.json"]
            status, data, err = run(["--compare", ",".join(spellings), "--no-write", "--json"] + SMALL)
        self.assertEqual(status, 0, err)
        self.assertEqual([c["path"] for c in json.loads(data)["compare"]], [str(path)])

    def test_a_draft_model_of_another_tokenizer_is_refused(self):
        # Llama 3.2 1B (128,256 tokens) for DeepSeek-V3 (129,280): 0.8% apart, yet two tokenizers.
        status, _, err = run(["--model", "deepseek-v3", "--tp", "8", "--gpu", "h200", "--draft", "llama-3.2-1b",
                              "--no-write"])
        self.assertEqual(status, 2)
        self.assertIn("its vocabulary (128,256 tokens) is not the target's (129,280)", err)
        status, _, err = run(["--model", "llama-3.3-70b", "--tp", "4", "--draft", "llama-3.2-1b", "--no-write"]
                             + SMALL)
        self.assertEqual(status, 0, err)   # the same tokenizer: accepted

    def test_a_run_that_decoded_no_token_cannot_pass_the_gate(self):
        bench = json.loads((ROOT / "tests" / "fixtures" / "bench_spec.json").read_text())
        bench.update(total_output_tokens=0)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "spec.json"
            path.write_text(json.dumps(bench))
            status, _, err = run(["--bench-baseline", str(ROOT / "tests" / "fixtures" / "bench_baseline.json"),
                                  "--bench-spec", str(path), "--gate", "--no-write"] + SMALL)
        self.assertEqual(status, 2)
        self.assertIn("has total_output_tokens 0", err)

    def test_a_5000_digit_seed_is_refused_in_one_short_line(self):
        status, _, err = run(["--seed", "9" * 5000, "--no-write"] + SMALL)
        self.assertEqual(status, 2)
        self.assertIn("--seed: expected one value, an integer of at most 18 digits", err)
        self.assertLess(len(err), 200)


if __name__ == "__main__":
    unittest.main()
