"""The command line: ``python -m bench --list``, ``python -m bench NAME [ARGS...]``, and
``python -m bench [--quick] [--scale S] [--only ...]`` (no NAME: the suite, what ``make bench`` runs).

A scenario is a module of ``bench/scenarios/``. One with a ``__main__`` block runs as it would alone: its
``main(ARGS)``, its options declared with ``bench.lib.options``; the JSON objects it prints go to the results
file (``bench.lib.results.JsonLinesTee``). One without (a part of the suite) runs as
``python -m bench --only NAME ARGS...``.
"""

import ast
import importlib
import os
import sys

from bench.lib import results, runner

SCENARIOS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenarios")
#: Scenarios the suite runs, under the names its --only takes.
SUITE_NAMES = {"inprocess": "inprocess", "route": "route", "profiling": "profile", "mixed": "mixed",
               "registration": "register", "memory": "memory", "cores": "cores", "fleet": "fleet"}


def scenarios():
    """{name: (first line of its docstring, runs alone)} for every module of bench/scenarios/."""
    found = {}
    for entry in sorted(os.listdir(SCENARIOS)):
        if not entry.endswith(".py") or entry.startswith("_"):
            continue
        with open(os.path.join(SCENARIOS, entry)) as f:
            source = f.read()
        doc = (ast.get_docstring(ast.parse(source)) or "").strip().splitlines()
        found[entry[:-3]] = (doc[0] if doc else "", 'if __name__ == "__main__"' in source)
    return found


def list_scenarios(out=None):
    out = out or sys.stdout
    for name, (summary, alone) in scenarios().items():
        where = "" if alone else "  [suite: --only %s]" % SUITE_NAMES.get(name, name)
        out.write("%-20s %s%s\n" % (name, summary, where))
    return 0


def run_scenario(name, args):
    """Run bench/scenarios/NAME.py's ``main(args)``, its JSON lines recorded; returns the exit status."""
    tee = results.JsonLinesTee(sys.stdout, name, args)
    saved_stdout, sys.stdout = sys.stdout, tee
    try:
        return importlib.import_module("bench.scenarios." + name).main(list(args)) or 0
    except SystemExit as e:
        return e.code
    finally:
        tee.close()
        sys.stdout = saved_stdout


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--list"]:
        return list_scenarios()
    if not argv or argv[0].startswith("-"):
        return runner.main(argv)
    name, args = argv[0], argv[1:]
    known = scenarios()
    if name not in known:
        sys.stderr.write("python -m bench: no scenario %r (python -m bench --list names them)\n" % name)
        return 2
    if not known[name][1]:
        return runner.main(["--only", SUITE_NAMES.get(name, name)] + args)
    return run_scenario(name, args)
