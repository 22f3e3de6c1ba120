"""``--incremental`` re-reads only new or changed files; ``--since``/``--until`` keep a window of events.

The generated fleet's logs are cut in two "days" per server: a first run stages day 1; day 2 is added as
new files and day 1's files are overwritten with garbage of the same size and modification time. The
second run must not open day 1 again, and must give the same tables as a full run over both days.
"""

import json
import os

import pytest

from spark import incremental, report
from tests.spark.conftest import assert_same_tables, sorted_rows

#: Every table but ``input_lines`` (its ``file`` column names the split files, not the originals).
SAME = [name for name in report.TABLES if name != "input_lines"]


def _split(source, target, cut):
    """Per server directory: ``day1.log`` with the lines before ``cut``, ``day2.log`` with the rest."""
    days = {"day1": [], "day2": []}
    for server in sorted(os.listdir(source)):
        if server.startswith("_"):
            continue
        with open(os.path.join(source, server, "namesrv-events.log"), encoding="utf-8") as f:
            lines = f.readlines()
        for name in days:
            os.makedirs(os.path.join(target, name, server), exist_ok=True)
            path = os.path.join(target, name, server, "namesrv-events-%s.log" % name)
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(line for line in lines if (json.loads(line)["ts"] < cut) == (name == "day1"))
            days[name].append(path)
    return days


@pytest.fixture(scope="module")
def runs(spark, generated, tmp_path_factory):
    """Three incremental runs into one report directory, and the full report they are compared with.

    ``reference``: a plain report over day 1 since ``since`` (an hour before the cut).
    1. day 1 since ``since``: every file staged;
    2. both days (day 1 overwritten with garbage of the same size and time): only day 2 read;
    3. one day-2 file deleted, since ``since`` until the cut: nothing read, one partition dropped.
    """
    base = tmp_path_factory.mktemp("incremental")
    stamps = []
    for server in os.listdir(generated[0]):
        if not server.startswith("_"):
            with open(os.path.join(generated[0], server, "namesrv-events.log"), encoding="utf-8") as f:
                stamps += [json.loads(line)["ts"] for line in f]
    cut = min(stamps) + (max(stamps) - min(stamps)) // 2
    since = cut - 3600000
    logs, out, reference = str(base / "logs"), str(base / "out"), str(base / "reference")
    days = _split(generated[0], logs, cut)
    report.run(spark, [os.path.join(logs, "day1")], reference, since=since)
    one = report.run(spark, [os.path.join(logs, "day1")], out, incremental=True, since=since)
    with open(os.path.join(out, incremental.STAGE, incremental.MANIFEST)) as f:
        one["ids"] = sorted(incremental.file_id(key) for key in json.load(f)["files"])
    one["partitions"] = sorted(n.split("=", 1)[1] for n in os.listdir(os.path.join(out, incremental.STAGE))
                               if n.startswith("fileId="))
    one["tables"] = {name: sorted_rows(spark, out, name) for name in SAME}
    for path in days["day1"]:   # same size, same mtime, unreadable content: must not be read again
        stat = os.stat(path)
        with open(path, "w") as f:
            f.write("#" * stat.st_size)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    two = report.run(spark, [logs], out, incremental=True)
    two["tables"] = {name: sorted_rows(spark, out, name) for name in SAME}
    os.unlink(days["day2"][0])
    three = report.run(spark, [logs], out, incremental=True, since=since, until=cut)
    return {"out": out, "one": one, "two": two, "three": three, "since": since, "cut": cut,
            "reference": reference}


def test_the_first_run_stages_every_file_and_matches_a_full_run(runs, spark):
    assert runs["one"]["files"] == {"read": 3, "kept": 0, "dropped": 0}
    assert len(runs["one"]["ids"]) == 3 and runs["one"]["partitions"] == runs["one"]["ids"]
    for name in SAME:
        assert runs["one"]["tables"][name] == sorted_rows(spark, runs["reference"], name), name


def test_adding_a_day_reads_only_the_new_files_and_matches_a_full_run(runs, spark, generated_report):
    assert runs["two"]["files"] == {"read": 3, "kept": 3, "dropped": 0}
    assert runs["two"]["lines"].get("malformed", 0) == 0     # the garbage in day 1 was never read
    for name in SAME:
        assert runs["two"]["tables"][name] == sorted_rows(spark, generated_report[0], name), name


def test_a_window_and_a_removed_file(runs, spark, read_table):
    """Nothing is read, the deleted file's partition leaves the stage, only events in the window count."""
    assert runs["three"]["files"] == {"read": 0, "kept": 5, "dropped": 1}
    assert_same_tables(spark, runs["out"], runs["reference"], SAME)
    servers = read_table(runs["out"], "servers")
    assert len(servers) == 3 and all(runs["since"] <= r["firstTs"] and r["lastTs"] < runs["cut"] for r in servers)
    minutes = [r["minute"] for r in read_table(runs["out"], "request_minutely")]
    assert minutes and all(runs["since"] // 60000 * 60000 <= m < runs["cut"] for m in minutes)
    page = open(os.path.join(runs["out"], "report.html"), encoding="utf-8").read()
    assert "Window: only events from" in page


def test_since_and_until_parse_dates_and_epoch_ms():
    assert report.utc_time("1700000000000") == 1700000000000
    assert report.utc_time("2024-03-01") == 1709251200000
    assert report.utc_time("2024-03-01T12:00Z") == 1709294400000
    with pytest.raises(Exception):
        report.utc_time("yesterday")
