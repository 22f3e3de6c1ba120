"""``report.html`` as a reader sees it: headless Chromium loads every chart and finds no broken link."""

import os

import pytest

from spark import digest
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
