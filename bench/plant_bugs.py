"""Plant one bug at a time in a copy of the code and see whether the tests catch it.

    $ python bench/plant_bugs.py            # every mutant, the whole suite each: a few minutes
    $ python bench/plant_bugs.py 3 7        # only mutants 3 and 7

Each mutant names a top-level definition ("costmodel.eps_grown": a module of code/rollout/, or
main, and a function, class or constant in it) and replaces one exact snippet inside it (it must
occur there once) with a plausible mistake: a wrong unit, a dropped term, an off-by-one. The suite runs on a temporary copy of the repository, so
the working tree is never touched. Prints each mutant as KILLED (a test that is not a
byte-for-byte comparison failed), SNAPSHOT (only those failed) or SURVIVED. A surviving
mutant is either a missing test or a mistake no output can reveal: say which.
"""
import ast
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Byte-for-byte comparisons catch change, not error: a mutant only they catch is reported SNAPSHOT.
SNAPSHOTS = {"test_table_excerpt_is_what_the_default_run_prints",
             "test_committed_outputs_are_what_the_default_run_writes"}

MUTANTS = [
    ("the gate compares the per-token alpha, not the rate",
     "analysis.gate",
     'rate = acceptance_rate(measured.alpha, k)   # at a fixed K exactly accepted / drafted tokens',
     'rate = measured.alpha   # at a fixed K exactly accepted / drafted tokens'),
    ("the measured prediction takes per-token ITL for vLLM's per-chunk ITL",
     "analysis.measured_predictions",
     'p99_itl_change=cell.round_itl_spec_p99_ms / cell.itl_plain_p99_ms - 1.0,',
     'p99_itl_change=cell.p99_change,'),
    ("EAGLE-1 reads the target's lm_head in the weights' dtype (fp8), not bf16",
     "deployment.with_draft",
     'drafter = Net(active_params=read, weight_bytes=read * DRAFT_WEIGHT_BYTES,',
     'drafter = Net(active_params=read, weight_bytes=head * DRAFT_WEIGHT_BYTES + (read - head) * BYTES_PER[dep.weights_dtype],'),
    ("best K never tries K_MAX",
     "bestk.round_costs",
     'ks = [dep.tree_steps] if dep.tree_steps else range(1, K_MAX + 1)',
     'ks = [dep.tree_steps] if dep.tree_steps else range(1, K_MAX)'),
    ("a given eps grows additively with batch",
     "costmodel.eps_grown",
     'scaled = (1.0 + base) * (1.0 + eps_decode(dep, batch, k, fit)) / (1.0 + at_one) - 1.0',
     'scaled = base + eps_decode(dep, batch, k, fit) - at_one'),
    ("the plan caps break-even + margin at 1 (the gate does not)",
     "acceptance.required_rate",
     'return None if rate is None or rate + margin > 1.0 else round(rate + margin, 12)',
     'return None if rate is None else min(1.0, round(rate + margin, 12))'),
    ("tau counts one term too few",
     "acceptance.acceptance_length",
     'return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)',
     'return (1.0 - alpha ** k) / (1.0 - alpha)'),
    ("the renewal draw forgets the last round's overshoot",
     "simulation.renewal_draw",
     'mean_rounds = tokens / tau + (square - tau) / (2 * tau * tau)',
     'mean_rounds = tokens / tau'),
    ("a request's round count varies 2% too little",
     "simulation.renewal_draw",
     'sd_rounds = math.sqrt(tokens * var / tau) / tau',
     'sd_rounds = 0.98 * math.sqrt(tokens * var / tau) / tau'),
    ("the batch's tau averages tau, not 1/tau",
     "simulation.round_mix",
     'return 1.0 / sum(per_token), per_token',
     'return 1.0 / sum(per_token) * 1.02, per_token'),
    ("two-pass: another sequence rejects with f^(B-1), not 1 - f^(B-1)",
     "simulation.other_rejects",
     'return 1.0 - dec.full_share ** (batch - 1)',
     'return dec.full_share ** (batch - 1)'),
    ("P99 is the 98th percentile",
     "simulation.cell_latency",
     'tpot_spec_p99_ms=spec_ms * percentile(dec.tpot_spec, 0.99),',
     'tpot_spec_p99_ms=spec_ms * percentile(dec.tpot_spec, 0.98),'),
    ("prefill: a round carries one step's prompts, not tau steps'",
     "costmodel.spec_tpot_ms",
     '            + prefill_share_ms(dep, batch, fit))',
     '            + prefill_share_ms(dep, batch, fit) * rounds_per_token)'),
    ("KV cache counts K and V once",
     "deployment.kv_bytes_per_layer",
     'return 2 * m["kv_heads"] * m["head_dim"] * BYTES_PER[kv_dtype]',
     'return m["kv_heads"] * m["head_dim"] * BYTES_PER[kv_dtype]'),
    ("the weight read ignores tensor parallelism's split (one GPU's bandwidth)",
     "costmodel.pass_parts",
     'bytes_per_ms = dep.tp * dep.bandwidth_tbs * 1e9 * bandwidth_share(dep, fit)',
     'bytes_per_ms = dep.bandwidth_tbs * 1e9 * bandwidth_share(dep, fit)'),
    ("the spread's speedup uses the mean alpha's tau",
     "cells.evaluate_cell",
     'speedup_requests=speedup(dec.tau, cell_eps),',
     'speedup_requests=speedup(tau, cell_eps),'),
    ("the lesson's speedup uses K + 1",
     "acceptance.lesson_speedup",
     'return (1.0 + k * alpha) / (1.0 + eps)',
     'return (1.0 + (k + 1) * alpha) / (1.0 + eps)'),
    ("a measured tau is taken as tau(mean alpha), ignoring the spread",
     "analysis.center_requests",
     'return _increasing_root(lambda a: tau_at(a, spread), tau), spread',
     'return _increasing_root(lambda a: acceptance_length(a, k), tau), spread'),
    ("per-token ITL splits a round over A tokens, not A + 1",
     "simulation.token_itl_parts",
     'return [(round_cost_ms / (a + 1), w * (a + 1)) for a, w in enumerate(by_accepted)]',
     'return [(round_cost_ms / max(a, 1), w * (a + 1)) for a, w in enumerate(by_accepted)]'),
    ("the mix's request shares are its token shares (lengths ignored)",
     "mix.mix_domains",
     'rows = [(row[1] / tokens, row[2], tokens) for row, tokens in zip(mix, lengths)]',
     'rows = [(row[1], row[2], tokens) for row, tokens in zip(mix, lengths)]'),
    ("the two-pass chunk's second-pass share ignores the tagged sequence's own rejections",
     "simulation.cell_latency",
     'second = 1.0 - (1.0 - p_other) * dec.full_share            # share of rounds with a second pass',
     'second = p_other'),
    ("the two-pass shortcut trusts its candidates without the check",
     "simulation.cell_latency",
     'if len(heavy) == top and heavy[-1] >= two_pass(*dec.rest_max, 0.0):',
     'if len(heavy) == top:'),
    ("n-gram lookup pays a draft step's fixed cost though it runs no model",
     "costmodel.draft_step_ms",
     'if not runs_a_draft_model(dep):\n        return 0.0\n',
     'if not runs_a_draft_model(dep):\n        return fixed_ms(dep, "draft", fit)\n'),
    ("a varying-K benchmark's tau is divided by full-K rounds",
     "analysis.measured_predictions",
     'seen = eps_seen(eps_decode(dep, batch, measured.k_mean, fit),',
     'seen = eps_seen(eps_decode(dep, batch, measured.k, fit),'),
    ("a fixed K a round or two short is read as varying K (position 0's rate for alpha)",
     "readers.measured_acceptance",
     'varying = shortfall > K_SHORTFALL',
     'varying = shortfall > COUNT_SLACK * k'),
    ("eps_growth splits a tree's round at K + 1 verify tokens",
     "costmodel.eps_growth",
     'verify = target_parts(dep, batch, verify_tokens(dep, k), fit)',
     'verify = target_parts(dep, batch, k + 1, fit)'),
    ("the traffic mix's best K never considers speculation off",
     "mix.traffic_blend",
     'blend_at = {0: 1.0, **{kk:',
     'blend_at = {**{kk:'),
    ("a round's distribution drops the chance that the first draft is rejected",
     "acceptance.round_distribution",
     '        probs.append(survive * (1.0 - alpha))\n',
     '        probs.append(survive * (1.0 - alpha) if probs else 0.0)\n'),
    ("a mean K below the next whole one costs what the whole K below costs",
     "costmodel.eps_decode",
     '    share = k - whole\n',
     '    share = 0.0\n'),
    ("TensorRT-LLM borrows SGLang's draft-step and round costs instead of vLLM's",
     "catalog.ENGINES",
     'pass_cost_of="trtllm", draft_costs_of="vllm",',
     'pass_cost_of="trtllm", draft_costs_of="sglang",'),
    ("--json shows an OPTIONAL field that holds nothing",
     "render.export.shown_in_json",
     '    if meta.get("optional") and getattr(record, f.name) is None:\n        return False\n',
     ''),
    ("an engine era hides more host time than a round's fixed costs",
     "costmodel.hidden_ms",
     'return min(dep.era.saving_ms(draft_kind(dep.draft), dep.topk), fixed)',
     'return dep.era.saving_ms(draft_kind(dep.draft), dep.topk)'),
    ("an era's saving counts the round before at the tau after",
     "catalog.RoundSaving",
     'return self.before_ms * self.tau_before - self.after_ms * self.tau_after',
     'return (self.before_ms - self.after_ms) * self.tau_after'),
    ("vLLM's async rounds hide nothing",
     "costmodel.hidden_ms",
     'if draft_kind(dep.draft) in dep.era.hides_for:',
     'if False:'),
    ("vLLM's async rounds hide a draft model's fixed costs too",
     "catalog.ENGINES",
     'hides_for=("eagle3", "eagle", "mtp"),',
     'hides_for=("eagle3", "eagle", "mtp", "model"),'),
    ("a request's TPOT carries its own prompt too (B, not B - 1)",
     "costmodel.prefill_tokens",
     'return max(batch - 1, 0) * dep.input_tokens / dep.output_tokens',
     'return batch * dep.input_tokens / dep.output_tokens'),
    ("a capped expert's share is not passed on to the others",
     "experts.expert_shares",
     'shares = [1.0] * capped + [(k - capped) * w / rest for w in weights[capped:]]',
     'shares = [1.0] * capped + [k * w / rest for w in weights[capped:]]'),
    ("expert parallelism waits for the mean GPU, not the busiest",
     "experts.touched_experts",
     'return dep.ep * busiest_at(net.experts, net.experts_per_token, tokens, net.routing_exponent, dep.ep)',
     'return expected_experts(net.experts, net.experts_per_token, tokens, net.routing_exponent)'),
    ("every layer, dense or MoE, is let off its MLP's share of the fixed cost",
     "costmodel.pass_parts",
     '+ net.moe_layers * (dep.engine.moe_layer_us - moe_fixed_share(dep, fit) * fit.layer_us) / 1e3),',
     '+ net.moe_layers * dep.engine.moe_layer_us / 1e3 - net.layers * moe_fixed_share(dep, fit) * fit.layer_us / 1e3),'),
    ("a sequence's verify tokens route independently of one another",
     "experts.independent_tokens",
     'return batch * (1.0 + (tokens_per_seq - 1) * (1.0 - affinity))',
     'return batch * tokens_per_seq'),
    ("MLA's latent is split across the TP GPUs like KV heads",
     "deployment.kv_groups",
     'return 1 if m.get("mla") else m["kv_heads"]',
     'return m["kv_heads"]'),
    ("the MoE kernel's latency is paid once a pass, not once a MoE layer",
     "costmodel.pass_parts",
     '+ net.moe_layers * (dep.engine.moe_layer_us - moe_fixed_share(dep, fit) * fit.layer_us) / 1e3),',
     '+ (net.moe_layers > 0) * (dep.engine.moe_layer_us - moe_fixed_share(dep, fit) * fit.layer_us) / 1e3),'),
    ("a prefill chunk is the whole prompt whatever the engine's budget",
     "deployment.prefill_chunk",
     'return min(dep.input_tokens, step_budget(dep))',
     'return dep.input_tokens'),
    ("the verdict turns speculation on wherever the range's top clears 1.0x",
     "schedule.call_of",
     'return "on" if low > 1.0 else',
     'return "on" if high > 1.0 else'),
    ("the verdict ignores a failed gate",
     "analysis.verdict",
     '        call = GATE_CALLS[measured_gate.verdict]',
     '        call = call'),
    ("vLLM's FlashAttention 2 shares a KV head's read at any query length",
     "costmodel.kv_reads",
     'if (tokens_per_seq <= 1 or not net.query_heads',
     'if (tokens_per_seq <= 99 or not net.query_heads'),
    ("a verify pass reads the KV once per query head on every GPU",
     "catalog.ENGINES",
     'unshared_kv_families=("ampere", "ada"),',
     'unshared_kv_families=("ampere", "ada", "hopper"),'),
    ("vLLM's async era hides a draft model's verify tokens too",
     "deployment.token_cost_hidden",
     'return dep.era.async_steps and (tokens_per_seq <= 1 or draft_kind(dep.draft) in dep.era.hides_for)',
     'return dep.era.async_steps'),
]


def source_of(code, target):
    """(path, text, start, end): the file a target "module.name" lives in, and the character span of that name's
    top-level statement (decorators included). code: a checkout's code/ folder."""
    module, _, name = target.rpartition(".")   # "costmodel.eps_grown", "render.export.shown_in_json"
    path = code / "main.py" if module == "main" else code / "rollout" / (module.replace(".", "/") + ".py")
    text = path.read_text()
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for node in ast.parse(text).body:
        names = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else [
            t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)]
        if name in names:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            return path, text, starts[first - 1], starts[node.end_lineno]
    raise LookupError(f"{target}: no such top-level name")


def planted(code, target, old, new):
    """The mutated file's (path, text), or None when the snippet does not occur exactly once in the target."""
    path, text, start, end = source_of(code, target)
    body = text[start:end]
    return None if body.count(old) != 1 else (path, text[:start] + body.replace(old, new) + text[end:])


def mutated(target, old, new):
    """Run the suite on a copy of the repository with one mutant planted (see suite_with)."""
    return suite_with(lambda code: planted(code, target, old, new))


def suite_with(change):
    """Run the suite on a copy of the repository where change(code folder of the copy) gives one file's new
    (path, text), or None when it does not apply.

    Returns "NOT APPLIED", or the verdict (KILLED / SNAPSHOT / SURVIVED) and the non-snapshot tests that failed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "repo"
        # Without tests/slow_mutants.py: it fails for every mutant (the snippet is gone), which says nothing.
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", "slow_mutants.py"))
        change = change(copy / "code")
        if change is None:
            return "NOT APPLIED"
        change[0].write_text(change[1])
        # Both tiers, as .ci/run runs them: the README's command, then tests/slow_*.py.
        errors = "".join(subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests", *pattern],
                                        cwd=copy, capture_output=True, text=True).stderr
                         for pattern in ([], ["-p", "slow_*.py"]))
    failed = [line.split(" (")[0][6:].strip() for line in errors.splitlines()
              if line.startswith(("FAIL: ", "ERROR:"))]
    physics = [t for t in failed if t not in SNAPSHOTS]
    verdict = ("KILLED  " if physics else "SNAPSHOT") if failed else "SURVIVED"
    return f"{verdict} {name_tests(physics)}"


def name_tests(tests):
    return f" [{', '.join(tests[:3])}{', ...' if len(tests) > 3 else ''}]" if tests else ""


def run(index, name, target, old, new):
    result = mutated(target, old, new)
    head, _, tests = result.partition(" [")
    return f"{index:2d} {head.strip()} {name}" + (f"  [{tests}" if tests else "")


def main(argv):
    if not all(a.isdigit() and 1 <= int(a) <= len(MUTANTS) for a in argv):
        print(f"usage: python bench/plant_bugs.py [N ...]   (N: a mutant's number, 1-{len(MUTANTS)}; none: all)",
              file=sys.stderr)
        return 2
    chosen = {int(a) for a in argv} or set(range(1, len(MUTANTS) + 1))
    for index, (name, target, old, new) in enumerate(MUTANTS, 1):
        if index in chosen:
            print(run(index, name, target, old, new), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
