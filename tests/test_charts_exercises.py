"""SVG charts and the lesson's exercises, against closed forms and hand-worked numbers."""
import json
import re
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from support import ROOT, build_deployment, model, run

import main
from rollout.mix import traffic_blend
from rollout import acceptance, costmodel, exercises, report, schedule
from rollout.render import charts


OUTPUTS = ROOT / "outputs"


def series_count(svg_text):
    return sum(1 for e in ET.fromstring(svg_text).iter() if e.get("class") == "series")


class Charts(unittest.TestCase):
    def test_committed_charts_parse_and_hold_the_expected_series(self):
        expected = {"chart-speedup.svg": len(main.CONCURRENCIES) + 1,      # one per concurrency, plus the 1.0 line
                    "chart-best-k.svg": len(main.CHART_ALPHAS),
                    "chart-itl-cdf.svg": 3 + 1}                          # plain, exact, two-pass, plus the 0.99 line
        for name, count in expected.items():
            with self.subTest(name=name):
                text = (OUTPUTS / name).read_text()
                self.assertEqual(series_count(text), count)
                root = ET.fromstring(text)
                self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg")
                labels = " ".join(e.text or "" for e in root.iter() if e.tag.endswith("text"))
                self.assertTrue(labels.strip())

    def test_same_seed_same_bytes(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            run(["--out", str(Path(a) / "plan.md")])
            run(["--out", str(Path(b) / "plan.md")])
            for name in charts.CHART_FILES.values():
                self.assertEqual((Path(a) / name).read_bytes(), (Path(b) / name).read_bytes(), name)

    def test_plan_links_to_files_that_exist(self):
        plan = (OUTPUTS / "skill-eagle3-rollout.md").read_text()
        links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", plan)
        self.assertEqual(sorted(links), sorted(charts.CHART_FILES.values()))
        for link in links:
            self.assertTrue((OUTPUTS / link).is_file(), link)

    def test_infeasible_concurrency_is_left_out_with_a_note(self):
        with tempfile.TemporaryDirectory() as tmp:
            status, _, _ = run(["--concurrency", "1,1000", "--out", str(Path(tmp) / "plan.md")])
            self.assertEqual(status, 0)
            text = (Path(tmp) / "chart-speedup.svg").read_text()
        self.assertEqual(series_count(text), 1 + 1)
        self.assertIn("Left out, KV cache does not fit: B = 1000", text)

    def test_break_even_markers_sit_where_the_curves_cross_one(self):
        grid = report.Grid(acceptance=main.ALPHAS, ks=main.KS, overheads=main.VERIFY_OVERHEADS, concurrencies=main.CONCURRENCIES)
        charts = model(grid, build_deployment()).charts
        for curve in charts.curves:
            self.assertAlmostEqual(acceptance.exact_speedup(curve.breakeven, charts.k, curve.eps), 1.0)


class Readme(unittest.TestCase):
    def test_table_excerpt_is_what_the_default_run_prints(self):
        readme = (ROOT / "README.md").read_text()
        excerpt = readme.split("<!-- excerpt:start -->")[1].split("<!-- excerpt:end -->")[0]
        lines = [line for line in excerpt.splitlines() if line.strip() and not line.startswith("```")]
        self.assertGreaterEqual(len(lines), 4)
        _, out, _ = run(["--no-write"])
        printed = out.splitlines()
        for line in lines:
            self.assertIn(line, printed)

    def test_inline_chart_exists(self):
        for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (ROOT / "README.md").read_text()):
            self.assertTrue((ROOT / link).is_file(), link)


class Exercises(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        status, out, err = run(["--exercises", "--json", "--no-write"])
        assert status == 0, err
        cls.ex = json.loads(out)["exercises"]

    def test_alpha_for_2x_and_3x_solves_the_closed_form(self):
        k = self.ex["speedup_targets"]["k"]
        self.assertEqual(k, 5)
        for row in self.ex["speedup_targets"]["rows"]:
            for n in (2, 3):
                alpha = row[f"alpha_{n}x"]
                if n * (1 + row["eps"]) > k + 1:
                    self.assertIsNone(alpha)
                else:
                    # alpha and eps come rounded to 6 places; tau's slope (< 15 at K = 5) makes that 2e-5 at most
                    self.assertAlmostEqual(acceptance.acceptance_length(alpha, k), n * (1 + row["eps"]), delta=2e-5)
                    # --json rounds eps and the answer to 6 places each: at most 8e-7 apart
                    self.assertAlmostEqual(row[f"lesson_{n}x"], (n * (1 + row["eps"]) - 1) / k, delta=1e-6)
        # eps = 0, 2x at K = 5: 1 + a + ... + a^5 = 2, by hand a = 0.5087.
        self.assertAlmostEqual(self.ex["speedup_targets"]["rows"][0]["alpha_2x"], 0.5087, delta=0.0005)

    def test_mix_naive_against_correct(self):
        for mix in self.ex["traffic_mix"]:
            self.assertAlmostEqual(mix["naive_alpha"], 0.61, places=6)
            self.assertGreater(mix["naive_speedup"], mix["blended_speedup"])
            tau = {d["name"]: acceptance.acceptance_length(d["alpha"], mix["k"]) for d in mix["domains"]}
            q = mix["prefill_share"]      # prefill per token, in decode steps: the same with speculation or without
            self.assertAlmostEqual(mix["blended_speedup"],
                                   (1 + q) / ((0.7 / tau["chat"] + 0.3 / tau["code"]) * (1 + mix["eps"]) + q), places=5)
            self.assertAlmostEqual(mix["naive_speedup"],
                                   (1 + q) / ((1 + mix["eps"]) / acceptance.acceptance_length(0.61, mix["k"]) + q), places=5)

    def test_mix_best_k_is_the_argmax_with_speculation_off_allowed(self):
        # Llama 3.1 8B on one H100 at 128 tokens in and out, B = 1024: the verify pass's math outweighs its short
        # KV read, no K pays for this mix, so the best single K is 0 at 1.0x; at B = 1 one does.
        for batch, want_off in ((1024, True), (1, False)):
            dep = build_deployment("llama-3.1-8b", tp=1, context=128, input_tokens=128, output_tokens=128)
            mix = traffic_blend(exercises.LESSON_MIX, dep, 3, batch)
            d, q = costmodel.decode_step_ms(dep, batch), costmodel.prefill_share_ms(dep, batch)
            by_k = {0: 1.0}
            for k in range(1, schedule.K_MAX + 1):
                rounds = sum(share / acceptance.acceptance_length(alpha, k) for _, share, alpha in exercises.LESSON_MIX)
                by_k[k] = (d + q) / (rounds * costmodel.round_ms(dep, batch, k) + q)
            best = max(by_k, key=lambda k: (by_k[k], -k))
            self.assertEqual(mix.best_k, best)
            self.assertEqual(best == 0, want_off)
            self.assertAlmostEqual(mix.best_k_speedup, by_k[best], places=9)

    def test_methods_and_their_costs(self):
        rows = {r["draft"]: r for r in self.ex["methods"]["rows"]}
        self.assertEqual({r["method"] for r in rows.values()}, {"draft_model", "eagle", "eagle3", "ngram"})
        self.assertEqual(rows["ngram"]["params"], 0)
        self.assertAlmostEqual(rows["eagle"]["params"] / 1e9, 0.99, delta=0.005)     # the head, not the lm_head it reads
        # On the default release an EAGLE round hides its fixed costs (async scheduling, PR #31998) and an n-gram
        # round does not: n-gram's round is the verify pass and that bookkeeping, a draft model's adds 16-layer steps.
        self.assertLess(rows["eagle3"]["eps_b1"], rows["ngram"]["eps_b1"])
        self.assertLess(rows["ngram"]["eps_b1"], rows["llama-3.2-1b"]["eps_b1"])

    def test_tail_diagnosis_reproduces_the_symptom(self):
        d = self.ex["tail_diagnosis"]
        self.assertAlmostEqual(d["mean_change"], -0.25, delta=0.005)
        self.assertAlmostEqual(d["p99_change"], 0.15, delta=0.005)
        self.assertAlmostEqual(d["tau"], (1 + d["eps"]) / 0.75, places=6)
        self.assertAlmostEqual(acceptance.acceptance_length(d["alpha"], d["k"]), d["tau"], places=5)   # JSON keeps 6 decimals
        self.assertGreater(d["zero_accept_token_share"], 0.01)
        # Per token with one alpha: the zero-accept share is (1 - a) / tau, by hand.
        self.assertAlmostEqual(d["zero_accept_token_share"], (1 - d["alpha"]) / d["tau"], places=5)

    def test_tpot_diagnosis_reproduces_the_symptom_over_requests(self):
        # On vLLM 0.13 (synchronous rounds: eps 0.2 at B = 1) a spread of alpha over requests gives both figures.
        status, out, err = run(["--exercises", "--json", "--no-write", "--engine-version", "0.13"])
        self.assertEqual(status, 0, err)
        t = json.loads(out)["exercises"]["tail_diagnosis"]["tpot"]
        self.assertIsNotNone(t)
        self.assertAlmostEqual(t["p99_change"], 0.15, delta=0.01)
        self.assertAlmostEqual(t["mean_change"], -0.25, delta=0.005)
        # The requests' tau over 1 + eps is the mean TPOT: (1 + eps) / tau - 1 = -25%.
        self.assertAlmostEqual((1 + t["eps"]) / t["tau"] - 1, -0.25, delta=0.002)
        self.assertLess(t["slow_alpha"], t["alpha"] - 2 * t["spread"])

    def test_tpot_diagnosis_says_when_no_spread_gives_the_symptom(self):
        # The default release hides a round's fixed costs (eps 0.07 at B = 1): a -25% mean leaves P99 short of +15%.
        self.assertIsNone(self.ex["tail_diagnosis"]["tpot"])
        _, out, _ = run(["--exercises", "--no-write"])
        self.assertIn("no spread of alpha gives both figures at the model's eps", " ".join(out.split()))

    def test_draft_memory_by_hand(self):
        rows = {r["draft"]: r for r in self.ex["draft_memory"]["rows"]}
        self.assertAlmostEqual(rows["eagle3"]["weight_bytes"] / 1e9, 2 * 1.4029, delta=0.01)
        self.assertEqual(rows["llama-3.2-1b"]["kv_bytes_per_token"], 2 * 16 * 8 * 64 * 2)   # 32,768 B
        # Mean context 1024 in + 1024 / 2 out = 1536 tokens, 256 sequences.
        self.assertEqual(self.ex["draft_memory"]["context"], 1536)
        self.assertEqual(rows["llama-3.2-1b"]["kv_bytes_at_target"], 32_768 * 1536 * 256)
        self.assertEqual(rows["eagle3"]["kv_bytes_per_token"], 2 * 1 * 8 * 128 * 2)          # one layer
        self.assertLess(rows["llama-3.2-1b"]["max_concurrency"], rows["eagle3"]["max_concurrency"])

    def test_printed_answers(self):
        status, out, _ = run(["--exercises", "--no-write"])
        self.assertEqual(status, 0)
        for n in range(1, 6):
            self.assertIn(f"== Exercise {n}:", out)
        self.assertLessEqual(max(len(line) for line in out.splitlines()), 100)


if __name__ == "__main__":
    unittest.main()
