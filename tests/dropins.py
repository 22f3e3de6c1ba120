"""Third-party request processors as a deployer writes them, for the tests that load one: a processor
module (``processor_source``) and, for a real server, the ``twisted/plugins`` dropin that names it
(``write_dropin``)."""

import textwrap


def processor_source(cls, name, code, process, stop=None, header=""):
    """The text of a module whose class ``cls`` is processor ``name`` for request ``code``: ``process`` is
    the body of its ``process_request(request, connection)`` (``self.context`` is what it was built with);
    ``stop``, when given, the body of its ``stop()`` (it then provides IStoppableProcessor too); ``header``,
    lines before the class (imports)."""
    interfaces = "IRequestProcessor, IStoppableProcessor" if stop is not None else "IRequestProcessor"
    lines = [textwrap.dedent(header).strip(),
             "from zope.interface import implementer",
             "from namesrv.interfaces import %s" % interfaces,
             "",
             "@implementer(%s)" % interfaces,
             "class %s:" % cls,
             "    name = %r" % name,
             "    codes = frozenset([%d])" % code,
             "    def __init__(self, context):",
             "        self.context = context",
             "    def reject_request(self, request):",
             "        return None",
             "    def process_request(self, request, connection):",
             textwrap.indent(textwrap.dedent(process).strip(), " " * 8)]
    if stop is not None:
        lines += ["    def stop(self):", textwrap.indent(textwrap.dedent(stop).strip(), " " * 8)]
    return "\n".join(lines) + "\n"


def write_dropin(extra, module, name, cls, source):
    """``extra/<module>.py`` holding ``source``, and ``extra/twisted/plugins/<module>_plugin.py``, a
    ProcessorPlugin ``name`` naming its ``cls``: ``extra`` (returned) then goes on the server's Python path
    (``NamesrvProcess(..., extra_pythonpath=[extra])``)."""
    plugins = extra / "twisted" / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    (extra / (module + ".py")).write_text(source)
    (plugins / (module + "_plugin.py")).write_text(
        "from namesrv.plugin import ProcessorPlugin\n%s = ProcessorPlugin(%r, %r, %r)\n" % (name, name, module, cls))
    return extra
