"""Malformed lines, empty and missing inputs, the output files and the command line."""

import contextlib
import csv
import io
import json
import os
import re

import pytest

from spark import report
from tests.spark.conftest import SAMPLE_SERVERS


def csv_rows(out, name):
    with open(os.path.join(out, name + ".csv"), newline="") as f:
        return list(csv.reader(f))


def test_samples_malformed_lines_are_counted_never_fatal(formats_report, read_table):
    out, summary = formats_report
    assert summary["lines"]["malformed"] == 6 and summary["lines"]["blank"] == 1
    per_file = {(os.path.basename(r["file"]), r["kind"]): r["lines"] for r in read_table(out, "input_lines")
                if r["server"] in SAMPLE_SERVERS}
    assert per_file[("10.0.1.24_9876-events.log", "malformed")] == 6
    assert per_file[("10.0.1.24_9876-events.log", "json")] == 2
    assert per_file[("namesrv-events.log", "json")] == 45
    assert per_file[("namesrv.log", "continuation")] == 5
    assert ("namesrv.1.log.gz", "java") in per_file
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    assert "6 malformed line(s)" in page and "this is not an event" in page


def test_samples_give_every_report(formats_report, read_table):
    out, summary = formats_report

    def rows(name):
        return [r for r in read_table(out, name) if r.get("server", "10.0.1.21:9876") in SAMPLE_SERVERS]

    servers = {r["server"]: r["sources"] for r in rows("servers")}
    assert servers == SAMPLE_SERVERS
    flaps = [(r["server"], r["brokerAddr"], r["downMs"]) for r in rows("broker_flaps")]
    assert sorted(flaps) == [("10.0.1.21:9876", "10.0.4.13:10911", 71900),
                             ("10.0.1.22:9876", "10.0.4.13:10911", 109000),
                             ("10.0.1.23:9876", "10.0.4.32:10911", 165000)]
    routes = [r for r in rows("request_minutely") if r["server"] == "10.0.1.21:9876" and r["code"] == 105]
    assert sum(r["requests"] for r in routes) == 14 + 2 + 3 * 19 and sum(r["errors"] for r in routes) == 2
    codes = {r["code"]: r for r in read_table(out, "request_codes")}
    assert codes[318]["name"] == "UPDATE_NAMESRV_CONFIG" and codes[318]["requests"] == 1
    gone = {(r["server"], r["topic"]) for r in rows("topic_vanished")}
    assert ("10.0.1.21:9876", "PaymentTopic") in gone and ("10.0.1.22:9876", "PaymentTopic") in gone
    assert os.path.isdir(os.path.join(out, "_work", "lines"))     # keep_work=True


@pytest.fixture(scope="module")
def empty_report(spark, tmp_path_factory):
    """``main`` on an empty directory and a glob matching nothing: the command line, in-process.

    It reuses the active session (and leaves it running), as it would spark-submit's.
    """
    base = tmp_path_factory.mktemp("empty")
    (base / "empty").mkdir()
    missing = str(base / "nothing-here" / "*.log")
    out = str(base / "out")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = report.main(["--input", str(base / "empty"), "--input", missing, "--output", out,
                            "--flap-minutes", "1", "--min-disagreement-ms", "0", "--json"])
    assert code == 0
    return out, missing, json.loads(printed.getvalue())


def test_empty_and_missing_inputs_give_an_empty_report(empty_report, read_table, spark):
    out, missing, _ = empty_report
    for name in report.TABLES:
        rows = csv_rows(out, name)
        assert len(rows) == 1 and rows[0], name           # the header row only
        assert read_table(out, name) == []
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    assert "Inputs that matched nothing" in page and missing in page
    assert not os.path.exists(os.path.join(out, "_work"))
    assert spark.range(1).count() == 1                    # the shared session still runs


def test_the_command_line_prints_a_summary(empty_report):
    out, missing, summary = empty_report
    assert summary["output"] == out and summary["missing"] == [missing] and summary["lines"] == {}
    assert set(summary["tables"]) == set(report.TABLES) and not any(summary["tables"].values())


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
