"""Headless Chromium driven over the DevTools protocol, with a websocket client small enough to read.

Only what the status-page test needs: open a page, evaluate JavaScript, take a screenshot.
Debian's ``chromium`` package provides the browser; tests skip when it is absent.
"""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

import pytest

from tests.integration.server import free_port
from tools import processes


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1400,1050"]


def find_chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    """RFC 6455 client side: masked text frames out, whole (unfragmented) frames in."""

    def __init__(self, url, timeout=10.0):
        rest = url[len("ws://"):]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError("websocket handshake refused: %r" % head[:200])

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        if len(data) < 126:
            header = struct.pack(">BB", 0x81, 0x80 | len(data))
        elif len(data) < 65536:
            header = struct.pack(">BBH", 0x81, 0x80 | 126, len(data))
        else:
            header = struct.pack(">BBQ", 0x81, 0x80 | 127, len(data))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def receive(self):
        first, second = self._read(2)
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack(">H", self._read(2))
        elif length == 127:
            (length,) = struct.unpack(">Q", self._read(8))
        payload = self._read(length)
        if first & 0x0F == 0x8:
            raise ConnectionError("websocket closed by the browser")
        return payload.decode("utf-8", "replace")

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("websocket closed")
            data += chunk
        return data

    def close(self):
        self.sock.close()


class Browser:
    """One headless Chromium with a fresh profile; ``call`` sends a DevTools command to its page."""

    def __init__(self, executable, port):
        self.profile = tempfile.mkdtemp(prefix="status-chromium-")
        self.process = subprocess.Popen(
            [executable, *FLAGS, "--remote-debugging-port=%d" % port, "--user-data-dir=" + self.profile,
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.ws = WebSocket(self._page_url(port))
        except BaseException:   # never leave a browser running when its DevTools never answered
            self.process.kill()
            self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
            raise
        self._ids = iter(range(1, 1 << 30))

    def _page_url(self, port, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=2) as answer:
                    pages = [t for t in json.load(answer) if t.get("type") == "page"]
                if pages:
                    return pages[0]["webSocketDebuggerUrl"]
            except OSError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError("chromium exited with %s" % self.process.returncode)
            time.sleep(0.1)
        raise RuntimeError("chromium's DevTools did not answer within %ss" % timeout)

    def call(self, method, **params):
        ident = next(self._ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError("%s: %s" % (method, message["error"]))
                return message.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def open(self, url, timeout=20.0):
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete' && location.href === %s" % json.dumps(url), timeout)

    def wait_for(self, expression, timeout=20.0):
        """Poll ``expression`` until it is truthy (bounded); its last value otherwise."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        return value

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        try:
            self.ws.close()
        finally:
            processes.stop(self.process, timeout=10)
            shutil.rmtree(self.profile, ignore_errors=True)


CHROMIUM = find_chromium()


pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian package `chromium`)")


@pytest.fixture
def browser():
    chromium = Browser(CHROMIUM, free_port())
    yield chromium
    chromium.close()
