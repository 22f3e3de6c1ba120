"""``report.html`` as a reader sees it: headless Chromium loads every chart and finds no broken link."""

import os

import pytest

from spark import digest
from spark.htmlreport import duration
from tests.spark import browser

CHROMIUM = browser.find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (Debian: apt-get install chromium)")


@pytest.fixture(scope="module")
def rendered(generated_report):
    page = os.path.join(generated_report[0], "report.html")
    return page, browser.inspect(page, CHROMIUM)


def test_every_chart_loads_with_its_title_as_alt_text(rendered):
    _, result = rendered
    assert result.get("error") is None and result["title"] == "NameServer event report"
    images = {img["src"]: img for img in result["images"]}
    assert sorted(images) == sorted("charts/%s.png" % name for name in digest.CHARTS)
    for src, img in images.items():
        assert img["complete"] and img["width"] >= 400 and img["height"] >= 200, img
        assert img["alt"] and img["alt"] != src.split("/")[-1][:-4], img


def test_the_page_fits_a_1280_px_window(rendered):
    """No table reaches past the right edge of a 1280-px-wide window (one did: long addresses and topic names
    in a row), and the page scrolls only down."""
    _, result = rendered
    layout = result["layout"]
    assert 1200 <= layout["viewport"] <= 1280, layout
    assert layout["wide"] == [] and layout["scroll_width"] <= layout["viewport"], layout


def test_no_broken_links(rendered):
    page, result = rendered
    hrefs = [link["href"] for link in result["links"]]
    assert any(h.startswith("#") for h in hrefs) and any(h.endswith(".csv") for h in hrefs)
    assert browser.broken_links(page, result) == []


def test_a_missing_chart_and_a_dangling_link_are_caught(generated_report, tmp_path):
    """The checks above can fail: a copy of the page with one PNG removed and one bad anchor."""
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(generated_report[0], copy, ignore=shutil.ignore_patterns("*.parquet"))
    os.unlink(copy / "charts" / "requests.png")
    page = copy / "report.html"
    page.write_text(page.read_text(encoding="utf-8").replace("href='#topics'", "href='#nowhere'"), encoding="utf-8")
    result = browser.inspect(str(page), CHROMIUM)
    bad = [img["src"] for img in result["images"] if not img["width"]]
    assert bad == ["charts/requests.png"]
    assert ("#nowhere", "no element with this id") in browser.broken_links(str(page), result)


def test_the_page_opens_with_what_happened_worst_first(generated, generated_report, read_table):
    """The generated fleet's known incidents (``_truth.json``) are all in the block, each kind linked."""
    out, summary = generated_report
    page = os.path.join(out, "report.html")
    result = browser.inspect(page, CHROMIUM)
    assert result["first_heading"] == "What happened"
    block = result["headline"]
    assert block["healthy"] == "false" and summary["healthy"] is False
    items = {item["incident"]: item for item in block["items"]}
    assert sorted(items) == ["brokers", "disagreement", "errors", "gaps"]
    truth = generated[1]
    expired = {e["brokerAddr"] for e in truth["expirations"]}
    assert items["brokers"]["count"] == len(expired)
    listed = [entry.split(" ", 1)[0] for entry in items["brokers"]["entries"]]
    assert set(listed) == expired            # flaps, a partition and an outage: every broker shown
    worst = [(sum(f["brokerAddr"] == b for f in truth["flaps"]), sum(e["brokerAddr"] == b for e in truth["expirations"]))
             for b in listed]
    assert worst == sorted(worst, reverse=True) and worst[0][0] >= 3   # most flaps, then expirations, first
    assert listed[-1] == _only(truth, "outage")                        # expirations only: last
    assert _only(truth, "partition") in items["disagreement"]["entries"][0]   # the longest disagreement
    minutes = {r["minute"] for r in read_table(out, "ns_disagreement_minutes")}
    assert items["disagreement"]["count"] == len(minutes) > 0
    late = [r for r in read_table(out, "broker_liveness") if r["gapMaxMs"] > 35000]
    assert items["gaps"]["count"] == len(late) and len(items["gaps"]["entries"]) == 6   # 5 and "... and N more"
    assert items["gaps"]["entries"][0].startswith(_only(truth, "outage"))   # silent 20-40 min: the longest
    assert items["errors"]["count"] == 0 and items["errors"]["entries"] == []
    sections = {"brokers": "#liveness", "gaps": "#heartbeat", "disagreement": "#disagreement", "errors": "#requests"}
    for key, item in items.items():
        assert item["links"][0] == sections[key] and all(h.endswith(".csv") for h in item["links"][1:]), item
    assert browser.broken_links(page, result) == []


def test_a_quiet_period_says_so_in_one_line(quiet_report):
    out, summary, truth = quiet_report
    assert truth["expirations"] == [] and truth["injected"] == []
    result = browser.inspect(os.path.join(out, "report.html"), CHROMIUM)
    block = result["headline"]
    assert result["first_heading"] == "What happened" and summary["healthy"] is True
    assert block["healthy"] == "true" and block["items"] == [] and block["paragraphs"] == 1
    assert block["text"].splitlines()[-1].startswith("Healthy over ")


def _only(truth, kind):
    (incident,) = [i for i in truth["injected"] if i["kind"] == kind]
    return incident["brokerAddr"]


def test_failovers_are_in_what_happened_worst_first_and_have_their_section(failover_report):
    out, summary, truth = failover_report
    page = os.path.join(out, "report.html")
    result = browser.inspect(page, CHROMIUM)
    block = result["headline"]
    assert block["healthy"] == "false" and "5 broker group(s) that lost their master" in block["text"]
    items = {item["incident"]: item for item in block["items"]}
    assert items["failovers"]["count"] == 5 and items["failovers"]["links"][0] == "#failovers"
    (gone,) = [f for f in truth["controller"] if not f["recovered"]]
    entries = items["failovers"]["entries"]
    assert entries[0].startswith("%s of %s: master %s (%s) lost at " % (
        gone["brokerName"], gone["cluster"], gone["oldMasterId"], gone["oldMasterAddress"]))
    assert "no master since" in entries[0] and "3 failed election(s)" in entries[0]
    longest = max((f for f in truth["controller"] if f["recovered"]), key=lambda f: f["masterlessMs"])
    assert "broker %s (%s) elected after" % (longest["newMasterId"], longest["newMasterAddress"]) in entries[1]
    assert "routed after %s (via controller)" % duration(longest["routedMs"]) in entries[1]
    assert "failovers" in result["ids"] and browser.broken_links(page, result) == []
