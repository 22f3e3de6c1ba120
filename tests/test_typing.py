"""The typed packages type-check clean: ``python -m mypy`` with setup.cfg's ``[mypy]`` (its ``files`` say which
packages; every function there is typed, mypy-zope reads the zope interfaces), as a developer runs it."""

import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None or importlib.util.find_spec("mypy_zope") is None,
    reason="mypy and mypy-zope are not installed (the test extras install them: pip install '.[test]')")


def mypy(*args):
    """mypy's output and exit code, run from the checkout with its configuration; no cache is written
    (a fresh run takes a few seconds of CPU)."""
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "setup.cfg"),
                             "--cache-dir", "/dev/null", "--no-color-output", "--no-error-summary", *args],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    return result.returncode, result.stdout + result.stderr


def test_the_typed_packages_type_check_clean():
    status, output = mypy()
    assert status == 0 and output == "", output


def test_an_untyped_function_or_a_wrong_implementation_of_an_interface_fails(tmp_path):
    """The configuration's strictness and its zope plugin hold: what the typed packages must not contain
    is reported."""
    module = tmp_path / "untyped.py"
    module.write_text(
        "from typing import Optional\n"
        "from zope.interface import implementer\n"
        "from namesrv.interfaces import IDispatcher, IRemotingConnection\n"
        "from namesrv.protocol.command import RemotingCommand\n"
        "\n"
        "def answer(request):\n"
        "    return request\n"
        "\n"
        "@implementer(IDispatcher)\n"
        "class Dispatcher:\n"
        "    def dispatch(self, request: RemotingCommand, connection: IRemotingConnection) -> Optional[int]:\n"
        "        return request.code\n")
    status, output = mypy(str(module))
    codes = sorted(line.rpartition("[")[2].rstrip("]") for line in output.splitlines() if ": error:" in line)
    assert (status, codes) == (1, ["no-untyped-def", "override"]), output
