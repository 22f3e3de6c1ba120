"""``python -m bench``: every scenario file is listed and runnable by name; what a scenario prints as JSON
lands in the one results file with a ``bench`` field."""

import json
import os
import subprocess
import sys

from bench.lib import cli, results

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_scenario_file_is_listed():
    files = {name[:-3] for name in os.listdir(cli.SCENARIOS) if name.endswith(".py") and name != "__init__.py"}
    listed = subprocess.run([sys.executable, "-m", "bench", "--list"], cwd=REPO, capture_output=True, text=True,
                            timeout=60, check=True).stdout
    assert {line.split()[0] for line in listed.splitlines()} == files
    assert set(cli.SUITE_NAMES) <= files


def test_an_unknown_scenario_is_refused():
    done = subprocess.run([sys.executable, "-m", "bench", "no_such_bench"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "--list" in done.stderr


def test_printed_json_objects_are_recorded_with_the_bench_name(tmp_path, capsys):
    path = tmp_path / "results.jsonl"
    tee = results.JsonLinesTee(sys.stdout, "demo", ["--x", "1"], path=str(path))
    tee.write("a table line\n{\"reads\": 5}\n[1, 2]\n{\"p99_ms\"")
    tee.write(": 1.5}")
    tee.close()
    assert capsys.readouterr().out == "a table line\n{\"reads\": 5}\n[1, 2]\n{\"p99_ms\": 1.5}"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["result"] for r in records] == [{"reads": 5}, {"p99_ms": 1.5}]
    assert {r["bench"] for r in records} == {"demo"} and records[0]["args"] == "--x 1"


def test_the_one_results_file_has_a_bench_field_on_every_line():
    with open(results.RESULTS_FILE) as f:
        assert all("bench" in json.loads(line) for line in f if line.strip())
