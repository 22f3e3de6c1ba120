"""Runs one snippet inside a network namespace of its own (``unshare -rn``), so that it can use the ports and
addresses the documentation shows (9876, 9877, 8080, 10.0.0.1...) as written, whatever runs on the host.

    unshare -rn python -m tests.docs.sandbox SPEC.json     (tests/docs/test_snippets.py does it)

It brings loopback up (and the documentation's example addresses on it), then runs the snippet as its
mode says (tests/docs/snippets.py), stops everything it started, and prints one JSON line:
``{"ok": ..., "why": ..., "output": ...}``.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from tests.docs.snippets import RESTART_LINE

BOOTED = re.compile(r"The Name Server boot success|controller \S+ of group \S* serving on")
TIMEOUT = 120
#: a restart as the reader does it: Ctrl-C, the server gone within this long, the new one answering within
#: STARTS (and every stand-in broker of the block registered again within STARTS too)
STOPS = 30
STARTS = 60


def sh(*args):
    subprocess.run(args, check=True, capture_output=True)


def wait_for_port(port, deadline, process=None):
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def output_of(process):
    with open(process.output_path, errors="replace") as f:
        return f.read()


def end(process, sig=signal.SIGTERM):
    """Stop ``process`` and everything of its session; its output."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    try:
        os.killpg(process.pid, signal.SIGKILL)   # what the block left in the background
    except ProcessLookupError:
        pass
    return output_of(process)


def still_running(process):
    """What of the block's session is still running, with how long it has been: which step hangs."""
    done = subprocess.run(["ps", "-o", "pid,etimes,stat,args", "-s", str(process.pid)], capture_output=True,
                          text=True)
    return "\n--- still running (pid, seconds, state, command):\n" + done.stdout


def logs_under(folder, lines=15):
    """The last lines of every log the block wrote under ``folder`` (its `mktemp -d`)."""
    tails = []
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            if name.endswith(".log"):
                with open(os.path.join(root, name), errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
                tails.append("--- %s:\n%s" % (os.path.relpath(os.path.join(root, name), folder), "\n".join(tail)))
    return "\n" + "\n".join(tails)


_started = iter(range(1, 1 << 20))


def _as_a_terminal_starts_it():
    """Ctrl-C (SIGINT) at its default, whatever ran the test: a pytest started in the background by a shell
    without job control ignores SIGINT, and everything it starts would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(command, env, cwd):
    """``command`` (a list, or a line for bash) in a session of its own, its output in a file."""
    path = os.path.join(cwd, ".output-%d" % next(_started))
    with open(path, "w") as out:
        if isinstance(command, str):
            command = ["/bin/bash", "-c", command]
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True,
                                   preexec_fn=_as_a_terminal_starts_it)
    process.output_path = path
    return process


class Restarts:
    """The block's restarts of its server, as the reader does them in the first terminal (``RESTART_LINE``):
    the block asks through a FIFO and waits for the answer on another, so it goes on only once the new
    process answers and every stand-in broker of the block (tools.demo_broker) has registered again."""

    PRELUDE = ('__snippet_restart() { echo restart > "%s"; read -r answer < "%s"; [ "$answer" = ok ] || '
               '{ echo "the restart failed: $answer" >&2; return 1; }; }\n')

    def __init__(self, server, command, port, env, cwd):
        self.server, self.command, self.port, self.env, self.cwd = server, command, port, env, cwd
        self.request, self.done = os.path.join(cwd, ".restart-request"), os.path.join(cwd, ".restart-done")
        os.mkfifo(self.request)
        os.mkfifo(self.done)
        self.block = None

    def script(self, text):
        """The block as it runs here: each restart line followed by the call that does the restart."""
        lines = [line + ("\n__snippet_restart" if line.strip().startswith(RESTART_LINE) else "")
                 for line in text.splitlines()]
        return self.PRELUDE % (self.request, self.done) + "\n".join(lines) + "\n"

    def serve(self, block):
        self.block = block
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            with open(self.request) as f:
                if not f.readline():
                    continue
            answer = self._restart()
            with open(self.done, "w") as f:
                f.write(answer + "\n")

    def _restart(self):
        output = output_of(self.block)
        expected = output.count(" again\n") + _brokers(output)   # each one's "registered ... again" line
        try:
            os.killpg(self.server.pid, signal.SIGINT)     # Ctrl-C in the server's terminal
            self.server.wait(STOPS)
        except subprocess.TimeoutExpired:
            return "the server did not stop within %d s of Ctrl-C" % STOPS
        self.server = start(self.command, self.env, self.cwd)
        deadline = time.monotonic() + STARTS
        if not wait_for_port(self.port, deadline, self.server):
            return "the server did not start again"
        while output_of(self.block).count(" again\n") < expected:
            if time.monotonic() > deadline:
                return "the stand-in brokers did not register again within %d s" % STARTS
            time.sleep(0.1)
        return "ok"


def _brokers(output):
    """How many stand-in brokers the block has running: each printed its first registration."""
    return len(set(re.findall(r"^registered (\S+) \(", output, re.M)))


def serves(command, env, cwd, seconds=5.0):
    """(ok, why, output): ``command`` (a foreground server) says it serves, and still runs ``seconds`` later."""
    process = start(command, env, cwd)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not BOOTED.search(output_of(process)) and process.poll() is None:
        time.sleep(0.1)
    if not BOOTED.search(output_of(process)):
        output = end(process)
        return False, "did not serve (exit %s)" % process.returncode, output
    time.sleep(seconds)
    alive = process.poll() is None
    output = end(process)
    return alive, "" if alive else "stopped by itself (exit %s)" % process.returncode, output


def main(spec_path):
    with open(spec_path) as f:
        spec = json.load(f)
    sh("ip", "link", "set", "lo", "up")
    for address in spec["addresses"]:
        sh("ip", "addr", "add", address + "/32", "dev", "lo")
    # TMPDIR in the snippet's own directory: what a block's `mktemp -d` holds (its logs) is kept with the run
    env = dict(os.environ, HOME=spec["home"], TMPDIR=spec["tmp"],
               PATH=spec["venv_bin"] + os.pathsep + os.environ.get("PATH", ""))
    env.pop("PYTHONPATH", None)
    cwd = spec["workdir"]
    twistd = os.path.join(spec["venv_bin"], "twistd")
    server = None
    try:
        restarts = None
        if spec["mode"] == "with a server":
            options = spec["server_options"].split()
            port = int(options[options.index("--listenPort") + 1]) if "--listenPort" in options else 9876
            command = [twistd, "-n", "--pidfile=", "--logfile", os.path.join(cwd, "server.log"), "namesrv",
                       "--statusListenPort", "9877"] + options
            server = start(command, env, cwd)
            if not wait_for_port(port, time.monotonic() + 60, server):
                return {"ok": False, "why": "the server did not start", "output": end(server)}
            restarts = Restarts(server, command, port, env, cwd)
        if spec["kind"] == "properties":
            ok, why, output = serves([twistd, "-n", "--pidfile=", "namesrv", "-c", spec["properties_file"]], env, cwd)
            return {"ok": ok, "why": why, "output": output}
        if spec["mode"] == "serves":
            outputs = []
            for line in spec["text"].splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    ok, why, output = serves(line, env, cwd)
                    outputs.append(output)
                    if not ok:
                        return {"ok": False, "why": "%s: %s" % (line.strip(), why), "output": "\n".join(outputs)}
            return {"ok": True, "why": "", "output": "\n".join(outputs)}
        block = start(["/bin/bash", "-e", "-c", restarts.script(spec["text"]) if restarts else spec["text"]],
                      env, cwd)
        if restarts is not None:
            restarts.serve(block)
        timeout = spec.get("timeout", TIMEOUT)
        try:
            block.wait(timeout)
        except subprocess.TimeoutExpired:
            stuck = still_running(block)
            return {"ok": False, "why": "still running after %d s" % timeout,
                    "output": end(block) + stuck + logs_under(spec["tmp"])}
        output = end(block)
        return {"ok": block.returncode == 0, "why": "exit %s" % block.returncode, "output": output}
    finally:
        if restarts is not None:
            server = restarts.server
        if server is not None:
            end(server)


if __name__ == "__main__":
    result = main(sys.argv[1])
    result["output"] = (result.get("output") or "")[-12000:]
    print(json.dumps(result))
