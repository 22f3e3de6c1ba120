"""The Controller section in headless Chromium, against a real `twistd namesrv` running the controller.

Two brokers of one group join the controller over TCP; the page shows the master and the in-sync
set; then the master's connection closes (a kill -9) and, without a reload, the page shows the
replica elected in its place with the next epoch, and the old master dead.
"""

import json

import pytest

from tests.controllerbrokers import ControllerBroker, embedded_controller
from tests.integration.server import NamesrvProcess, free_port
from tests.status.chromium import browser, pytestmark  # noqa: F401 (the Chromium fixture, skip without it)


def group_cells(browser, name):
    """The row of broker group ``name`` as shown: {"state": class, "cells": [text, ...]} or None."""
    return browser.evaluate("""(function(){
        var r = document.querySelector('#controller-groups tr[data-group=%s]');
        return r ? {state: r.className, cells: Array.from(r.cells).map(function(c){return c.innerText;})} : null;
    })()""" % json.dumps(name))


@pytest.fixture
def server(tmp_path):
    status_port, controller_port = free_port(), free_port()
    proc = NamesrvProcess(tmp_path, embedded_controller(tmp_path, controller_port,
                                                        statusListenPort=str(status_port)))
    proc.status_port, proc.controller_port = status_port, controller_port
    proc.start()
    yield proc
    proc.stop()


def test_the_page_follows_a_failover(server, browser):
    first = ControllerBroker(server.controller_port, "DefaultCluster", "broker-a", "127.0.0.1:%d" % free_port())
    second = ControllerBroker(server.controller_port, "DefaultCluster", "broker-a", "127.0.0.1:%d" % free_port())
    try:
        first.start()
        second.start()
        first.sync({1, 2}, 1)
        browser.open("http://127.0.0.1:%d/" % server.status_port)
        role = browser.evaluate("document.querySelector('#controller-role').innerText")
        assert role.startswith("Group group1 · this controller n0 is leader · leader n0 (127.0.0.1:%d)"
                               % server.controller_port)
        row = group_cells(browser, "broker-a")
        assert row["state"] == "has-master"
        assert row["cells"][:6] == ["DefaultCluster", "broker-a", "1 (%s)" % first.address, "1", "{1, 2}", "2"]

        first.close()     # the master's connection to the controller closes: the in-sync replica takes over
        assert browser.wait_for("(document.querySelector('#controller-groups tr[data-group=\"broker-a\"] td:nth-child(4)')"
                                " || {}).innerText === '2'", timeout=20)
        row = group_cells(browser, "broker-a")
        assert row["state"] == "has-master" and row["cells"][2:5] == ["2 (%s)" % second.address, "2", "{2}"]
        members = row["cells"][6].splitlines()
        assert members == ["1 %s: replica, not in sync, dead" % first.address,
                           "2 %s: master, in sync, alive, epoch 1, offset 100" % second.address]
    finally:
        first.close()
        second.close()
