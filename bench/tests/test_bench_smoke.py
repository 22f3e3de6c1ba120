"""Smoke test of the benchmark suite: every benchmark runs at tiny scale and yields well-formed figures.

Only the shape of the results is checked (names, units, finite and mostly positive values,
the files written), never what the timings say.
"""

import json
import math
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EXPECTED = {
    "inprocess.namesrv.us_per_request", "inprocess.baseline.us_per_request", "inprocess.namesrv.ratio_to_baseline",
    "inprocess.step_us",
    "route.baseline.rps", "route.baseline.p50", "route.baseline.p99", "route.baseline.p999",
    "route.namesrv.rps", "route.namesrv.p50", "route.namesrv.p99", "route.namesrv.p999",
    "route.namesrv.ratio_to_baseline",
    "profile.route.cpu_us_per_request",
    "mixed.route.quiet.rps", "mixed.route.quiet.p99", "mixed.route.heartbeats.rps", "mixed.route.heartbeats.p99",
    "mixed.route.p99_ratio", "mixed.heartbeat.rate", "mixed.heartbeat.rtt_p99_ms",
    "register.parse_ms", "register.handling_ms", "register.handling_ratio_to_parse", "register.event_ms",
    "register.event_ratio_to_parse",
    "memory.rss_before_mib", "memory.rss_after_mib", "memory.rss_peak_mib", "memory.bytes_per_entry",
    "memory.raw_json_bytes_per_entry", "memory.ratio_to_raw", "memory.register_entries_per_s",
    "memory.gc_longest_pause_ms",
    "cores.cached.1proc.rps", "cores.cached.2proc.rps", "cores.cached.2workers_exclusive.rps",
    "cores.uncached.1proc.rps", "cores.uncached.2proc.ratio_to_1proc",
    "cores.uncached.2workers_exclusive.ratio_to_1proc",
    "stall.1proc.longest_read_ms", "stall.2workers_exclusive.longest_read_ms",
    "stall.2workers_exclusive.longest_read_to_parse",
    "cores.cached.default.rps", "stall.default.longest_read_ms",
    "cores.mixed.default.route.p99_ratio", "cores.mixed.2workers_exclusive.heartbeat.rate",
    "mixed.route.heartbeats.p99_to_p50", "cores.mixed.default.route.heartbeats.p99_to_p50",
    "memory.default.rss_after_mib", "memory.default.bytes_per_entry", "memory.default.ratio_to_1proc",
    "fleet.1proc.49style.brokers", "fleet.1proc.49style.route_p99", "fleet.1proc.49style.beat_rtt_p99",
    "fleet.1proc.49style.no_beats.route_p99", "fleet.default.49style.brokers", "fleet.default.5xstyle.brokers",
    "fleet.default.5xstyle.cpu_loadgen", "fleet.default.5xstyle.cpu_brokers", "fleet.1proc.5xstyle.cpu_server",
}
#: Differences of two noisy readings: finite, but at tiny sizes not necessarily positive.
DIFFERENCES = {"register.handling_ms", "register.handling_ratio_to_parse", "memory.bytes_per_entry",
               "memory.ratio_to_raw", "memory.default.bytes_per_entry", "memory.default.entry_ratio_to_1proc"}


#: Readings that are zero when nothing happened: a tiny fleet's registration may trigger no collection at all.
MAY_BE_ZERO = {"memory.gc_longest_pause_ms"}


def _may_be_zero_or_negative(name):
    """Differences, readings of what may not happen at a tiny size, and the fleet's CPU readings (10 ms
    ticks: zero over a tiny window)."""
    return name in DIFFERENCES or name in MAY_BE_ZERO or (
        name.startswith("fleet.") and (".cpu_" in name or name.endswith("per_entry")))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-results")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-m", "bench", "--scale", "tiny", "--out", str(out)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(out / "results.jsonl") as f:
        records = [json.loads(line) for line in f]
    return out, records, done.stdout


def test_every_benchmark_yields_its_figures(tiny_run):
    _, records, _ = tiny_run
    assert EXPECTED <= {r["name"] for r in records}


def test_figures_are_well_formed(tiny_run):
    _, records, _ = tiny_run
    runs = {r["run"] for r in records}
    assert len(runs) == 1
    for r in records:
        assert set(r) >= {"name", "value", "unit", "params", "commit", "timestamp", "run"}, r
        assert isinstance(r["value"], float) and math.isfinite(r["value"]), r
        assert r["unit"] and r["commit"] and r["timestamp"], r
        assert r["params"]["scale"] == "tiny", r
        if not _may_be_zero_or_negative(r["name"]):
            assert r["value"] > 0, r


def test_load_runs_report_no_errors(tiny_run):
    _, records, _ = tiny_run
    loads = [r for r in records if r["name"].endswith(".rps")]
    assert loads
    for r in loads:
        assert r["params"]["errors"] == 0 and r["params"]["unmatched"] == 0, r


def test_registration_sizes_and_modes_are_all_measured(tiny_run):
    _, records, _ = tiny_run
    handled = {(r["params"]["topics"], r["params"]["compressed"], r["params"]["kind"], r["params"]["event_log"])
               for r in records if r["name"] == "register.handling_ms"}
    assert handled == {(n, c, k, e) for n in (200, 2000) for c in (False, True) for k in ("first", "unchanged")
                       for e in (False, True)}
    logged = {r["params"]["event_log"] for r in records if r["name"] == "register.event_ms"}
    assert logged == {True}


def test_table_and_profile_are_written(tiny_run):
    out, records, stdout = tiny_run
    latest = (out / "latest.md").read_text()
    for name in {r["name"] for r in records if not r["name"].startswith("register.")}:
        assert name in latest and name in stdout
    assert "| 2000 | compressed |" in latest  # the registration summary table
    # the profile table names the route path: replayed from the answer cache, or the handler itself
    assert "namesrv/protocol/answercache.py" in latest or "get_route_info_by_topic" in latest
    assert (out / "profile-route.txt").stat().st_size > 0
