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
    base = tmp_path_factory.mktemp("incremental")
    stamps = []
    for server in os.listdir(generated[0]):
        if not server.startswith("_"):
            with open(os.path.join(generated[0], server, "namesrv-events.log"), encoding="utf-8") as f:
                stamps += [json.loads(line)["ts"] for line in f]
    cut = min(stamps) + (max(stamps) - min(stamps)) // 2
    logs, out, day1_report = str(base / "logs"), str(base / "out"), str(base / "day1-only")
    days = _split(generated[0], logs, cut)
    one = report.run(spark, [os.path.join(logs, "day1")], out, incremental=True)
    with open(os.path.join(out, incremental.STAGE, incremental.MANIFEST)) as f:
        one["ids"] = sorted(incremental.file_id(key) for key in json.load(f)["files"])
    one["partitions"] = sorted(n.split("=", 1)[1] for n in os.listdir(os.path.join(out, incremental.STAGE))
                               if n.startswith("fileId="))
    first_tables = {name: sorted_rows(spark, out, name) for name in SAME}
    report.run(spark, [os.path.join(logs, "day1")], day1_report)
    for path in days["day1"]:   # same size, same mtime, unreadable content: must not be read again
        stat = os.stat(path)
        with open(path, "w") as f:
            f.write("#" * stat.st_size)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    two = report.run(spark, [logs], out, incremental=True)
    return {"out": out, "one": one, "two": two, "cut": cut, "day1": day1_report, "logs": logs, "days": days,
            "first_tables": first_tables}


def test_the_first_run_stages_every_file_and_matches_a_full_run(runs, spark):
    assert runs["one"]["files"] == {"read": 3, "kept": 0, "dropped": 0}
    assert len(runs["one"]["ids"]) == 3 and runs["one"]["partitions"] == runs["one"]["ids"]
    for name in SAME:
        assert runs["first_tables"][name] == sorted_rows(spark, runs["day1"], name), name


def test_adding_a_day_reads_only_the_new_files_and_matches_a_full_run(runs, spark, generated_report):
    assert runs["two"]["files"] == {"read": 3, "kept": 3, "dropped": 0}
    assert runs["two"]["lines"].get("malformed", 0) == 0     # the garbage in day 1 was never read
    assert_same_tables(spark, runs["out"], generated_report[0], SAME)
    assert os.path.exists(os.path.join(runs["out"], incremental.STAGE, incremental.MANIFEST))


def test_a_window_then_a_removed_file(runs, spark, read_table):
    """No change: nothing is read and --since/--until keep only the events inside; a deleted file's
    partition leaves the stage."""
    since, until = runs["cut"] - 1800000, runs["cut"] + 1800000
    three = report.run(spark, [runs["logs"]], runs["out"], incremental=True, since=since, until=until)
    assert three["files"] == {"read": 0, "kept": 6, "dropped": 0}
    servers = read_table(runs["out"], "servers")
    assert len(servers) == 3 and all(since <= r["firstTs"] and r["lastTs"] < until for r in servers)
    assert all(since <= r["start"] < until for r in read_table(runs["out"], "broker_sessions"))
    minutes = [r["minute"] for r in read_table(runs["out"], "request_minutely")]
    assert minutes and all(since // 60000 * 60000 <= m < until for m in minutes)

    os.unlink(runs["days"]["day2"][0])
    four = report.run(spark, [runs["logs"]], runs["out"], incremental=True, until=runs["cut"])
    assert four["files"] == {"read": 0, "kept": 5, "dropped": 1}
    assert_same_tables(spark, runs["out"], runs["day1"], SAME)


def test_since_and_until_parse_dates_and_epoch_ms():
    assert report.utc_time("1700000000000") == 1700000000000
    assert report.utc_time("2024-03-01") == 1709251200000
    assert report.utc_time("2024-03-01T12:00Z") == 1709294400000
    with pytest.raises(Exception):
        report.utc_time("yesterday")
