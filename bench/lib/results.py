"""Figures: one measured number with its name, unit and parameters; results.jsonl and latest.md.

Every benchmark writes to one file, ``bench/results/results.jsonl``: a line a figure (the suite) or a
line a printed JSON object (a scenario run by ``python -m bench NAME``), each with a ``bench`` field
that names what measured it.
"""

import json
import math
import os
import subprocess
import time
from dataclasses import dataclass, field

from bench.lib.servers import REPO

#: The one results file (``BENCH_RESULTS`` names another, e.g. for a test).
RESULTS_FILE = os.path.join(REPO, "bench", "results", "results.jsonl")


def results_file():
    return os.environ.get("BENCH_RESULTS") or RESULTS_FILE


class JsonLinesTee:
    """Stands for a scenario's stdout: passes everything through, and appends each line that is
    one JSON object (a scenario's figures) to the results file, as ``{"bench": NAME, "args": ...,
    "commit": ..., "timestamp": ..., "load_before": ..., "result": {...}}``."""

    def __init__(self, stream, bench, args, path=None):
        self.stream, self.bench, self.args = stream, bench, " ".join(args)
        self.path = path or results_file()
        self.pending = ""
        self.commit = None
        self.load_before = " ".join("%.2f" % n for n in os.getloadavg())

    def write(self, text):
        self.stream.write(text)
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self._record(line.strip())
        return len(text)

    def flush(self):
        self.stream.flush()

    def close(self):
        """Record a last line without a newline; the stream itself stays open."""
        line, self.pending = self.pending.strip(), ""
        self._record(line)

    def __getattr__(self, name):
        return getattr(self.stream, name)

    def _record(self, line):
        if not (line.startswith("{") and line.endswith("}")):
            return
        try:
            figures = json.loads(line)
        except ValueError:
            return
        if not isinstance(figures, dict):
            return
        if self.commit is None:
            self.commit = git_commit()
        record = {"bench": self.bench, "args": self.args, "commit": self.commit,
                  "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "load_before": self.load_before,
                  "result": figures}
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(self.path, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    params: dict = field(default_factory=dict)
    section: str = ""

    def as_record(self, commit, timestamp, run_id):
        return {"bench": self.name.split(".")[0], "name": self.name, "value": self.value, "unit": self.unit,
                "params": self.params, "commit": commit, "timestamp": timestamp, "run": run_id}


class Collector:
    """Figures of one run, in order, with free-text notes (the profile table) per section."""

    def __init__(self):
        self.figures = []
        self.notes = {}
        self.hidden = set()

    def add(self, section, name, value, unit, **params):
        if value is None or isinstance(value, bool) or not math.isfinite(float(value)):
            raise ValueError("figure %s has no finite value: %r" % (name, value))
        figure = Figure(name, float(value), unit, params, section)
        self.figures.append(figure)
        return figure

    def note(self, section, text):
        self.notes.setdefault(section, []).append(text)

    def hide_figures(self, section):
        """Show only the notes of ``section`` in latest.md (its figures still go to results.jsonl)."""
        self.hidden.add(section)


def git_commit():
    """``HEAD``'s hash plus ``+dirty`` when the work tree has changes (read-only git calls)."""
    try:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (commit or "unknown") + ("+dirty" if dirty else "")


def write(collector, out_dir, scale, elapsed, commit=None, loadavg=None):
    """Append every figure to results.jsonl (in ``out_dir``: the one results file unless told
    otherwise) and rewrite latest.md; returns the table text."""
    os.makedirs(out_dir, exist_ok=True)
    commit = commit or git_commit()
    timestamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    run_id = "%s-%d" % (time.strftime("%Y%m%d%H%M%S"), os.getpid())
    jsonl = os.path.join(out_dir, "results.jsonl")
    if os.path.abspath(out_dir) == os.path.dirname(RESULTS_FILE):
        jsonl = results_file()
    with open(jsonl, "a") as f:
        for figure in collector.figures:
            record = figure.as_record(commit, timestamp, run_id)
            record["params"] = dict(record["params"], scale=scale)
            f.write(json.dumps(record, sort_keys=True) + "\n")
    title = "Benchmarks — %s scale, commit %s, %s (%.0f s" % (scale, commit, timestamp, elapsed)
    if loadavg is not None:
        title += ", load average %.2f at start on %d CPUs" % (loadavg, os.cpu_count() or 1)
    text = table(collector, title + ")")
    tmp = os.path.join(out_dir, "latest.md.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(out_dir, "latest.md"))
    return text


def _format_value(value):
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return "{:,.0f}".format(value)
    if abs(value) >= 10:
        return "%.1f" % value
    if abs(value) >= 0.1:
        return "%.2f" % value
    return "%.3g" % value


def _format_params(params):
    return ", ".join("%s=%s" % (k, v) for k, v in params.items() if v is not None)


def _common_params(figures):
    """The parameters every figure of a section shares, with the same value."""
    if not figures:
        return {}
    common = dict(figures[0].params)
    for figure in figures[1:]:
        common = {k: v for k, v in common.items() if k in figure.params and figure.params[k] == v}
    return common


def table(collector, title):
    lines = ["# " + title, ""]
    sections = []
    for figure in collector.figures:
        if figure.section not in sections:
            sections.append(figure.section)
    for section in sections + [s for s in collector.notes if s not in sections]:
        figures = [f for f in collector.figures if f.section == section]
        lines += ["## " + section, ""]
        if figures and section not in collector.hidden:
            common = _common_params(figures)
            if common:
                lines += ["Parameters: " + _format_params(common), ""]
            lines += ["| figure | value | unit | params |", "|---|---:|---|---|"]
            for figure in figures:
                rest = {k: v for k, v in figure.params.items() if k not in common}
                lines.append("| %s | %s | %s | %s |" % (figure.name, _format_value(figure.value), figure.unit,
                                                         _format_params(rest)))
        for note in collector.notes.get(section, ()):
            if lines[-1]:
                lines.append("")
            lines.append(note)
        lines.append("")
    return "\n".join(lines)
