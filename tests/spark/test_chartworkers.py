"""The charts are drawn by worker processes, and by the driver whenever a worker cannot."""

import io
import os
import pickle
import signal
import time

import pytest

pytest.importorskip("matplotlib")

from spark import chartworkers, digest  # noqa: E402

MIN = 60000


def calls_into(directory):
    """The report's own chart calls over a small, hand-made digest (every chart kind appears)."""
    d = {"bucket": MIN, "covered": {0, MIN, 2 * MIN}, "kinds": [("json", 90), ("java", 10)],
         "liveness_series": {"expirations": [(0, 1)]}, "sessions": [], "lanes": [], "lane_flaps": [],
         "interval_hist": [(30, 12)], "drift_top": (["brokerAddr", "server", "lateIntervals"], [("b:1", "s1", 2)]),
         "request_series": {"105": [(0, 4), (MIN, 6)]}, "latency_series": {"105": [(0, 1.5)]},
         "codes": (["name", "code", "errors", "errorRate"], [("GET_ROUTEINFO_BY_TOPIC", 105, 1, 0.25)]),
         "churn_top": (["topic", "changes"], [("T1", 3)]),
         "vanished_top": (["topic", "server", "vanishedMs"], [("T1", "s1", 120000)]),
         "disagreement_series": {"brokers": [(0, 1)]}}
    return digest.chart_calls(d, str(directory))


def pngs(directory):
    return sorted(name for name in os.listdir(directory) if name.endswith(".png"))


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_shares_are_balanced_by_cost_and_lose_nothing():
    calls = [("series", (i,), {}) for i in range(4)] + [("bars", (i,), {}) for i in range(6)]
    parts = chartworkers.shares(calls, 2)
    assert sorted(c for part in parts for c in part) == sorted(calls)
    costs = [sum(chartworkers.COST[c[0]] for c in part) for part in parts]
    assert abs(costs[0] - costs[1]) <= max(chartworkers.COST.values())


def test_two_workers_draw_every_chart_and_leave_no_process(tmp_path):
    calls = calls_into(tmp_path)
    with chartworkers.ChartWorkers(2) as workers:
        assert workers.count == 2
        procs = list(workers._procs)
        assert workers.draw(calls) == len(calls)
    assert pngs(tmp_path) == sorted(name + ".png" for name in digest.CHARTS)
    assert all(is_png(os.path.join(tmp_path, name)) for name in pngs(tmp_path))
    assert all(proc.returncode == 0 for proc in procs)


def test_a_dead_worker_s_charts_are_drawn_by_the_driver(tmp_path):
    calls = calls_into(tmp_path)
    with chartworkers.ChartWorkers(2) as workers:
        victim = workers._procs[0]
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        drawn = workers.draw(calls)
    assert 0 < drawn < len(calls)   # the living worker drew its share, the driver the rest
    assert pngs(tmp_path) == sorted(name + ".png" for name in digest.CHARTS)


def test_without_workers_the_driver_draws(tmp_path):
    workers = chartworkers.ChartWorkers(0)
    assert workers.count == 0
    assert workers.draw(calls_into(tmp_path)) == 0
    assert len(pngs(tmp_path)) == len(digest.CHARTS)
    workers.close()


def test_a_worker_draws_at_a_lower_priority_than_the_report():
    """It imports matplotlib while the JVM starts: only with the CPU the JVM leaves."""
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    with chartworkers.ChartWorkers(1) as workers:
        pid = workers._procs[0].pid
        for _ in range(200):   # the child lowers its own priority as it starts: up to 10 s
            if os.getpriority(os.PRIO_PROCESS, pid) != ours:
                break
            time.sleep(0.05)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, ours + chartworkers.NICENESS)


def test_a_worker_closed_before_any_chart_exits_quietly():
    with chartworkers.ChartWorkers(1) as workers:
        proc = workers._procs[0]
    assert proc.returncode == 0


def test_a_worker_answers_how_many_it_drew_and_nothing_else(tmp_path):
    calls = calls_into(tmp_path)[:2]
    answer = io.BytesIO()
    chartworkers.serve(io.BytesIO(pickle.dumps(calls)), answer)
    assert pickle.loads(answer.getvalue()) == 2
    assert len(pngs(tmp_path)) == 2


def test_a_failing_chart_fails_the_report_with_its_own_error(tmp_path):
    bad = [("bars", (str(tmp_path / "x.png"), "t", ["a"]), {"no_such_option": 1})]
    with chartworkers.ChartWorkers(1) as workers:
        with pytest.raises(TypeError):
            workers.draw(bad)
