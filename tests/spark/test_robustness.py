"""Malformed lines, empty and missing inputs, the output files and the command line."""

import csv
import json
import os
import re

from spark import report
from tests.spark.conftest import DATA


def csv_rows(out, name):
    with open(os.path.join(out, name + ".csv"), newline="") as f:
        return list(csv.reader(f))


def test_samples_malformed_lines_are_counted_never_fatal(samples_report, read_table):
    out, summary = samples_report
    assert summary["lines"]["malformed"] == 6 and summary["lines"]["blank"] == 1
    per_file = {(os.path.basename(r["file"]), r["kind"]): r["lines"] for r in read_table(out, "input_lines")}
    assert per_file[("10.0.1.24_9876-events.log", "malformed")] == 6
    assert per_file[("10.0.1.24_9876-events.log", "json")] == 2
    assert per_file[("namesrv-events.log", "json")] == 45
    assert per_file[("namesrv.log", "continuation")] == 5
    assert ("namesrv.1.log.gz", "java") in per_file
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    assert "6 malformed line(s)" in page and "this is not an event" in page


def test_samples_give_every_report(samples_report, read_table):
    out, summary = samples_report
    servers = {r["server"]: r["sources"] for r in read_table(out, "servers")}
    assert servers == {"10.0.1.21:9876": "json", "10.0.1.22:9876": "java", "10.0.1.23:9876": "java",
                       "10.0.1.24:9876": "json"}
    flaps = [(r["server"], r["brokerAddr"], r["downMs"]) for r in read_table(out, "broker_flaps")]
    assert sorted(flaps) == [("10.0.1.21:9876", "10.0.2.13:10911", 71900),
                             ("10.0.1.22:9876", "10.0.2.13:10911", 109000),
                             ("10.0.1.23:9876", "10.0.2.32:10911", 165000)]
    codes = {r["code"]: r for r in read_table(out, "request_codes")}
    assert codes[105]["requests"] == 14 + 2 + 3 * 19 and codes[105]["errors"] == 2
    assert codes[318]["name"] == "UPDATE_NAMESRV_CONFIG"
    gone = {(r["server"], r["topic"]) for r in read_table(out, "topic_vanished")}
    assert ("10.0.1.21:9876", "PaymentTopic") in gone and ("10.0.1.22:9876", "PaymentTopic") in gone
    assert os.path.isdir(os.path.join(out, "_work", "lines"))     # keep_work=True


def test_empty_and_missing_inputs_give_an_empty_report(spark, tmp_path, read_table):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = str(tmp_path / "out")
    summary = report.run(spark, [str(empty), str(tmp_path / "nothing-here" / "*.log")], out)
    assert summary["missing"] == [str(tmp_path / "nothing-here" / "*.log")]
    assert set(summary["tables"]) == set(report.TABLES) and not any(summary["tables"].values())
    for name in report.TABLES:
        rows = csv_rows(out, name)
        assert len(rows) == 1 and rows[0], name           # the header row only
        assert read_table(out, name) == []
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    assert "Inputs that matched nothing" in page
    assert not os.path.exists(os.path.join(out, "_work"))


def test_html_references_its_pngs(generated_report):
    out, _ = generated_report
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    images = re.findall(r"<img src='([^']+)'", page)
    assert len(images) == 11
    for image in images:
        with open(os.path.join(out, image), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    for name in report.TABLES:
        assert "href='%s.csv'" % name in page


def test_csv_has_a_header_readable_times_and_flat_values(generated_report, read_table):
    out, _ = generated_report
    rows = csv_rows(out, "ns_disagreement")
    header, body = rows[0], rows[1:]
    assert header[:6] == ["cluster", "brokerName", "brokerAddr", "start", "startUtc", "end"]
    assert body and all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$", r[4]) for r in body)
    assert all(";" in r[header.index("knownBy")] or ":" in r[header.index("knownBy")] for r in body)
    flaps = csv_rows(out, "broker_flaps")
    assert len(flaps) - 1 == len(read_table(out, "broker_flaps"))
    stamps = [int(r[flaps[0].index("expiredAt")]) for r in flaps[1:]]
    assert stamps == sorted(stamps)
    assert not [n for n in os.listdir(out) if n.endswith("._tmp")]


def test_command_line_entry_point(spark, tmp_path, capsys):
    """``main`` reuses the active session (and leaves it running) as it would spark-submit's."""
    out = str(tmp_path / "cli")
    code = report.main(["--input", os.path.join(DATA, "eventlog"), "--output", out, "--flap-minutes", "1",
                        "--min-disagreement-ms", "0"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tables"]["broker_flaps"] == 0          # broker-b was away 72 s: longer than 1 minute
    assert summary["lines"] == {"json": 45}
    assert spark.range(1).count() == 1
