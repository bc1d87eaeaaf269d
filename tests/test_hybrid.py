"""Hybrid targets: layers that keep a recurrent state (Gated DeltaNet's linear attention, Mamba) beside attention
layers. Counted by hand from the configs' fields (tests/fixtures/configs, transformers' configuration classes'
defaults), against the models' published parameter counts, and run end to end."""
import dataclasses
import json
import tempfile
import unittest
from pathlib import Path

from support import build_deployment, ROOT, run

from rollout import costmodel, deployment, hfconfig
from rollout.render import words
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
        for change, said in ((dict(layer_types=["linear_attention"] * 47 + ["chunked_attention"]), "chunked_attention"),
                             (dict(hybrid_override_pattern="M-M*"), "hybrid_override_pattern")):
            with self.subTest(said=said), self.assertRaises(UsageError) as caught, \
                    tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "config.json"
                path.write_text(json.dumps(dict(cfg, **change)))
                hfconfig.shape_from_config(path)
            self.assertIn(said, str(caught.exception))


class HostileConfigs(unittest.TestCase):
    """A hostile round's hybrid configs: each is read as transformers' config class reads it, or refused by name."""

    def shape(self, base, **change):
        cfg = json.loads((CONFIGS / base).read_text())
        drop = [k for k, v in change.items() if v is DROP]
        cfg = {k: v for k, v in dict(cfg, **change).items() if k not in drop}
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "config.json"
            path.write_text(json.dumps(cfg))
            return hfconfig.shape_from_config(path)

    def refused(self, base, words, **change):
        with self.assertRaises(UsageError) as caught:
            self.shape(base, **change)
        self.assertIn(words, str(caught.exception))

    def test_entries_fields_and_dtypes_that_are_not_what_the_classes_take_are_refused(self):
        types = "qwen3-next-80b-a3b-layer-types.config.json"
        self.refused(types, "layer_types must list each layer's kind as text",
                     layer_types=[["linear_attention"]] + ["linear_attention"] * 47)
        self.refused(types, "attn_output_gate must be true or false", attn_output_gate="yes")
        self.refused(types, "linear_num_value_heads 33 is not a multiple of linear_num_key_heads 16",
                     linear_num_value_heads=33)
        self.refused("jamba-v0.1.config.json", "mamba_ssm_dtype 'float64'", mamba_ssm_dtype="float64")
        # Qwen3NextConfig's defaults speak for a qwen3_next config only: a Llama with linear layers gives its own
        self.refused(types, "no linear_conv_kernel_dim", model_type="llama", linear_conv_kernel_dim=DROP)
        self.refused("jamba-v0.1.config.json", "no mamba_d_state", model_type="llama", mamba_d_state=DROP)
        # Nemotron-H's pattern beside a text_config, not only inside it
        cfg = json.loads((CONFIGS / "jamba-v0.1.config.json").read_text())
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "config.json"
            path.write_text(json.dumps(dict(text_config=cfg, hybrid_override_pattern="M-M*")))
            with self.assertRaises(UsageError) as caught:
                hfconfig.shape_from_config(path)
        self.assertIn("hybrid_override_pattern", str(caught.exception))

    def test_jambas_defaults_offsets_and_state_dtype_are_its_config_classs(self):
        jamba = "jamba-v0.1.config.json"
        # JambaConfig: attn_layer_period 8, offset 4; expert_layer_period 2, offset 1; mamba_dt_rank "auto"
        bare = self.shape(jamba, attn_layer_period=DROP, attn_layer_offset=DROP, expert_layer_period=DROP,
                          expert_layer_offset=DROP, mamba_dt_rank=None)
        self.assertEqual((bare["mamba_layers"], bare["moe_layers"], bare["mamba"]["dt_rank"]), (28, 16, 4096 // 16))
        # experts where i % 3 == 0: layers 0, 3, ..., 30, eleven of 32; where i % 3 == 2: 2, 5, ..., 29, ten
        self.assertEqual(self.shape(jamba, expert_layer_period=3, expert_layer_offset=0)["moe_layers"], 11)
        self.assertEqual(self.shape(jamba, expert_layer_period=3, expert_layer_offset=2)["moe_layers"], 10)
        self.refused(jamba, "expert_layer_offset must be from 0 to 3", expert_layer_period=4, expert_layer_offset=4)
        self.assertEqual(self.shape(jamba, mamba_ssm_dtype="float32")["state_bytes"], 4)
        self.assertNotIn("state_bytes", self.shape(jamba, mamba_ssm_dtype="bfloat16"))

    def test_the_state_is_on_the_deployment_line(self):
        dep = build_deployment(model="qwen3-next-80b-a3b", gpu="h200", tp=2, weights_dtype="bf16")
        # 36 Gated DeltaNet layers x (24,576 conv + 524,288 state elements) x 2 B = 39,518,208 B = 37.7 MiB
        text = words.state_text(dep)
        self.assertIn("37.7 MiB a sequence in its 36 recurrent layers, held 4 times", text)
        self.assertEqual(words.state_text(build_deployment(model="llama-3.1-8b", gpu="h100-sxm", tp=1)), "")


DROP = object()   # HostileConfigs.shape: leave this field out


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
