"""render(report) -> Output: the text a run prints and the files it writes, from a Report alone.

The modules here turn records into text and import no cost model, simulation or serving module (tests/test_cli.py
holds it): words (sentences several parts share), tables (the verdict in words and the tables' parts), terminal (the
printed report), charts (the SVG charts), plan (the rollout plan in Markdown), export (--json, predicted benchmark
files, --compare).
"""
from __future__ import annotations

from ..records import printable, STANDARD_OUTPUT
from ..report import Output
from .tables import deployment_head, render_gate
from .exercises import render_exercises
from .charts import CHOICE_CHART, render_charts
from .choice import render_choice, render_choice_chart
from .plan import render_plan
from .export import render_bench_file, render_benches, render_compare, render_json
from .terminal import render_tables, wrote_line


def render(report):
    """The run's Output: its exit status (with --gate, 1 when the gate fails), the text for standard output (the
    tables, --json or the exercises; with --out - the plan), and the files (the plan, its charts, the predicted
    benchmark files), every text shown printable."""
    inputs = report.inputs
    dep, grid, bench, out = inputs.dep, inputs.grid, inputs.bench, inputs.out
    if inputs.as_json:
        text = render_json(report, dep, grid)
    elif inputs.exercises:
        text = "\n".join(deployment_head(dep) + [""] + render_exercises(report.exercises, dep)
                         + (render_gate(report.gate) if inputs.as_gate else [])) + "\n"
    else:
        text = ("\n".join(render_choice(report.choice)) + "\n" if report.choice is not None else "") + render_tables(
            report, dep, grid)
        if report.benches:
            text += "\n".join(render_benches(report.benches, bench.folder)) + "\n"
        if report.comparisons:
            text += "\n".join(render_compare(report.comparisons)) + "\n"
    to_stdout = out == STANDARD_OUTPUT   # --out -: the plan alone is the text
    if to_stdout:
        text = render_plan(report, dep, charts=False) + "\n"
    charts = ({out.parent / name: svg for name, svg in render_charts(report, dep).items()}
              if out is not None and not to_stdout else {})
    if report.choice is not None and report.choice.candidates and out is not None and not to_stdout:
        charts[out.parent / CHOICE_CHART] = render_choice_chart(report.choice)
    files = dict(charts)
    if out is not None and not to_stdout:
        files[out] = render_plan(report, dep)
    for pb in report.benches or ():
        files[bench.folder / pb.name] = render_bench_file(pb, dep)
    if files and not inputs.as_json and not to_stdout:   # the run ends by naming what it wrote (once it has)
        text += "\n" + wrote_line(out, list(charts), len(report.benches or ()), bench.folder) + "\n"
    status = (0 if report.gate.verdict == "pass" else 1) if inputs.as_gate else 0
    return Output(status=status, text=printable(text), files={path: printable(body) for path, body in files.items()})
