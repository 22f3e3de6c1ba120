"""The status page in a real browser: headless Chromium against a real `twistd namesrv`.

Brokers register over TCP while the page is open; the test reads what a person would see
(rows, heartbeat ages, a topic's route, events), without reloading. The guide's screenshot
(docs/status-and-admin.md) is the crash test's 1280 x 800 one: ``STATUS_PAGE_SCREENSHOT_DIR=/tmp/shots pytest
tests/status/test_browser.py``, then ``cp /tmp/shots/status-1280x800.png docs/status-page.png``.
"""

import json
import os
import re
import shutil

import pytest

from namesrv.protocol.codes import RequestCode, ResponseCode, Version
from namesrv.protocol.command import make_request
from tests.brokers import register_request
from tests.integration.server import NamesrvProcess, free_port
from tests.status.chromium import Browser, find_chromium

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian package `chromium`)")


def row(browser, addr):
    """The broker row of ``addr`` as the browser shows it: {"state": class, "cells": [text, ...]} or None."""
    return browser.evaluate("""(function(){
        var r = document.querySelector('tr[data-addr=%s]');
        return r ? {state: r.className, cells: Array.from(r.cells).map(function(c){return c.innerText;})} : null;
    })()""" % json.dumps(addr))


def text_of(browser, selector):
    return browser.evaluate("(document.querySelector(%s) || {}).innerText || ''" % json.dumps(selector))


@pytest.fixture
def server(tmp_path):
    status_port = free_port()
    proc = NamesrvProcess(tmp_path, {"statusListenPort": str(status_port), "scanNotActiveBrokerInterval": "500",
                                     "orderMessageEnable": "true"})
    proc.status_port = status_port
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def browser():
    chromium = Browser(CHROMIUM, free_port())
    yield chromium
    chromium.close()


def register(client, *args, **kwargs):
    assert client.call(register_request(*args, **kwargs)).code == ResponseCode.SUCCESS


def test_brokers_appear_age_and_expire_live(server, browser, tmp_path):
    brokers = [server.client() for _ in range(4)]
    try:
        topics = ["TopicA", "TopicB", "OrderTopic"]
        register(brokers[0], "DefaultCluster", "broker-a", "127.0.0.1:10911", 0, topics, ha_addr="127.0.0.1:10912")
        register(brokers[1], "DefaultCluster", "broker-a", "127.0.0.1:10921", 1, topics, version=Version.V5_3_3)
        with server.client() as admin:
            admin.call(make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG",
                                                                "key": "TopicA", "value": "broker-a:4"}))

        browser.open("http://127.0.0.1:%d/?t=TopicA" % server.status_port)
        master = row(browser, "127.0.0.1:10911")
        assert master["state"] == "alive"
        assert master["cells"][:8] == ["DefaultCluster", "broker-a", "0", "127.0.0.1:10911", "127.0.0.1:10912",
                                       "V4_9_8", "1 @ 1700000000000", "3"]
        assert re.fullmatch(r"\d+ s ago", master["cells"][8]) and master["cells"][9] == "120 s"
        assert row(browser, "127.0.0.1:10921")["cells"][5] == "V5_3_3"
        route = text_of(browser, "#route")
        assert "Route of TopicA (GET_ROUTEINFO_BY_TOPIC)" in route
        assert "0=127.0.0.1:10911, 1=127.0.0.1:10921" in route and "6 (RW)" in route
        assert "Order config: broker-a:4" in route

        # A broker registering now shows up without a reload (the page refreshes itself).
        register(brokers[2], "OtherCluster", "broker-b", "127.0.0.1:10931", 0, ["TopicA", "TopicC"],
                 extra_ext={"heartbeatTimeoutMillis": "4000"})
        register(brokers[3], "OtherCluster", "broker-c", "127.0.0.1:10941", 0, ["TopicC", "TopicD"])
        assert browser.wait_for("!!document.querySelector('tr[data-addr=\"127.0.0.1:10931\"]')", timeout=15)
        assert row(browser, "127.0.0.1:10931")["cells"][9] == "4 s"
        assert browser.wait_for("/^[1-9][0-9]* s ago$/.test(document.querySelector("
                                "'tr[data-addr=\"127.0.0.1:10911\"] td.age').innerText)", timeout=15)

        # broker-b stops heart-beating: marked expired, then removed by the scan, and the event is listed.
        assert browser.wait_for("(document.querySelector('tr[data-addr=\"127.0.0.1:10931\"]') || {}).className"
                                " === 'removed'", timeout=30)
        assert browser.wait_for("document.querySelector('#events').innerText.indexOf('broker_expired') >= 0",
                                timeout=10)
        assert "brokerAddr=127.0.0.1:10931" in text_of(browser, "#events tr.ev-broker_expired")
        assert row(browser, "127.0.0.1:10941")["state"] == "alive"

        shot = browser.screenshot(str(tmp_path / "status-page.png"))
        with open(shot, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        target = os.environ.get("STATUS_PAGE_SCREENSHOT")
        if target:
            shutil.copyfile(shot, target)
    finally:
        for client in brokers:
            client.close()


#: Layout check: nothing wider than the window, and every column header of every table inside it.
LAYOUT = """(function(){
    var width = document.documentElement.clientWidth, hidden = [];
    document.querySelectorAll('table').forEach(function(t){
        t.querySelectorAll('th').forEach(function(th){
            var box = th.getBoundingClientRect();
            if (box.right > width + 0.5 || box.width < 1) { hidden.push((t.id || 'table') + ':' + th.innerText); }
        });
    });
    return {scrollWidth: document.documentElement.scrollWidth, width: width, hidden: hidden};
})()"""


def test_a_broker_killed_with_sigkill_stays_red_and_no_column_is_hidden(server, browser, tmp_path):
    """Issue 39: a crashed broker (its connection closed) vanished from the table; at 1280 px the long
    configBlackList value pushed the black-list column off the page. A real broker process (tools.demo_broker)
    is killed with -9; the page, at 1280 x 800 and 1920 x 1080, shows its red row and every column."""
    import signal
    import subprocess
    import sys
    from tests.integration.server import REPO
    addr = "127.0.0.1:%d" % server.port
    brokers = [subprocess.Popen([sys.executable, "-m", "tools.demo_broker", "-n", addr, "--name", name, "--addr",
                                 broker_addr, "--cluster", "ProductionClusterWithALongName", "--topics", "40"],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for name, broker_addr in (("broker-crashing", "127.0.0.1:10951"), ("broker-steady", "127.0.0.1:10961"))]
    try:
        browser.open("http://127.0.0.1:%d/" % server.status_port)
        for broker_addr in ("127.0.0.1:10951", "127.0.0.1:10961"):
            assert browser.wait_for("!!document.querySelector('tr[data-addr=\"%s\"]')" % broker_addr, timeout=20)
        brokers[0].send_signal(signal.SIGKILL)
        brokers[0].wait()
        assert browser.wait_for("(document.querySelector('tr[data-addr=\"127.0.0.1:10951\"]') || {}).className"
                                " === 'removed'", timeout=15)
        crashed = row(browser, "127.0.0.1:10951")
        assert re.fullmatch(r"connection closed \d\d:\d\d:\d\d UTC", crashed["cells"][-1])
        color = browser.evaluate("getComputedStyle(document.querySelector('tr[data-addr=\"127.0.0.1:10951\"] td'))"
                                 ".backgroundColor")
        assert color == "rgb(253, 226, 225)"   # the red of expired rows
        assert row(browser, "127.0.0.1:10961")["state"] == "alive"
        events = text_of(browser, "#events")
        assert "reason=channel_closed" in events and "brokerAddr=None" not in events

        for width, height in ((1280, 800), (1920, 1080)):
            browser.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                         mobile=False)
            browser.evaluate("window.scrollTo(0, 0)")
            layout = browser.evaluate(LAYOUT)
            assert layout["width"] == width and layout["scrollWidth"] <= width, layout
            assert layout["hidden"] == [], layout
            assert "config:" not in " ".join(layout["hidden"])
            shot = browser.screenshot(str(tmp_path / ("status-%dx%d.png" % (width, height))))
            with open(shot, "rb") as f:
                header = f.read(24)
            assert header[:8] == b"\x89PNG\r\n\x1a\n"
            assert int.from_bytes(header[16:20], "big") == width and int.from_bytes(header[20:24], "big") == height
            target = os.environ.get("STATUS_PAGE_SCREENSHOT_DIR")
            if target:
                shutil.copyfile(shot, os.path.join(target, os.path.basename(shot)))
    finally:
        for process in brokers:
            if process.poll() is None:
                process.kill()
            process.wait()
