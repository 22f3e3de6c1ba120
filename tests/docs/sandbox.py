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
import time

BOOTED = re.compile(r"The Name Server boot success|controller \S+ of group \S* serving on")
TIMEOUT = 120


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


_started = iter(range(1, 1 << 20))


def start(command, env, cwd):
    """``command`` (a list, or a line for bash) in a session of its own, its output in a file."""
    path = os.path.join(cwd, ".output-%d" % next(_started))
    with open(path, "w") as out:
        if isinstance(command, str):
            command = ["/bin/bash", "-c", command]
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    process.output_path = path
    return process


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
    env = dict(os.environ, HOME=spec["home"], PATH=spec["venv_bin"] + os.pathsep + os.environ.get("PATH", ""))
    env.pop("PYTHONPATH", None)
    cwd = spec["workdir"]
    twistd = os.path.join(spec["venv_bin"], "twistd")
    server = None
    try:
        if spec["mode"] == "with a server":
            options = spec["server_options"].split()
            port = int(options[options.index("--listenPort") + 1]) if "--listenPort" in options else 9876
            server = start([twistd, "-n", "--pidfile=", "--logfile", os.path.join(cwd, "server.log"), "namesrv",
                            "--statusListenPort", "9877"] + options, env, cwd)
            if not wait_for_port(port, time.monotonic() + 60, server):
                return {"ok": False, "why": "the server did not start", "output": end(server)}
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
        block = start(["/bin/bash", "-e", "-c", spec["text"]], env, cwd)
        try:
            block.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            return {"ok": False, "why": "still running after %d s" % TIMEOUT, "output": end(block)}
        output = end(block)
        return {"ok": block.returncode == 0, "why": "exit %s" % block.returncode, "output": output}
    finally:
        if server is not None:
            end(server)


if __name__ == "__main__":
    result = main(sys.argv[1])
    result["output"] = (result.get("output") or "")[-4000:]
    print(json.dumps(result))
