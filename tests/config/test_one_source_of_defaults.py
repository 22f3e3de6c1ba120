"""Defaults live in one place: the property table of namesrv/config/__init__.py.

Code that reads ``getattr(config, "name", default)`` restates a default, and the copies
drift (the frame limits once defaulted to "off" that way while the table said 1 MiB).
This scans the server's source with ``ast`` and names every such read.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCANNED = ("namesrv", "processors")



def _names_a_config(node):
    """``config``, ``cfg``, ``self.config``, ``self.context.config``, ``service.config``..."""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    else:
        return False
    name = name.lower()
    return name.endswith("config") or name == "cfg"


def config_reads_with_fallback(source, filename="<source>"):
    """``(line, text)`` of every ``getattr(<config>, name, default)`` and ``<config>.get(name, default)``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) == 3:
            target = node.args[0]
        elif (isinstance(func, ast.Attribute) and func.attr == "get"
              and len(node.args) + len(node.keywords) >= 2):
            target = func.value
        else:
            continue
        if _names_a_config(target):
            found.append((node.lineno, ast.unparse(node)))
    return found


def scan():
    hits = {}
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            found = config_reads_with_fallback(path.read_text(encoding="utf-8"), relative)
            if found:
                hits[relative] = found
    return hits


def test_the_detector_sees_fallbacks_and_nothing_else():
    source = (
        "a = getattr(config, 'listenPort', 9876)\n"
        "b = getattr(self.context.config, name, None)\n"
        "c = self.config.get('maxFrameLength', 0)\n"
        "d = getattr(connection, 'closing', False)\n"
        "e = config.listenPort\n"
        "f = self.config.get(name)\n"
        "g = getattr(self.routes, table)\n"
    )
    assert [line for line, _ in config_reads_with_fallback(source)] == [1, 2, 3]


def test_no_module_reads_a_config_property_with_its_own_fallback():
    hits = scan()
    offenders = hits
    assert offenders == {}, "read config.<name> instead (defaults live in namesrv/config/__init__.py): %s" % offenders
