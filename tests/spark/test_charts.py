"""Charts show gaps as gaps: no line is drawn across buckets without any log data."""

import math

import matplotlib.pyplot as plt
import pytest

from spark import charts

MIN = 60000


def test_a_covered_bucket_without_events_is_zero_and_an_uncovered_one_is_a_gap():
    covered = {0, MIN, 2 * MIN, 10 * MIN, 11 * MIN}
    xs, ys = charts.gridded([(0, 5), (11 * MIN, 7)], covered, MIN)
    assert xs == [i * MIN for i in range(12)]
    assert ys[:3] == [5, 0, 0] and ys[10:] == [0, 7]
    assert all(math.isnan(y) for y in ys[3:10])
    _, latency = charts.gridded([(0, 1.5)], covered, MIN, zero=False)
    assert latency[0] == 1.5 and math.isnan(latency[1])
    assert charts.gaps(covered, MIN) == [(3 * MIN, 10 * MIN)]
    assert charts.gridded([], set(), MIN) == ([], [])


def test_sparse_events_over_three_days_draw_separate_segments_and_a_no_data_band(tmp_path, monkeypatch):
    day = 24 * 60 * MIN
    covered = {0, MIN, day, day + MIN, 3 * day}
    drawn = {}
    real_save = charts._save

    def keep(fig, path):
        ax = fig.axes[0]
        drawn["lines"] = [line.get_ydata() for line in ax.get_lines()]
        drawn["bands"] = len(ax.patches)
        drawn["legend"] = [t.get_text() for t in ax.get_legend().get_texts()]
        drawn["units"] = (ax.get_ylabel(), ax.get_xlabel())
        return real_save(fig, path)

    monkeypatch.setattr(charts, "_save", keep)
    path = str(tmp_path / "s.png")
    charts.series(path, "Expirations (events per 1 min)", {"expirations": [(MIN, 3), (day, 1), (3 * day, 2)]},
                  "events per 1 min", covered, MIN)
    (ys,) = drawn["lines"]
    segments = [run for run in "".join("n" if math.isnan(y) else "v" for y in ys).split("n") if run]
    assert len(segments) == 3                       # three islands of data, never joined
    assert drawn["bands"] == 2 and "no log data" in drawn["legend"]
    assert drawn["units"] == ("events per 1 min", "time (UTC)")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    plt.close("all")


@pytest.mark.parametrize("rows", [[], [("b1 @ s1", 0, 5 * MIN, "broker_expired")]])
def test_the_broker_timeline_always_writes_a_png(tmp_path, rows):
    path = str(tmp_path / "t.png")
    charts.sessions(path, "timeline", rows, ["b1 @ s1"], [("b1 @ s1", 5 * MIN, 7 * MIN)], {0, 7 * MIN}, MIN)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_log_axes_use_plain_numbers():
    assert [charts._plain(v) for v in (1, 10, 1000000, 0.5, 0)] == ["1", "10", "1,000,000", "0.5", "0"]
