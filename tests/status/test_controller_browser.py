"""The Controller section in headless Chromium, against a real `twistd namesrv` running the controller.

Two brokers of one group join the controller over TCP; the page shows the master and the in-sync
set; then the master's connection closes (a kill -9) and, without a reload, the page shows the
replica elected in its place with the next epoch, and the old master dead. In a group of three
controllers, a member killed with kill -9 turns red among the peers, as a group without a master is.
"""

import json
import signal

import pytest

from tests.controller.wire import controller_ports, controller_properties, group_credentials
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


@pytest.fixture
def three_members(tmp_path):
    """Three name servers whose embedded controllers form one Raft group; the first serves the status page."""
    ports = controller_ports(3)
    peers = ";".join("n%d-127.0.0.1:%d" % (i, port) for i, port in enumerate(ports))
    credentials = group_credentials(tmp_path)
    members = []
    try:
        for i, port in enumerate(ports):
            workdir = tmp_path / ("n%d" % i)
            workdir.mkdir()
            extra = dict(credentials)
            if i == 0:
                extra["statusListenPort"] = str(free_port())
            member = NamesrvProcess(workdir, dict(controller_properties(workdir, port, peers, "n%d" % i), **extra))
            members.append(member)
            member.start()
        yield members
    finally:
        for member in members:
            member.stop(signal.SIGKILL)


def peer_cells(browser):
    return browser.evaluate("""(function(){
        return Array.from(document.querySelectorAll('#controller-peers .peer')).map(function(p){
            return [p.dataset.peer, p.className, p.innerText];});
    })()""")


def test_a_dead_controller_peer_is_red_on_the_page_and_fits_it(three_members, browser):
    first, _, third = three_members
    browser.open("http://127.0.0.1:%s/" % first.properties["statusListenPort"])
    connected = "(document.querySelectorAll('#controller-peers .peer.connected').length === 2)"
    assert browser.wait_for(connected, timeout=60), peer_cells(browser)
    assert browser.evaluate("document.querySelector('#controller-peers .badge') === null")

    third.process.kill()      # kill -9: its links close, and the page (refreshed every 2 s) says so unreloaded
    third.process.wait()
    dead = "(document.querySelector('#controller-peers .peer[data-peer=\"n2\"]') || {}).className === 'peer dead'"
    assert browser.wait_for(dead, timeout=30), peer_cells(browser)
    assert [cell[:2] for cell in peer_cells(browser)] == [["n0", "peer self"], ["n1", "peer connected"],
                                                         ["n2", "peer dead"]]
    layout = browser.evaluate("""(function(){
        var peer = document.querySelector('#controller-peers .peer.dead'), box = peer.getBoundingClientRect();
        var section = document.getElementById('s-controller'), outer = section.getBoundingClientRect();
        var style = getComputedStyle(peer);
        return {text: peer.innerText, background: style.backgroundColor, color: style.color,
                visible: box.width > 0 && box.height > 0 && style.visibility === 'visible',
                inside: box.left >= outer.left && box.right <= outer.right,
                overflow: section.scrollWidth > section.clientWidth,
                badge: document.querySelector('#controller-peers .badge.dead').innerText,
                badgeBackground: getComputedStyle(document.querySelector('#controller-peers .badge.dead')).backgroundColor};
    })()""")
    assert layout["text"] == "n2=%s (not connected)" % third.properties["controllerDLegerPeers"].split(";n2-")[1]
    # the red of a broker group without a master (tr.no-master td), and a badge that is not the green of "alive"
    assert (layout["background"], layout["color"]) == ("rgb(253, 226, 225)", "rgb(138, 28, 28)"), layout
    assert layout["badge"] == "1 of 2 peers not connected" and layout["badgeBackground"] == "rgb(247, 180, 177)"
    assert layout["visible"] and layout["inside"] and not layout["overflow"], layout
