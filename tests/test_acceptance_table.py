"""code/rollout/acceptance_table.json against its source files in bench/, value by value.

The expected values are read here from the source files with rules of this file's own (the generator,
bench/acceptance_table.py, is only run once, to check that the committed table is what it writes now).
"""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "code"))

from rollout.acceptance import acceptance_length, alpha_from_length, alpha_from_rate  # noqa: E402

BENCH = ROOT / "bench"
TABLE_PATH = ROOT / "code" / "rollout" / "acceptance_table.json"
TABLE = json.loads(TABLE_PATH.read_text())
ROWS = TABLE["rows"]
SOURCES = {name: json.loads((BENCH / name).read_text()) for name in (
    "specbundle_h200_bs8.json", "acceptance_sources.json", "published.json", "published_moe_2026.json",
    "served_runs.json")}
SPECBUNDLE_BASELINE = "Wihtout EAGLE3"   # (sic), the file's name for the run without a draft


def rows_from(name):
    return [r for r in ROWS if r["file"] == "bench/" + name]


def short(target):
    """SpecBundle names its targets without the organisation: "Qwen/Qwen3-..." -> "Qwen3-..."."""
    return target.split("/")[-1]


class TestSpecBundle(unittest.TestCase):
    def expected(self, models, heads_as=lambda head: head):
        """{(head, target, dataset, K): tau} of every chain (topk 1) result in a SpecBundle data.json layout."""
        out = {}
        for target, datasets in models.items():
            for dataset, bench in datasets.items():
                for res in bench["results"]:
                    if res["topk"] == 1:
                        self.assertEqual(res["num_draft_tokens"], res["steps"] + 1)   # a chain verifies K + 1
                        for m in res["metrics"]:
                            if m["Name"] != SPECBUNDLE_BASELINE:
                                out[(heads_as(m["Name"]), target, dataset, res["steps"])] = m["accept_length"]
        return out

    def test_chain_rows_are_the_sources_chain_results(self):
        expected = self.expected(SOURCES["specbundle_h200_bs8.json"]["models"])
        got = {(r["head"], short(r["target"]), r["dataset"], r["k"]): r["tau"]
               for r in rows_from("specbundle_h200_bs8.json")}
        self.assertEqual(len(got), len(rows_from("specbundle_h200_bs8.json")))   # one row per key
        self.assertEqual(set(got), set(expected))
        self.assertEqual(len(expected), 195)   # 7 targets: 65 (target, dataset, K) chains, 1-2 heads each
        for key, tau in expected.items():
            self.assertEqual(got[key], tau, key)   # the source's float, unrounded
        self.assertEqual({r["k"] for r in rows_from("specbundle_h200_bs8.json")}, {3, 5, 7})

    def test_no_tree_results(self):
        trees = {(m["Name"], t, d, res["steps"], m["accept_length"])
                 for t, ds in SOURCES["specbundle_h200_bs8.json"]["models"].items() for d, b in ds.items()
                 for res in b["results"] if res["topk"] > 1 for m in res["metrics"] if m["Name"] != SPECBUNDLE_BASELINE}
        self.assertTrue(trees)
        got = {(r["head"], short(r["target"]), r["dataset"], r["k"], r["tau"])
               for r in rows_from("specbundle_h200_bs8.json")}
        self.assertFalse(trees & got)

    def test_more_targets_from_acceptance_sources(self):
        block = SOURCES["acceptance_sources.json"]["specbundle_more"]
        expected = {(head, target, dataset, int(k)): tau for target, heads in block["accept_length"].items()
                    for head, datasets in heads.items() for dataset, by_k in datasets.items()
                    for k, tau in by_k.items()}
        rows = rows_from("acceptance_sources.json")
        got = {(r["head"], short(r["target"]), r["dataset"], r["k"]): r["tau"] for r in rows}
        self.assertEqual(len(got), len(rows))
        self.assertEqual(got, expected)
        self.assertEqual(len(rows), 69)
        # none of these targets is in the bench copy: no target has rows from both files
        self.assertFalse({short(r["target"]) for r in rows} & set(SOURCES["specbundle_h200_bs8.json"]["models"]))

    def test_setup_fields(self):
        for r in rows_from("specbundle_h200_bs8.json") + rows_from("acceptance_sources.json"):
            self.assertEqual((r["draft"], r["engine"], r["temperature"], r["rate"]), ("eagle3", "sglang", 0.0, None))
            self.assertEqual(r["batch"], 1 if r["target"].endswith("Llama-3.1-8B-Instruct") else 8, r)

    def test_issue_45s_humaneval_above_mtbench(self):
        """Issue 45: the six targets with both accept more on HumanEval than on MT-bench (tau 3.15-3.5 against
        2.35-2.93 at K = 3), for their SpecForge heads."""
        tau = {(r["head"], short(r["target"]), r["dataset"]): r["tau"] for r in rows_from("specbundle_h200_bs8.json")
               if r["k"] == 3}
        pairs = [(h, t) for h, t, d in tau if d == "humaneval" and (h, t, "mtbench") in tau]
        self.assertEqual(len({t for h, t in pairs}), 6)
        self.assertEqual(len(pairs), 9)   # three of the six have a second head
        for h, t in pairs:   # every head of every target
            self.assertGreater(tau[(h, t, "humaneval")], tau[(h, t, "mtbench")], (h, t))
        newest = [(h, t) for h, t in pairs
                  if h.endswith(("-SpecForge", "Kimi-K2-Instruct-eagle3", "Ling-Flash-2.0-eagle3"))]
        self.assertEqual(len(newest), 6)
        for h, t in newest:
            self.assertTrue(3.14 < tau[(h, t, "humaneval")] < 3.5 and 2.34 < tau[(h, t, "mtbench")] < 2.9, (h, t))


class TestOtherSources(unittest.TestCase):
    def test_published_json(self):
        """Every point of published.json with a chain's k and an acceptance length, and nothing else."""
        expected = {(e["source"], p["k"], p["acceptance_length"]) for e in SOURCES["published.json"]["entries"]
                    for p in e.get("points", []) if "k" in p and "acceptance_length" in p}
        got = [(r["source"], r["k"], r["tau"]) for r in rows_from("published.json")]
        self.assertEqual(len(got), len(set(got)))
        self.assertEqual(set(got), expected)
        self.assertEqual(len(got), 13)   # EAGLE-3 K 2-7, EAGLE-1 K 2-7, vLLM CI's K = 3

    def test_published_moe(self):
        """Rows with an acceptance, chains only (topk null or 1), random prompts out; identical rows once."""
        expected = set()
        for p in SOURCES["published_moe_2026.json"]["points"]:
            if p["acceptance_length"] is None and p["acceptance_rate"] is None:
                continue
            if (p["tree_topk"] not in (None, 1)) or (p["dataset"] or "").startswith("random"):
                continue
            k = p["k_num_spec_tokens_or_steps"] or p["num_draft_tokens"] - 1
            expected.add((p["source_detail"], k, p["acceptance_length"], p["acceptance_rate"], p["batch_size"]))
        got = [(r["source"], r["k"], r["tau"], r["rate"], r["batch"]) for r in rows_from("published_moe_2026.json")]
        self.assertEqual(len(got), len(set(got)))
        self.assertEqual(set(got), expected)
        self.assertEqual(len(got), 7)   # vLLM's MTP rate (two QPS rows, one number), 3 n-gram, 2 + 1 SGLang MTP
        self.assertNotIn("random", " ".join(r["dataset"] for r in ROWS))
        self.assertFalse([r for r in ROWS if "Maverick" in (r["head"] or "") + r["target"]])   # its figures are trees

    def test_served_runs(self):
        """The measured acceptance lengths of three sources, one row per run; the forced-alpha speculators runs and
        the tree-derived aimosprite rows are out."""
        data = SOURCES["served_runs.json"]
        keep = {"tomasruizt-vllm-scripts-online-throughput-llama70b-tp2",
                "tomasruizt-vllm-scripts-adaptive_k-qwen3-32b-fp8-tp2", "Dogacel-specdrift-gpt-oss-120b-eagle3-card"}
        expected = {}
        for p in data["points"]:
            if p["source"] in keep and p.get("acceptance"):
                source = p.get("source_file") or data["sources"][p["source"]]["source_file"]
                expected[(source, p["K"], p["concurrency"])] = p["acceptance"]
        rows = rows_from("served_runs.json")
        got = {(r["source"], r["k"], r["batch"]): r for r in rows}
        self.assertEqual(len(got), len(rows))
        self.assertEqual(set(got), set(expected))
        self.assertEqual(len(rows), 117)   # 42 EAGLE-3 + 42 draft-model (Llama 3.3 70B), 30 Qwen3-32B, 3 gpt-oss-120b
        for key, acc in expected.items():
            self.assertEqual(got[key]["tau"], acc["acceptance_length"], key)
            pct = acc.get("acceptance_rate_pct(vLLM draft-token acceptance rate)")
            if pct is None:
                self.assertIsNone(got[key]["rate"])
            else:
                self.assertAlmostEqual(got[key]["rate"], pct / 100, places=6)
        self.assertFalse([r for r in ROWS if "speculators" in r["source"] or "aimosprite" in r["source"]
                          or r["target"].startswith("Qwen/Qwen3-0.6B")])

    def test_served_setup(self):
        setup = {"meta-llama/Llama-3.3-70B-Instruct": ("likaixin/InstructCoder", "code", 0.0, "vllm"),
                 "Qwen/Qwen3-32B-FP8": ("SPEED-Bench qualitative", "chat", 1.0, "vllm"),
                 "openai/gpt-oss-120b": ("MT-Bench", "chat", 0.7, "sglang")}
        heads = set()
        for r in rows_from("served_runs.json"):
            self.assertEqual((r["dataset"], r["domain"], r["temperature"], r["engine"]), setup[r["target"]])
            heads.add((r["draft"], r["head"]))
        self.assertEqual(heads, {("eagle3", "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"),
                                 ("model", "meta-llama/Llama-3.2-1B"),
                                 ("eagle3", "RedHatAI/Qwen3-32B-speculator.eagle3"),
                                 ("eagle3", "Dogacel/specdrift-gpt-oss-120b-eagle3")})

    def test_temperature_pairs_pass_through(self):
        self.assertEqual(TABLE["temperature_pairs"], SOURCES["acceptance_sources.json"]["temperature_pairs"])
        for pair in TABLE["temperature_pairs"]:
            self.assertTrue(pair["source"])
            self.assertLess(pair["tau_t1"], pair["tau_t0"])   # every pair found: temperature 1 accepts less


class TestAlpha(unittest.TestCase):
    def test_every_alpha_solves_its_tau(self):
        for r in ROWS:
            if r["tau"] is not None:
                self.assertAlmostEqual(r["alpha"], alpha_from_length(r["tau"], r["k"]), delta=1e-4, msg=r)
                # and back: the chain's tau at that alpha is the source's tau (4-digit alpha: within 0.2%)
                self.assertAlmostEqual(acceptance_length(r["alpha"], r["k"]) / r["tau"], 1, delta=2e-3, msg=r)
            else:
                self.assertAlmostEqual(r["alpha"], alpha_from_rate(r["rate"], r["k"]), delta=1e-4, msg=r)
            if r["tau"] is not None and r["rate"] is not None:   # vLLM's rate is (tau - 1) / K, to its 2 decimals
                self.assertAlmostEqual(r["rate"], (r["tau"] - 1) / r["k"], delta=0.005 / r["k"] + 1e-4, msg=r)

    def test_hand_checked_values(self):
        def one(**match):
            found = [r for r in ROWS if all(r[k] == v for k, v in match.items())]
            self.assertEqual(len(found), 1, match)
            return found[0]
        # vLLM CI, Llama 3.1 8B, yuhuili's EAGLE-3 head, MT-bench, K = 3: tau 2.811.
        # a = 0.768: 1 + .768 + .589824 + .452985 = 2.810809; a = 0.7681: 2.811239; so a = 0.76804.
        self.assertEqual(one(source="vLLM examples/offline_inference/spec_decode.py and its CI expectation")["alpha"],
                         0.768)
        # DeepSeek-R1 MTP, K = 1, vLLM's rate 0.81: tau = 1 + a, so a = r = 0.81.
        self.assertEqual(one(draft="mtp", target="deepseek-ai/DeepSeek-R1")["alpha"], 0.81)
        # SpecBundle Llama 3.1 8B, SpecForge head, MT-bench, K = 3: tau 2.898 (2.8981...).
        # a = 0.78: 2.862952; a = 0.79: 2.907139; linear between them: 0.78 + 0.035/0.0442 * 0.01 = 0.7879.
        r = one(head="lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge", dataset="mtbench", k=3)
        self.assertAlmostEqual(r["tau"], 2.898, delta=0.001)
        self.assertAlmostEqual(r["alpha"], 0.7879, delta=5e-4)
        # tomasruizt, Llama 3.3 70B, EAGLE-3 at K = 3, concurrency 1: tau 2.81, rate 60.33%.
        r = one(head="yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", k=3, batch=1)
        self.assertEqual((r["tau"], r["rate"], r["alpha"]), (2.81, 0.6033, 0.7678))


class TestShape(unittest.TestCase):
    FAMILIES = {"llama-3": False, "llama-4": True, "qwen3": False, "qwen3-moe": True, "qwen3-next": True,
                "deepseek": True, "kimi-k2": True, "gpt-oss": True, "ling": True}

    def test_fields(self):
        keys = {"draft", "head", "target", "family", "moe", "dataset", "domain", "k", "tau", "rate", "alpha",
                "temperature", "engine", "batch", "source", "file"}
        for r in ROWS:
            self.assertEqual(set(r), keys)
            self.assertIn(r["draft"], ("eagle3", "eagle", "mtp", "ngram", "model"))
            self.assertEqual(r["head"] is None, r["draft"] in ("mtp", "ngram"), r)
            self.assertEqual(self.FAMILIES[r["family"]], r["moe"], r)
            self.assertIn(r["engine"], ("sglang", "vllm", "trtllm", None))
            self.assertIn(r["dataset"], TABLE["domains"][r["domain"]], r)
            self.assertTrue(r["source"] and (r["tau"] is not None or r["rate"] is not None))
            self.assertTrue(0 < r["alpha"] < 1 and r["k"] >= 1, r)

    def test_domains(self):
        domain = {d: dom for dom, names in TABLE["domains"].items() for d in names}
        self.assertEqual(set(TABLE["domains"]), {"chat", "code", "math", "reasoning", "other"})
        self.assertEqual(len(domain), sum(len(v) for v in TABLE["domains"].values()))   # a dataset in one domain
        for name, dom in {"mtbench": "chat", "MT-bench": "chat", "humaneval": "code", "livecodebench": "code",
                          "likaixin/InstructCoder": "code", "gsm8k": "math", "math500": "math", "gpqa": "reasoning",
                          "financeqa": "other", "not stated": "other", "SPEED-Bench qualitative": "chat"}.items():
            self.assertEqual(domain[name], dom, name)

    def test_rows_unique(self):
        dumped = [json.dumps(r, sort_keys=True) for r in ROWS]
        self.assertEqual(len(dumped), len(set(dumped)))
        self.assertEqual(len(ROWS), 401)

    def test_table_is_what_the_script_writes(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "table.json"
            subprocess.run([sys.executable, str(BENCH / "acceptance_table.py"), str(out)], check=True,
                           capture_output=True)
            self.assertEqual(out.read_bytes(), TABLE_PATH.read_bytes())


if __name__ == "__main__":
    unittest.main()
