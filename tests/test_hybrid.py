"""Hybrid targets: layers that keep a recurrent state (Gated DeltaNet's linear attention, Mamba) beside attention
layers. Counted by hand from the configs' fields (tests/fixtures/configs, transformers' configuration classes'
defaults), against the models' published parameter counts, and run end to end."""
import dataclasses
import json
import unittest

from support import build_deployment, CODE, ROOT, run

from rollout import costmodel, deployment, hfconfig
from rollout.catalog import MODELS
from rollout.records import UsageError

CONFIGS = ROOT / "tests" / "fixtures" / "configs"
NEXT, JAMBA = MODELS["qwen3-next-80b-a3b"], MODELS["jamba-v0.1"]


class ReadFromConfigs(unittest.TestCase):
    def test_the_interval_and_the_layer_types_give_one_shape_and_it_is_the_catalogs(self):
        by_interval = hfconfig.shape_from_config(CONFIGS / "qwen3-next-80b-a3b.config.json")
        by_types = hfconfig.shape_from_config(CONFIGS / "qwen3-next-80b-a3b-layer-types.config.json")
        self.assertEqual(by_interval, by_types)
        self.assertEqual((by_interval["linear_layers"], by_interval["layers"]), (36, 48))   # full: 3, 7, ..., 47
        self.assertEqual(by_interval["nextn"], 1)              # mtp_num_hidden_layers
        for key, value in NEXT.items():
            if key != "head_inter":                            # the head's width is its own config's
                self.assertEqual(by_interval.get(key), value, key)

    def test_jambas_periods(self):
        shape = hfconfig.shape_from_config(CONFIGS / "jamba-v0.1.config.json")
        # attention where i % 8 == 4: layers 4, 12, 20, 28; experts where i % 2 == 1: 16 layers.
        self.assertEqual((shape["mamba_layers"], shape["moe_layers"]), (28, 16))
        for key, value in JAMBA.items():
            self.assertEqual(shape.get(key), value, key)

    def test_what_is_not_modelled_is_refused_by_name(self):
        cfg = json.loads((CONFIGS / "qwen3-next-80b-a3b-layer-types.config.json").read_text())
        for change, words in ((dict(layer_types=["linear_attention"] * 47 + ["chunked_attention"]), "chunked_attention"),
                              (dict(hybrid_override_pattern="M-M*"), "hybrid_override_pattern")):
            with self.subTest(words=words), self.assertRaises(UsageError) as caught:
                path = CODE.parent / "tests" / "fixtures" / "configs" / "_planted.config.json"
                try:
                    path.write_text(json.dumps(dict(cfg, **change)))
                    hfconfig.shape_from_config(path)
                finally:
                    path.unlink()
            self.assertIn(words, str(caught.exception))


class CountedByHand(unittest.TestCase):
    def test_kv_bytes_count_only_the_attention_layers(self):
        # Qwen3-Next: 12 full-attention layers x K and V x 2 KV heads x 256 x 2 B; Jamba: 4 x 2 x 8 x 128 x 2 B.
        self.assertEqual(deployment.kv_bytes_per_token(NEXT, "bf16"), 12 * 2 * 2 * 256 * 2)
        self.assertEqual(deployment.kv_bytes_per_token(NEXT, "fp8"), 12 * 2 * 2 * 256)
        self.assertEqual(deployment.kv_bytes_per_token(JAMBA, "bf16"), 4 * 2 * 8 * 128 * 2)

    def test_the_recurrent_state_a_sequence_holds(self):
        # Gated DeltaNet: conv over q, k (16 x 128 each) and v (32 x 128) keeps 3 inputs; a 128 x 128 state per
        # value head. Mamba-1: 8,192 channels x 3 inputs, 8,192 x 16 state. bf16 throughout.
        self.assertEqual(deployment.recurrent_state_bytes(NEXT), 36 * ((2 * 2048 + 4096) * 3 + 32 * 128 * 128) * 2)
        self.assertEqual(deployment.recurrent_state_bytes(JAMBA), 28 * (8192 * 3 + 8192 * 16) * 2)
        fp32 = dict(NEXT, state_bytes=4)   # Qwen3.5's mamba_ssm_dtype float32: the state, not the conv, doubles
        self.assertEqual(deployment.recurrent_state_bytes(fp32) - deployment.recurrent_state_bytes(NEXT),
                         36 * 32 * 128 * 128 * 2)

    def test_parameters_against_the_model_cards(self):
        # Qwen3-Next-80B-A3B: "80B in total and 3B activated" (its MTP layer apart); Jamba-v0.1: 52 B, 12 B active.
        self.assertAlmostEqual(deployment.model_params(NEXT) / 80e9, 1.0, delta=0.01)
        self.assertAlmostEqual(deployment.model_params(JAMBA) / 51.6e9, 1.0, delta=0.01)
        self.assertAlmostEqual(deployment.model_params(JAMBA, active=True) / 12e9, 1.0, delta=0.02)
        # One Gated DeltaNet layer, by hand: in_proj_qkvz 2048 x 12,288, in_proj_ba 2048 x 64, conv 8,192 x 4,
        # A_log and dt_bias 32 each, the gated norm's 128, out_proj 4,096 x 2048.
        self.assertEqual(deployment.linear_attention_params(NEXT),
                         2048 * 12288 + 2048 * 64 + 8192 * 4 + 64 + 128 + 4096 * 2048)

    def test_memory_holds_the_state_and_a_copy_per_drafted_position(self):
        dep = build_deployment("qwen3-next-80b-a3b", "h200", 1, kv_dtype="bf16", context=3000)
        self.assertEqual(deployment.kv_bytes_per_sequence(dep),
                         3000 * (12 * 2 * 2 * 256 * 2 + dep.drafter.kv_bytes_per_token)
                         + deployment.STATE_COPIES * 36 * ((2 * 2048 + 4096) * 3 + 32 * 128 * 128) * 2)


class StepCost(unittest.TestCase):
    def test_a_pass_reads_each_state_once_and_writes_it_after_every_token(self):
        dep = build_deployment("qwen3-next-80b-a3b", "h200", 1)
        stateless = dataclasses.replace(dep, target=dataclasses.replace(dep.target, state_bytes=0.0))
        bytes_per_ms = dep.bandwidth_tbs * 1e9 * costmodel.bandwidth_share(dep, costmodel.FIT)
        for batch, tokens in ((1, 1), (8, 1), (8, 4), (32, 8)):
            with self.subTest(batch=batch, tokens=tokens):
                with_state = costmodel.pass_parts(dep.target, dep, batch, tokens, 0.0)["attention"]
                without = costmodel.pass_parts(stateless.target, stateless, batch, tokens, 0.0)["attention"]
                self.assertAlmostEqual(with_state - without,
                                       batch * dep.target.state_bytes * (1 + tokens) / bytes_per_ms, places=9)


class EndToEnd(unittest.TestCase):
    def test_each_runs_with_eagle3_and_with_its_own_mtp(self):
        for argv in (["--model", "qwen3-next-80b-a3b", "--gpu", "h200", "--engine", "sglang"],
                     ["--model-config", str(CONFIGS / "qwen3-next-80b-a3b-layer-types.config.json"), "--gpu", "h200",
                      "--draft", "mtp"],
                     ["--model-config", str(CONFIGS / "jamba-v0.1.config.json"), "--gpu", "h100-sxm"]):
            with self.subTest(argv=argv):
                status, text, err = run(argv + ["--ks", "3", "--concurrency", "1,16", "--alphas", "0.7",
                                                "--slo", "none", "--json", "--no-write"])
                self.assertEqual(status, 0, err)
                dep = json.loads(text)["deployment"]
                self.assertGreater(dep["max_concurrency"], 16)
        status, _, err = run(["--model", "jamba-v0.1", "--gpu", "h200", "--draft", "mtp", "--no-write"])
        self.assertEqual((status, len(err.splitlines())), (2, 1), err)
        self.assertIn("has no MTP module", err)


if __name__ == "__main__":
    unittest.main()
