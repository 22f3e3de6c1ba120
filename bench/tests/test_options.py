"""Every scenario declares its options one way (``bench.lib.options``), keeps the options that results and
docs name, with their defaults, and answers ``--help``."""

import importlib
import os
import re

import pytest

from bench.lib import cli, options, runner

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Each scenario's options and defaults when they were declared in 14 argparse blocks (83901f6), and those
#: of scenarios added since; the suite's are ``None``'s. A scenario may add options, never lose one or change its default.
BEFORE = {
    None: {"--connections": None, "--depth": None, "--out": runner.DEFAULT_OUT,
           "--only": "inprocess,route,profile,mixed,register,memory,cores,fleet", "--processes": None,
           "--quick": False, "--scale": None},
    "bigfleet": {"--brokers": 1000, "--brokers-per-topic": 10, "--cycle": 30.0, "--depth": 32, "--java": None,
                 "--java-heap": "4g", "--json": False, "--keep-logs": None, "--load-processes": 1, "--property": [],
                 "--rate": 0.0, "--read-connections": 3, "--scenario": "steady", "--seconds": 20.0,
                 "--server": "default", "--target": None, "--topic-prefix": "Fleet", "--topics": 100000,
                 "--warmup": 2.0},
    "cold_registration": {"--brokers": 1000, "--brokers-per-topic": 4, "--check": False, "--event-log": False,
                          "--profile": None, "--profile-worker": None, "--topics": 1000000},
    "controller_failover": {"--json": False, "--peer": os.environ.get("JAVAPEER5"), "--runs": 3,
                            "--scenario": "both"},
    "controller_groups": {"--embedded": False, "--groups": 1000, "--victims": 20, "--window": 20.0},
    "crashes": {"--readers": 4, "--rounds": 3, "--workers": [1, 2]},
    "heartbeat_stall": {"--brokers": 100, "--rounds": 4, "--topics": 1000},
    "metrics_scrape": {"--brokers": [100, 1000, 5000], "--repeat": 500},
    "registration": {"--no-event-log": False, "--profile": False, "--repeats": 5, "--sizes": "10000,50000"},
    "restart": {"--readers": 2, "--seconds": 2.0, "--workers": [1, 0]},
    "spark_bench": {"--conf": [], "--data": os.path.join(os.environ.get("TMPDIR", "/tmp"), "namesrv-spark-bench"),
                    "--driver-memory": "3g", "--json": None, "--label": None, "--master": "local[2]",
                    "--shape": "small", "--sizes": None, "--submit": False},
    "spark_compare": {"old_out": None, "new_out": None},
    "spark_floor": {"--extrapolate": None, "--input": None, "--jit": "report", "--master": "local[2]",
                    "--repeat": 2},
    "status_page": {"--brokers": 1000, "--repeats": 15, "--topics-per-broker": 100},
    "storm": {"--baseline": 2.0, "--big-topics": 0, "--brokers": 200, "--minimal": False, "--rounds": 3,
              "--scans": 0, "--scheduler": "on", "--serve": None, "--set": [], "--target": None, "--topics": 1000},
    "tls_reads": {"--connections": 8, "--depth": 8, "--duration": 3.0, "--no-cache": False, "--only": "",
                  "--processes": 2, "--topics": 100, "--warmup": 1.0},
    "worker_reads": {"connections": 255, "depth": 32, "rounds": 4},
    # added since, each with the options it was measured with
    "acl_reads": {"--json": False, "--reads": 300000, "--rounds": 3, "--topics": 100000},
    "controller_bounds": {"--applies": 200, "--apply-kib": 100, "--heartbeat-kib": 900, "--heartbeats": 600,
                          "--pythonpath": None},
    "controller_java_bugs": {"--peer": os.environ.get("JAVAPEER5"), "--runs": 1, "--side": "both"},
    "controller_store": {"--days": 30, "--failovers-per-day": 4, "--groups": 1000, "--keep": False},
}
#: Options spelled like a shared one but meaning something else, kept as results and docs name them.
OLDER_SPELLINGS = {("spark_bench", "--json")}
SHARED = {option.flag: option.help for option in vars(options).values() if isinstance(option, options.Option)}


def scenario_parser(name):
    module = runner if name is None else importlib.import_module("bench.scenarios." + name)
    return options.parser(name, module.__doc__, module.OPTIONS)


def declared(name):
    """{flag or positional name: (default, help)} of a scenario's parser."""
    return {(action.option_strings or [action.dest])[0]: (action.default, action.help)
            for action in scenario_parser(name)._actions if action.dest != "help"}


def test_every_scenario_that_runs_alone_declares_options():
    alone = {name for name, (_, runs_alone) in cli.scenarios().items() if runs_alone}
    assert alone == set(BEFORE) - {None}


@pytest.mark.parametrize("name", sorted(BEFORE, key=str))
def test_a_scenario_keeps_its_options_and_their_defaults(name):
    found = declared(name)
    assert {flag: found.get(flag, ("missing",))[0] for flag in BEFORE[name]} == BEFORE[name]


@pytest.mark.parametrize("name", sorted(BEFORE, key=str))
def test_a_shared_option_has_the_one_help_everywhere(name):
    for flag, (_, help) in declared(name).items():
        if flag in SHARED and (name, flag) not in OLDER_SPELLINGS:
            assert help.startswith(SHARED[flag]), (name, flag, help)


def test_no_other_module_of_bench_builds_a_parser():
    builders, tests = [], os.path.join(BENCH, "tests")
    for root, _, files in os.walk(BENCH):
        for file in files:
            path = os.path.join(root, file)
            if file.endswith(".py") and path != options.__file__ and not path.startswith(tests):
                with open(path) as f:
                    if re.search(r"^\s*(import argparse|from argparse)|ArgumentParser\(", f.read(), re.M):
                        builders.append(os.path.relpath(path, BENCH))
    assert builders == []


@pytest.mark.parametrize("name", sorted(cli.scenarios()))
def test_help_answers_for_every_scenario(name, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("BENCH_RESULTS", str(tmp_path / "results.jsonl"))
    try:
        code = cli.main([name, "--help"])
    except SystemExit as e:     # a part of the suite: the suite's parser exits
        code = e.code
    out = capsys.readouterr().out
    assert code in (0, None) and out.startswith("usage: python -m bench"), out
    assert not (tmp_path / "results.jsonl").exists()
