"""Hostile input: every refusal is exit 2 with one line naming the input, nothing is written on failure,
nothing hangs, and no value from a file can become a second shell command in the plan.

Each class of issue 18 has its cases here: names from config.json, the --out path, config fields of the
wrong type or size, /metrics scrapes, bench files, flags, special files. Most run main() in-process; the
few that could hang run in a child process with a timeout.
"""
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import tempfile
import unittest
from unittest import mock
from pathlib import Path

from support import MAIN_PATH, run

from rollout import readers, records


FIXTURES = Path(__file__).resolve().parent / "fixtures"
CONFIGS = FIXTURES / "configs"
SMALL = ["--alphas", "0.7", "--ks", "3", "--concurrency", "1,8"]
COMMAND = re.compile(r"\s*(?:[A-Z_]+=\S+\s+)*(?:vllm|python3?|trtllm-serve|curl|wget)\s")


def config(name="llama-3.3-70b.config.json", **changes):
    """A fixture config.json with some fields changed (None deletes a field)."""
    cfg = json.loads((CONFIGS / name).read_text())
    for key, value in changes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    return cfg


def shell_commands(plan):
    """The plan's command lines, continuations joined."""
    joined = re.sub(r"\\\n\s*", " ", plan)
    return [line for line in joined.splitlines() if COMMAND.match(line)]


class Hostile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.inputs = Path(self.tmp.name) / "in"
        self.outdir = Path(self.tmp.name) / "out"
        self.inputs.mkdir()
        self.outdir.mkdir()
        self.plan = self.outdir / "plan.md"

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, content):
        path = self.inputs / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else json.dumps(content))
        return str(path)

    def refused(self, argv, *needles, out=True):
        """main(argv) exits 2 with one line on stderr that holds every needle, prints nothing, writes nothing."""
        before = sorted(os.listdir(self.outdir))
        status, text, err = run(argv + (["--out", str(self.plan)] if out else []))
        self.assertEqual(status, 2, f"{argv}: {err}")
        self.assertEqual(text, "")
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("main.py: error: "), err)
        self.assertNotIn("internal error", err)       # caught by a check, not by the last-resort handler
        for needle in needles:
            self.assertIn(needle, err)
        self.assertEqual(sorted(os.listdir(self.outdir)), before)
        return err


class ShellInjection(Hostile):
    """Issue 18, first class: a name from a file pasted into the plan's commands."""

    def test_a_name_that_is_not_an_id_or_a_path_is_refused(self):
        for name in ("org/x; touch PWNED; #", "x && rm -rf ~", "$(touch PWNED)", "`id`", "a'b", 'a"b',
                     "a\nb", "-trust-remote-code", "a|b", "a: b", "x # y", "a\tb", "a" * 300):
            with self.subTest(name=name):
                path = self.write("config.json", config(_name_or_path=name))
                self.refused(["--model-config", path] + SMALL, "--model-config", "_name_or_path")

    def test_a_name_of_the_wrong_type_is_refused(self):
        for name in (42, ["meta-llama/x"], {"a": 1}, True):
            with self.subTest(name=name):
                path = self.write("config.json", config(_name_or_path=name))
                self.refused(["--model-config", path] + SMALL, "_name_or_path", "text")

    def test_a_draft_models_name_is_checked_too(self):
        target = self.write("target.json", config(_name_or_path="meta-llama/Llama-3.3-70B-Instruct"))
        draft = self.write("draft.json", config(_name_or_path="x; touch PWNED", hidden_size=2048,
                                                intermediate_size=8192, num_hidden_layers=16,
                                                num_attention_heads=32))
        self.refused(["--model-config", target, "--draft", "model", "--draft-config", draft] + SMALL,
                     "--draft-config", "_name_or_path")

    def test_draft_model_flag_is_an_id_or_a_path(self):
        for name in ("x;y", "a'b", "-rf", "a b|c"):
            with self.subTest(name=name):
                self.refused(["--draft-model", name] + SMALL, "--draft-model")

    def test_a_path_with_spaces_stays_one_word_in_every_command(self):
        # A plain local path with spaces is a legitimate name: it is quoted, never split.
        name = "/data/my models/Llama 3.3 70B"
        path = self.write("config.json", config(_name_or_path=name))
        cfg_path = self.write("odd 'name'.json", config(_name_or_path=name))
        for engine in ("vllm", "sglang", "trtllm"):
            with self.subTest(engine=engine):
                argv = ["--model-config", cfg_path if engine == "vllm" else path, "--engine", engine,
                        "--weights-dtype", "bf16", "--gpu", "h200", "--tp", "4", "--draft", "ngram"] + SMALL
                status, _, err = run(argv + ["--out", str(self.plan)])
                self.assertEqual(status, 0, err)
                commands = shell_commands(self.plan.read_text())
                self.assertTrue(commands)
                serving = [c for c in commands if "code/main.py" not in c and ("serve" in c or "launch_server" in c)]
                self.assertTrue(serving)
                for line in serving:
                    self.assertIn(name, shlex.split(line, comments=True), line)
                if engine == "vllm":   # the gate command names the config file again, one word
                    gate = next(c for c in commands if "code/main.py" in c)
                    self.assertIn(cfg_path, shlex.split(gate))
                for line in commands:
                    tokens = shlex.split(line, comments=True)
                    self.assertFalse({";", "&&", "||", "|", "&"} & set(tokens), line)
                for name_ in os.listdir(self.outdir):
                    os.unlink(self.outdir / name_)


class OutPath(Hostile):
    """Issue 18, second class: --out checked before anything is computed or written."""

    def test_out_paths_that_cannot_be_a_plan_are_refused_and_nothing_is_written(self):
        folder = self.outdir / "plan.md"
        cases = [(str(self.outdir), "folder"), (str(self.outdir) + "/", "folder"), ("", "empty"),
                 (str(self.outdir / "chart-speedup.svg"), "chart"), (str(self.outdir / "x" / "p.md"), "exist"),
                 (str(self.outdir / ("p" * 256 + ".md")), "long")]
        for path, needle in cases:
            with self.subTest(path=path[-40:]):
                self.refused(SMALL + ["--out", path], "--out", needle, out=False)
        folder.mkdir()
        err = self.refused(SMALL + ["--out", str(folder)], "--out", "folder", out=False)
        self.assertIn("plan.md", err)

    def test_special_files_are_never_replaced(self):
        fifo = self.outdir / "plan.md"
        os.mkfifo(fifo)
        status, _, err = run(SMALL + ["--out", str(fifo)])
        self.assertEqual(status, 2)
        self.assertIn("not a regular file", err)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertEqual(os.listdir(self.outdir), ["plan.md"])
        fifo.unlink()
        for device in ("/dev/null", "/dev/zero"):
            with self.subTest(device=device):
                self.refused(SMALL + ["--out", device], "--out", "not a regular file", out=False)
                self.assertTrue(stat.S_ISCHR(os.stat(device).st_mode))

    def test_a_chart_name_taken_by_a_folder_stops_the_whole_write(self):
        (self.outdir / "chart-itl-cdf.svg").mkdir()
        status, _, err = run(SMALL + ["--out", str(self.plan)])
        self.assertEqual(status, 2, err)
        self.assertIn("chart-itl-cdf.svg", err)
        self.assertEqual(os.listdir(self.outdir), ["chart-itl-cdf.svg"])

    def test_a_failed_write_leaves_no_file_and_no_temporary(self):
        # The third temporary cannot be written: nothing reaches its place, no temporary is left.
        real_open, calls = os.open, []

        def failing_open(path, flags, mode=0o777, **kw):
            calls.append(path)
            if len(calls) == 3:
                raise OSError(28, "No space left on device")
            return real_open(path, flags, mode, **kw)

        os.open = failing_open
        try:
            status, text, err = run(SMALL + ["--out", str(self.plan)])
        finally:
            os.open = real_open
        self.assertEqual(status, 2)
        self.assertIn("No space left on device", err)
        self.assertEqual(text, "")
        self.assertEqual(os.listdir(self.outdir), [])

    def test_a_long_file_name_that_fits_is_written(self):
        long_name = self.outdir / ("p" * 250 + ".md")      # 253 bytes: the temporary's name must not grow it
        status, _, err = run(SMALL + ["--out", str(long_name)])
        self.assertEqual(status, 0, err)
        self.assertTrue(long_name.is_file())
        self.assertEqual(sorted(n for n in os.listdir(self.outdir) if n.startswith(".")), [])


class ConfigFields(Hostile):
    """Issue 18, third class: config.json fields of the wrong type, zero, huge or inconsistent."""

    DENSE = [
        (dict(hidden_size=0), "hidden_size"), (dict(hidden_size=10 ** 12), "hidden_size"),
        (dict(hidden_size=8192.7), "hidden_size"), (dict(hidden_size="8192"), "hidden_size"),
        (dict(hidden_size=True), "hidden_size"), (dict(num_hidden_layers=0), "num_hidden_layers"),
        (dict(num_hidden_layers=10 ** 12), "num_hidden_layers"), (dict(num_hidden_layers=1e12), "num_hidden_layers"),
        (dict(num_attention_heads=0), "num_attention_heads"), (dict(num_key_value_heads=0), "num_key_value_heads"),
        (dict(num_key_value_heads=7), "num_key_value_heads"), (dict(vocab_size=-5), "vocab_size"),
        (dict(vocab_size=10 ** 15), "vocab_size"), (dict(intermediate_size=0), "intermediate_size"),
        (dict(head_dim=0), "head_dim"), (dict(hidden_size=32), "head_dim"),
        (dict(tie_word_embeddings="false"), "tie_word_embeddings"), (dict(attention_bias="yes"), "attention_bias"),
        (dict(text_config="abc"), "text_config"), (dict(text_config=[1, 2]), "text_config"),
        (dict(layer_types="full_attention"), "layer_types"), (dict(layer_types=[1, 2]), "layer_types"),
        (dict(layer_types=["full_attention"] * 3), "layer_types"),
        (dict(layer_types=["sliding_attention"] * 80, sliding_window=0), "sliding_window"),
        (dict(num_nextn_predict_layers="1"), "num_nextn_predict_layers"),
        (dict(num_nextn_predict_layers=-1), "num_nextn_predict_layers"),
        (dict(model_type=["llama"]), "model_type"),
    ]
    MOE = [
        (dict(num_experts_per_tok=0), "num_experts_per_tok"), (dict(num_experts=4), "num_experts_per_tok"),
        (dict(num_experts="128"), "num_experts"), (dict(mlp_only_layers="3"), "mlp_only_layers"),
        (dict(mlp_only_layers=[1.5]), "mlp_only_layers"), (dict(mlp_only_layers=[-1]), "mlp_only_layers"),
        (dict(mlp_only_layers=[4800]), "mlp_only_layers"), (dict(decoder_sparse_step=0), "decoder_sparse_step"),
        (dict(decoder_sparse_step="1"), "decoder_sparse_step"), (dict(n_shared_experts="1"), "n_shared_experts"),
        (dict(n_shared_experts=-1), "n_shared_experts"), (dict(first_k_dense_replace="3"), "first_k_dense_replace"),
        (dict(first_k_dense_replace=-1), "first_k_dense_replace"),
        (dict(moe_intermediate_size=0), "moe_intermediate_size"),
    ]

    def test_dense_fields(self):
        for changes, field in self.DENSE:
            with self.subTest(changes=str(changes)[:60]):
                path = self.write("config.json", config(**changes))
                self.refused(["--model-config", path] + SMALL, "--model-config", field)

    def test_moe_fields(self):
        for changes, field in self.MOE:
            with self.subTest(changes=changes):
                path = self.write("config.json", config("qwen3-30b-a3b-fp8.config.json", **changes))
                self.refused(["--model-config", path, "--tp", "1"] + SMALL, "--model-config", field)

    def test_head_and_draft_configs(self):
        head = self.write("head.json", config("qwen3-30b-a3b-eagle3-head.config.json", num_key_value_heads=0))
        target = self.write("target.json", config("qwen3-30b-a3b-fp8.config.json"))
        self.refused(["--model-config", target, "--tp", "1", "--draft-config", head] + SMALL,
                     "--draft-config", "num_key_value_heads")
        draft = self.write("draft.json", config(num_key_value_heads=0, _name_or_path="org/draft"))
        self.refused(["--draft", "model", "--draft-config", draft] + SMALL, "--draft-config", "num_key_value_heads")

    def test_json_nested_too_deep(self):
        deep = "[" * 100_000 + "]" * 100_000
        path = self.write("config.json", '{"a": ' + deep + "}")
        self.refused(["--model-config", path] + SMALL, "--model-config", "nested")
        bench = self.write("bench.json", '{"completed": ' + deep + "}")
        self.refused(["--bench-baseline", bench, "--bench-spec", str(FIXTURES / "bench_spec.json")] + SMALL,
                     "--bench-baseline", "nested")

    def test_a_huge_layer_count_neither_hangs_nor_eats_memory(self):
        path = self.write("config.json", config(num_hidden_layers=10 ** 12, first_k_dense_replace=1))
        proc = subprocess.run([sys.executable, str(MAIN_PATH), "--model-config", path, "--no-write"],
                              capture_output=True, text=True, timeout=20)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("num_hidden_layers", proc.stderr)


SCRAPE = (FIXTURES / "metrics_after.prom").read_text()
COUNTER = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="meta-llama/Llama-3.3-70B-Instruct"}'


class Scrapes(Hostile):
    """Issue 18: /metrics scrapes with odd labels, absurd values, huge lines and special files."""

    def test_odd_positions_and_values(self):
        position = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="%s"} 5\n'
        cases = [(position % "\u00b2", "position"), (position % "99999999999999999999", "position"),
                 (position % "-1", "position"), (position % "40", "position"),
                 (SCRAPE.replace(COUNTER + " ", COUNTER + " 1e308 #"), "1e308"),
                 (SCRAPE + COUNTER.replace('"0"', '"9"') + " 1e308\n", "limit"),
                 ]
        for text, needle in cases:
            with self.subTest(text=text[:70]):
                path = self.write("m.prom", text if text.startswith("#") else SCRAPE + text)
                self.refused(["--metrics", path] + SMALL, "--metrics", needle)

    def test_tiny_counts_are_not_a_measurement(self):
        tiny = ('vllm:spec_decode_num_drafts_total{model_name="m"} 5e-324\n'
                'vllm:spec_decode_num_draft_tokens_total{model_name="m"} 1e-323\n'
                'vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 5e-324\n')
        path = self.write("m.prom", tiny)
        self.refused(["--metrics", path] + SMALL, "--metrics", "draft")

    def test_sglang_gauges_out_of_range(self):
        base = (FIXTURES / "metrics_sglang.prom").read_text()
        for rate, length in (("5e-324", "2.6"), ("1e308", "2.6"), ("0.5333", "1e308"), ("nan", "2.6")):
            with self.subTest(rate=rate, length=length):
                text = base.replace("} 0.5333", "} " + rate).replace("} 2.6", "} " + length)
                path = self.write("m.prom", text)
                status, _, err = run(["--metrics", path, "--no-write"] + SMALL)
                self.assertIn(status, (0, 2), err)
                self.assertNotIn("internal error", err)
                self.assertLessEqual(len(err.splitlines()), 1)

    def test_a_huge_line_is_refused_quickly(self):
        path = self.write("m.prom", 'x{a="' + "a" * 3_000_000 + '"} 1\n' + SCRAPE)
        self.refused(["--metrics", path] + SMALL, "--metrics", "line 1", "longer")

    def test_folders_devices_and_huge_files(self):
        self.refused(["--metrics", str(self.inputs)] + SMALL, "--metrics", "folder")
        self.refused(["--metrics", "/dev/zero"] + SMALL, "--metrics", "device")
        huge = self.inputs / "huge.prom"
        with open(huge, "wb") as f:
            f.truncate(3 * 2 ** 30)              # sparse: 3 GiB on paper, no disk used
        self.refused(["--metrics", str(huge)] + SMALL, "--metrics", "larger than")
        self.refused(["--bench-baseline", str(huge), "--bench-spec", str(FIXTURES / "bench_spec.json")] + SMALL,
                     "larger than")
        self.refused(["--model-config", str(huge)] + SMALL, "larger than")

    def test_a_pipe_is_read_without_seeking(self):
        # `--metrics /dev/stdin` and process substitution hand over a pipe, which cannot seek.
        proc = subprocess.run([sys.executable, str(MAIN_PATH), "--metrics", "/dev/stdin", "--json", "--no-write"]
                              + SMALL, input=SCRAPE, capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["measured"]["k"], 3)
        proc = subprocess.run([sys.executable, str(MAIN_PATH), "--bench-spec", "/dev/stdin", "--json", "--no-write"]
                              + SMALL, input=(FIXTURES / "bench_spec.json").read_text(), capture_output=True,
                              text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_an_endless_pipe_is_refused(self):
        # /dev/zero behind a pipe: no newline, ever. The line limit stops it.
        proc = subprocess.run(f"exec {sys.executable} {shlex.quote(str(MAIN_PATH))} --metrics /dev/stdin --no-write "
                              "< /dev/zero", shell=True, capture_output=True, text=True, timeout=20)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        with subprocess.Popen(["head", "-c", "400000000", "/dev/zero"], stdout=subprocess.PIPE) as zeros:
            proc = subprocess.run([sys.executable, str(MAIN_PATH), "--bench-spec", "/dev/stdin", "--no-write"],
                                  stdin=zeros.stdout, capture_output=True, text=True, timeout=30)
            zeros.kill()
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)


BENCH = json.loads((FIXTURES / "bench_spec.json").read_text())
BASE = json.loads((FIXTURES / "bench_baseline.json").read_text())


class BenchFiles(Hostile):
    """Issue 18: benchmark result files with values of the wrong type or out of range."""

    def bench(self, name, **changes):
        data = dict(BENCH if name == "spec" else BASE)
        data.update(changes)
        return self.write(f"{name}.json", data)

    def test_fields(self):
        cases = [(dict(completed="0"), "completed"), (dict(completed=-5), "completed"),
                 (dict(completed=2.5), "completed"), (dict(max_concurrency=1e308), "max_concurrency"),
                 (dict(max_concurrency=2.5), "max_concurrency"), (dict(mean_tpot_ms=-1.0), "mean_tpot_ms"),
                 (dict(p99_tpot_ms=-3.0), "p99_tpot_ms"), (dict(output_throughput=-1.0), "output_throughput"),
                 (dict(total_output_tokens="many"), "total_output_tokens"),
                 (dict(spec_decode_acceptance_rate=5e-324, spec_decode_num_drafts=None), "spec_decode"),
                 ]
        for changes, field in cases:
            with self.subTest(changes=changes):
                changes = {k: v for k, v in changes.items()}
                spec = self.bench("spec", **changes)
                if changes.get("spec_decode_num_drafts", 1) is None:
                    data = json.loads(Path(spec).read_text())
                    for key in ("spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens"):
                        data.pop(key)
                    data["spec_decode_acceptance_length"] = 2.0
                    spec = self.write("spec.json", data)
                self.refused(["--bench-baseline", self.bench("base"), "--bench-spec", spec] + SMALL, field)

    def test_a_gate_cannot_pass_on_a_zero_tail(self):
        spec = self.bench("spec", p99_tpot_ms=0.0)
        self.refused(["--bench-baseline", self.bench("base"), "--bench-spec", spec, "--gate"] + SMALL, "p99_tpot_ms")

    def test_calibration_runs_need_tokens_and_a_positive_tpot(self):
        good = [self.write(f"b{c}.json", dict(BASE, max_concurrency=c, mean_tpot_ms=10.0 + c / 10))
                for c in (1, 8, 64)]
        cases = [(dict(mean_tpot_ms=0.0), "mean_tpot_ms"), (dict(mean_tpot_ms=-4.0), "mean_tpot_ms"),
                 (dict(total_output_tokens=0), "output tokens"), (dict(total_input_tokens=0), "prompt tokens"),
                 (dict(total_output_tokens=1000, output_throughput=1000 / BASE["duration"]), "output tokens"),
                 (dict(total_output_tokens=1000), "is not its total_output_tokens 1,000 over its duration")]
        for changes, needle in cases:
            with self.subTest(changes=changes):
                bad = self.write("bad.json", dict(BASE, max_concurrency=16, **changes))
                self.refused(["--calibrate", ",".join(good + [bad])] + SMALL, "--calibrate", needle)


class Flags(Hostile):
    """Issue 18: flags that were accepted silently, overflowed, or got a misleading message."""

    def test_empty_values_are_refused_not_defaulted(self):
        for flag in ("--model", "--gpu", "--engine", "--draft", "--metrics", "--weights-dtype", "--kv-dtype",
                     "--bench-spec", "--calibrate", "--served-model", "--mix", "--draft-model", "--model-config",
                     "--seed", "--tp"):
            with self.subTest(flag=flag):
                self.refused([f"{flag}="] + SMALL, flag, "empty")

    def test_out_of_range_numbers(self):
        cases = [(["--gpu-memory", "1e308"], "--gpu-memory"), (["--gpu-bandwidth", "1e-308"], "--gpu-bandwidth"),
                 (["--gpu-tflops", "1e-300"], "--gpu-tflops"), (["--output-tokens", "1"], "--output-tokens"),
                 (["--concurrency", "1000000000"], "--concurrency"), (["--input-tokens", "10" * 10], "--input-tokens"),
                 (["--verify-overheads", "1e300"], "--verify-overheads"), (["--tp", "100000"], "--tp"),
                 (["--context", "10" * 10], "--context"), (["--p99-budget", "1e308"], "--p99-budget"),
                 (["--target-concurrency", "1e3"], "--target-concurrency"),
                 (["--mix", "chat:0.7:0.7:99999999999999,code:0.3:0.4"], "--mix"),
                 (["--mix", "a|b:0.7:0.7,code:0.3:0.4"], "--mix"), (["--mix", "x" * 40 + ":1:0.5"], "--mix")]
        for argv, flag in cases:
            with self.subTest(argv=argv):
                self.refused(argv + (SMALL if argv[0] != "--concurrency" else ["--alphas", "0.7"]), flag)

    def test_a_negative_number_is_read_as_the_flags_value(self):
        self.refused(["--seed", "-1e5"] + SMALL, "--seed", "integer", "-1e5")
        self.refused(["--verify-overheads", "-0.5"] + SMALL, "--verify-overheads", ">= 0")

    def test_a_huge_grid_is_refused_before_it_runs(self):
        alphas = ",".join(f"{i / 10:.1f}" for i in range(10))
        self.refused(["--alphas", alphas, "--ks", ",".join(map(str, range(1, 11))), "--concurrency",
                      ",".join(map(str, range(1, 200)))], "grid", "cells", f"{records.GRID_CELL_LIMIT:,}")

    def test_control_characters_in_values(self):
        self.refused(["--served-model", "a\nb", "--metrics", str(FIXTURES / "metrics_after.prom")] + SMALL,
                     "--served-model")
        self.refused(["--model-config", str(CONFIGS / "llama-3.3-70b.config.json") + "\x1b[2J"] + SMALL,
                     "--model-config")

    def test_k_past_the_limit_is_named_as_such(self):
        text = ('vllm:spec_decode_num_drafts_total{model_name="m"} 100\n'
                'vllm:spec_decode_num_draft_tokens_total{model_name="m"} 4000\n'
                'vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 1000\n')
        path = self.write("m.prom", text)
        err = self.refused(["--metrics", path] + SMALL, "--metrics", "40", str(records.K_LIMIT))
        self.assertNotIn("inconsistent", err)


class FoundByFuzzing(Hostile):
    """Defects a fresh adversary found after the first round of fixes (1,963 invocations), each pinned here."""

    def test_a_link_is_never_replaced(self):
        elsewhere = self.inputs / "precious.txt"
        elsewhere.write_text("keep me")
        os.symlink(elsewhere, self.outdir / "plan.md")
        self.refused(SMALL + ["--out", str(self.plan)], "--out", "not a regular file", out=False)
        os.symlink(elsewhere, self.outdir / "chart-best-k.svg")
        os.unlink(self.plan)
        self.refused(SMALL + ["--out", str(self.plan)], "chart-best-k.svg", out=False)
        self.assertEqual(elsewhere.read_text(), "keep me")
        self.refused(SMALL + ["--out", "/dev/stdout"], "--out", out=False)

    def test_a_failed_rename_puts_every_file_back(self):
        self.assertEqual(run(SMALL + ["--out", str(self.plan)])[0], 0)
        before = {name: (self.outdir / name).read_bytes() for name in os.listdir(self.outdir)}
        real_replace, calls = os.replace, []

        def failing_replace(src, dst, **kw):
            calls.append(dst)
            if len(calls) == 3:
                raise OSError(16, "Device or resource busy")
            return real_replace(src, dst, **kw)

        os.replace = failing_replace
        try:
            status, text, err = run(SMALL + ["--seed", "7", "--alphas", "0.6", "--out", str(self.plan)])
        finally:
            os.replace = real_replace
        self.assertEqual(status, 2)
        self.assertIn("busy", err)
        self.assertEqual({name: (self.outdir / name).read_bytes() for name in os.listdir(self.outdir)}, before)

    def test_characters_that_break_a_line_or_are_not_utf8(self):
        for text in ("a\u2028b.prom", "a\x85b.prom", "a\x9bb.prom", "a\u202eb.prom", "a\udcffb.prom"):
            with self.subTest(text=ascii(text)):
                self.refused(["--metrics", str(self.inputs / text)] + SMALL, "--metrics", "control character")

    def test_gauges_and_counters_that_cannot_be_read(self):
        v0 = self.write("v0.prom", 'vllm:spec_decode_draft_acceptance_rate{model_name="m"} -0.001\n')
        self.refused(["--metrics", v0] + SMALL, "--metrics", "acceptance_rate")
        drafted = (FIXTURES / "metrics_ngram_drafted_per_pos.prom").read_text().splitlines(keepends=True)
        missing = self.write("m.prom", "".join(line for line in drafted
                                               if not line.startswith("vllm:spec_decode_num_draft_tokens_total")))
        self.refused(["--metrics", missing] + SMALL, "--metrics", "vllm:spec_decode_num_draft_tokens_total")

    def test_sizes_that_would_take_long_or_much_memory(self):
        alphas = ",".join(f"{i / 1000:.3f}" for i in range(0, 1000, 4))
        self.refused(["--alphas", alphas, "--ks", "1,2", "--concurrency", "1"], "pairs", str(records.GRID_PAIR_LIMIT))
        big = self.inputs / "big.json"
        big.write_text('{"completed": 1, "x": [' + "0," * (9 << 20) + "0]}")
        self.refused(["--bench-spec", str(big)] + SMALL, "--bench-spec", "--save-detailed")
        self.refused(["--model-config", str(big)] + SMALL, "--model-config", "larger than 4 MiB")
        lines = self.write("lines.prom", "x 1\n" * (records.SCRAPE_LINE_LIMIT + 1))
        self.refused(["--metrics", lines] + SMALL, "--metrics", "lines")
        self.refused(["--input-tokens", "9000000", "--output-tokens", "2000000"] + SMALL, "--input-tokens")

    def test_extreme_benchmark_values(self):
        base = self.write("base.json", dict(BASE, p99_tpot_ms=1e-300))
        self.refused(["--bench-baseline", base, "--bench-spec", self.write("spec.json", BENCH)] + SMALL, "p99_tpot_ms")
        base = self.write("base.json", dict(BASE, output_throughput=1e300))
        self.refused(["--bench-baseline", base, "--bench-spec", self.write("spec.json", BENCH)] + SMALL,
                     "output_throughput")
        # vllm bench writes 0 for every TPOT statistic when no request decoded a second token: unmeasured, not a
        # contradiction (a mean of 0 beside percentiles above it is one: test_hostile_second_pass)
        zero = self.write("base.json", dict(BASE, **{k: 0 for k in BASE if re.fullmatch(r"(mean|median|std|p\d+)_tpot_ms", k)}))
        status, text, err = run(["--bench-baseline", zero, "--bench-spec", self.write("spec.json", BENCH), "--json",
                                 "--no-write"] + SMALL)
        self.assertEqual(status, 0, err)
        self.assertIsNone(json.loads(text)["measured"]["tpot_speedup"])     # no speedup over an unmeasured mean

    def test_names_are_quoted_in_the_trtllm_yaml_too(self):
        for name in ("null", "~/heads/x", "1e3", "true"):
            with self.subTest(name=name):
                status, _, err = run(["--engine", "trtllm", "--draft-model", name, "--out", str(self.plan)] + SMALL)
                self.assertEqual(status, 0, err)
                self.assertIn(f"  speculative_model: {json.dumps(name)}\n", self.plan.read_text())
                for f in os.listdir(self.outdir):
                    os.unlink(self.outdir / f)

    def test_trees_that_cannot_exist(self):
        tree = ["--engine", "sglang", "--draft-topk", "2", "--concurrency", "1,8", "--acceptance-length"]
        self.refused(tree + ["1.5", "--ks", "1", "--verify-tokens", "64"], "--verify-tokens", "verifies 2 to 3 tokens")
        self.refused(tree + ["3.5", "--ks", "5", "--verify-tokens", "3"], "--acceptance-length", "3")

    def test_a_speculative_run_is_no_baseline(self):
        spec = self.write("spec.json", BENCH)
        self.refused(["--bench-baseline", spec, "--bench-spec", spec, "--gate"] + SMALL, "--bench-baseline")
        copy = self.write("copy.json", BENCH)
        self.refused(["--bench-baseline", copy, "--bench-spec", spec, "--gate"] + SMALL, "--bench-baseline",
                     "speculation on")

    def test_runs_of_another_model_are_named(self):
        runs = [self.write(f"b{c}.json", dict(BASE, max_concurrency=c, mean_tpot_ms=10.0 + c / 10,
                                              model_id="Qwen/Qwen3-32B")) for c in (1, 8, 64)]
        status, text, err = run(["--calibrate", ",".join(runs), "--no-write"] + SMALL)
        self.assertIn(status, (0, 2), err)
        if status == 0:
            self.assertIn("'Qwen/Qwen3-32B' is not this deployment's", text)

    def test_drafts_that_cannot_draft(self):
        self.refused(["--model", "qwen3-32b", "--draft", "llama-3.2-1b", "--tp", "1"] + SMALL, "--draft", "tokenizer")
        self.refused(["--model", "deepseek-v3", "--draft", "mtp", "--draft-model", "org/x", "--tp", "8"] + SMALL,
                     "--draft-model", "MTP")


class FoundByFuzzingAgain(Hostile):
    """The second adversary's findings (about 4,100 invocations), each pinned here."""

    def test_a_measurement_is_given_one_way(self):
        self.refused(["--acceptance-rates", "0.05", "--ks", "3", "--metrics", str(FIXTURES / "metrics_after.prom"),
                      "--gate", "--concurrency", "1,64"], "--acceptance-rates", "one way")
        self.refused(["--acceptance-length", "1.2", "--ks", "8", "--bench-baseline", str(FIXTURES / "bench_baseline.json"),
                      "--bench-spec", str(FIXTURES / "bench_spec.json"), "--gate"], "--acceptance-length", "one way")

    def test_a_measurement_of_another_model(self):
        files = ["--bench-baseline", str(FIXTURES / "bench_baseline.json"), "--bench-spec",
                 str(FIXTURES / "bench_spec.json")]
        self.refused(["--model", "qwen3-32b", "--tp", "1", "--gate"] + files, "--bench-spec", "Qwen/Qwen3-32B",
                     "--served-model")
        self.refused(["--model", "qwen3-32b", "--tp", "1", "--metrics", str(FIXTURES / "metrics_after.prom")] + SMALL,
                     "--metrics", "not this deployment's")
        status, _, err = run(["--model", "qwen3-32b", "--tp", "1", "--served-model", "meta-llama/Llama-3.3-70B-Instruct",
                              "--no-write"] + files + SMALL)
        self.assertEqual(status, 0, err)          # an alias the user confirms

    def test_the_plan_never_overwrites_an_input(self):
        scrape = self.outdir / "after.prom"
        scrape.write_text(SCRAPE)
        self.refused(["--metrics", str(scrape)] + SMALL + ["--out", str(scrape)], "--out", "--metrics", out=False)
        self.assertEqual(scrape.read_text(), SCRAPE)
        chart = self.outdir / "chart-speedup.svg"
        chart.write_text(SCRAPE)
        self.refused(["--metrics", str(chart)] + SMALL, "--out", "chart-speedup.svg")

    def test_a_model_of_sliding_windows_only(self):
        cfg = config("gpt-oss-120b.config.json")
        cfg["layer_types"] = ["sliding_attention"] * cfg["num_hidden_layers"]
        status, _, err = run(["--model-config", self.write("c.json", cfg), "--tp", "8", "--draft", "ngram",
                              "--weights-dtype", "fp4", "--no-write", "--exercises"] + SMALL)
        self.assertEqual(status, 0, err)

    def test_many_results_and_many_models(self):
        result = json.dumps(BENCH)
        appended = self.write("appended.json", "{}\n" * 100_000 + result + "\n")
        status, _, err = run(["--bench-spec", appended, "--no-write"] + SMALL)
        self.assertEqual(status, 0, err)
        line = 'vllm:spec_decode_num_drafts_total{model_name="m%d"} 1\n'
        many = self.write("many.prom", "".join(line % i for i in range(readers.MODEL_LIMIT + 1)))
        self.refused(["--metrics", many] + SMALL, "--metrics", f"more than {readers.MODEL_LIMIT} models")

    def test_file_contents_never_drive_the_terminal(self):
        escape = "\x1b]0;pwned\x07\x1b[2J"
        two = self.write("two.prom", SCRAPE + SCRAPE.replace("meta-llama/Llama-3.3-70B-Instruct", escape))
        err = self.refused(["--metrics", two] + SMALL, "--metrics", "several models")
        self.assertNotIn("\x1b", err)
        self.assertNotIn("\x07", err)

    def test_the_gate_verdict_is_printed_with_the_exercises(self):
        status, text, _ = run(["--gate", "--exercises", "--acceptance-rates", "0.05", "--ks", "3", "--no-write"])
        self.assertEqual(status, 1)
        self.assertIn("== Gate at B = ", text)

    def test_the_plans_gate_command_keeps_every_setting(self):
        (self.inputs / "-cfg.json").write_text(json.dumps(config(_name_or_path="meta-llama/Llama-3.3-70B-Instruct")))
        here = os.getcwd()
        os.chdir(self.inputs)                     # a relative path that starts with -, as a flag does
        try:
            status, _, err = run(["--model-config=-cfg.json", "--gate-margin", "0.3", "--p99-budget", "0.2",
                                  "--served-model", "meta-llama/Llama-3.3-70B-Instruct", "--metrics",
                                  str(FIXTURES / "metrics_after.prom"), "--out", str(self.plan)] + SMALL)
        finally:
            os.chdir(here)
        self.assertEqual(status, 0, err)
        gate = next(c for c in shell_commands(self.plan.read_text()) if "code/main.py" in c)
        words = shlex.split(gate)
        self.assertIn("--model-config=-cfg.json", words)
        self.assertIn("--served-model=meta-llama/Llama-3.3-70B-Instruct", words)   # = form: a name may begin with -
        for flag, value in (("--gate-margin", "0.3"), ("--p99-budget", "0.2")):
            self.assertEqual(words[words.index(flag) + 1], value)

    def test_paths_are_text_in_the_plans_markdown(self):
        odd = self.inputs / "a|b <img src=x> `c`.prom"
        odd.write_text(SCRAPE)
        status, _, err = run(["--metrics", str(odd), "--out", str(self.plan)] + SMALL)
        self.assertEqual(status, 0, err)
        plan = self.plan.read_text()
        self.assertNotIn("<img", plan)
        self.assertIn("a\\|b &lt;img src=x&gt; \\`c\\`.prom", plan)   # the name as it is, no code span

    def test_evidence_no_deployment_can_produce(self):
        one = self.write("one.prom", 'vllm:spec_decode_num_drafts_total{model_name="meta-llama/Llama-3.3-70B-Instruct"} 1\n'
                         'vllm:spec_decode_num_draft_tokens_total{model_name="meta-llama/Llama-3.3-70B-Instruct"} 3\n'
                         'vllm:spec_decode_num_accepted_tokens_total{model_name="meta-llama/Llama-3.3-70B-Instruct"} 3\n')
        self.refused(["--metrics", one, "--gate"] + SMALL, "--gate", "fewer than the 100")
        fast = self.write("fast.json", dict(BENCH, mean_tpot_ms=BASE["mean_tpot_ms"] / 100))
        self.refused(["--bench-baseline", self.write("b.json", BASE), "--bench-spec", fast] + SMALL, "K + 1")
        idle = self.write("idle.json", dict(BENCH, output_throughput=0))
        self.refused(["--bench-baseline", self.write("b.json", BASE), "--bench-spec", idle, "--gate"] + SMALL,
                     "output_throughput")

    def test_an_infinite_rate_written_two_ways_is_one_workload(self):
        base = self.inputs / "b.json"
        base.write_text(json.dumps(dict(BASE, request_rate=float("inf"))))     # json writes Infinity
        status, _, err = run(["--bench-baseline", str(base), "--bench-spec", self.write("s.json", BENCH), "--no-write"]
                             + SMALL)
        self.assertEqual(status, 0, err)

    def test_lax_input_is_refused(self):
        self.refused(["--tp", "\uff14"] + SMALL, "--tp")
        self.refused(["--ks", "\u0663", "--concurrency", "1"], "--ks")
        self.refused(["--concurrency", "1_000", "--ks", "3"], "--concurrency")
        for labels in ('{engine=0,model_name="m"}', '{a="0",,model_name="m"}', '{model_name="m",model_name="n"}'):
            with self.subTest(labels=labels):
                path = self.write("l.prom", f"vllm:spec_decode_num_drafts_total{labels} 1\n")
                self.refused(["--metrics", path] + SMALL, "--metrics", "label")
        number = self.write("n.prom", 'vllm:spec_decode_num_drafts_total{model_name="m"} 1_000\n')
        self.refused(["--metrics", number] + SMALL, "--metrics", "not a number")
        rate = (FIXTURES / "metrics_sglang.prom").read_text().replace("} 0.5333", "} 2")
        self.refused(["--metrics", self.write("r.prom", rate)] + SMALL, "--metrics", "fraction")
        self.refused(["--context", "1", "--input-tokens", "1000"] + SMALL, "--context")
        self.refused(["--gpu", "mi300x", "--engine", "trtllm"] + SMALL, "--engine", "NVIDIA")
        utf16 = self.inputs / "u.prom"
        utf16.write_bytes(SCRAPE.encode("utf-16-le"))
        self.refused(["--bench-spec", str(utf16)] + SMALL, "byte-order mark")

    def test_no_schedule_past_the_concurrency_limit(self):
        status, text, err = run(["--gpu", "custom", "--gpu-memory", "100000", "--gpu-bandwidth", "4",
                                 "--gpu-tflops", "900", "--json", "--no-write"] + SMALL)
        self.assertEqual(status, 0, err)
        self.assertLessEqual(max(row[1] for row in json.loads(text)["plan"]["schedule"]), records.CONCURRENCY_LIMIT)


class LastResort(Hostile):
    def test_an_unforeseen_error_is_one_line_and_exit_2(self):
        import rollout.render
        with mock.patch.object(rollout.render, "render_plan", lambda *a, **k: 1 / 0):   # rendering fails
            status, text, err = run(SMALL + ["--out", str(self.plan)])
        self.assertEqual(status, 2)
        self.assertEqual(len(err.splitlines()), 1)
        self.assertIn("internal error", err)
        self.assertIn("ZeroDivisionError", err)
        self.assertEqual(os.listdir(self.outdir), [])


if __name__ == "__main__":
    unittest.main()
