"""The benchmarks' command-line options, declared one way: ``python -m bench NAME --help`` for every scenario.

A scenario lists its options in ``OPTIONS`` and reads its command line with ``parse(NAME, __doc__,
OPTIONS, argv)``. An option several scenarios take is defined here, once, with its flag, type and help;
each scenario gives it its own default (``BROKERS(1000)``) and, where the option means something
narrower there, a word on it (``TOPICS(1000, "each broker's")``). An option of one scenario is an
``Option`` in that scenario's module. Every ``--help`` shows the defaults.

Where results and docs name an older spelling of a shared option, it stays (``flag=``: ``--read-connections``,
``--load-processes``, ``--topics-per-broker``, ``--set``, ``--repeat``), and so does ``spark_bench``'s
``--json FILE`` (append to FILE) beside the ``--json`` flag.
"""

import argparse

from bench.lib.scales import SCALES

#: The help of an option that ``--help`` does not show.
HIDDEN = argparse.SUPPRESS


class Option:
    """One ``add_argument`` call, kept for when a parser is built: a flag (or a positional's name), a help
    text and the other keywords."""

    def __init__(self, flag, help, **kwargs):
        self.flag, self.help, self.kwargs = flag, help, kwargs

    def __call__(self, default=None, detail=None, flag=None, **kwargs):
        """This option with a scenario's default; ``detail`` says what it means there, ``flag`` keeps an
        older spelling, ``kwargs`` (``nargs``...) change the rest."""
        help = self.help if detail is None else "%s (%s)" % (self.help, detail)
        return Option(flag or self.flag, help, **dict(self.kwargs, default=default, **kwargs))

    def add_to(self, parser):
        parser.add_argument(self.flag, help=self.help, **self.kwargs)


class _ShowDefaults(argparse.HelpFormatter):
    """Every option's help ends with its default, when it has one worth saying."""

    def _get_help_string(self, action):
        help = action.help or ""
        if action.default not in (None, [], "", argparse.SUPPRESS) and action.default is not False \
                and "%(default)" not in help:
            help += " (default: %(default)s)"
        return help


def parser(name, doc, options, prog=None):
    """The ``argparse`` parser of scenario ``name`` (none: the suite; ``prog``: another command): its
    docstring's first paragraph, then its options."""
    prog = prog or " ".join(filter(None, ("python -m bench", name)))
    built = argparse.ArgumentParser(prog=prog, formatter_class=_ShowDefaults,
                                    description=(doc or "").strip().split("\n\n")[0])
    for option in options:
        option.add_to(built)
    return built


def parse(name, doc, options, argv=None, prog=None):
    return parser(name, doc, options, prog).parse_args(argv)


def properties(settings):
    """``{key: value}`` of ``KEY=VALUE`` settings (``--property``), spaces around either trimmed."""
    pairs = (setting.partition("=") for setting in settings)
    return {key.strip(): value.strip() for key, _, value in pairs}


# -- what the server under test is ---------------------------------------------------------------
TARGET = Option("--target", "a running name server to measure (default: start one)", metavar="HOST:PORT")
PROPERTY = Option("--property", "a server property for the server this starts; repeatable", action="append",
                  default=[], metavar="KEY=VALUE")
JAVA = Option("--java", "measure a fresh Java NameServer of this peer (../shared/javapeers) instead of ours",
              metavar="PEER_DIR")
JAVA_HEAP = Option("--java-heap", "the Java NameServer's -Xms/-Xmx")
WORKERS = Option("--workers", "routeReadWorkers of each server started, one after the other", type=int, nargs="*")

# -- the brokers and their topics --------------------------------------------------------------
BROKERS = Option("--brokers", "fake brokers", type=int)
TOPICS = Option("--topics", "topics", type=int)
BROKERS_PER_TOPIC = Option("--brokers-per-topic", "brokers serving each topic", type=int)

# -- the load and its window -------------------------------------------------------------------
CONNECTIONS = Option("--connections", "load connections", type=int)
DEPTH = Option("--depth", "requests in flight per connection", type=int)
PROCESSES = Option("--processes", "load generator processes", type=int)
RATE = Option("--rate", "route reads/s offered (0: as fast as served)", type=float, metavar="PER_SECOND")
READERS = Option("--readers", "reading clients, half of them on a new connection per request", type=int)
WARMUP = Option("--warmup", "seconds of load before the measured window", type=float, metavar="SECONDS")
SECONDS = Option("--seconds", "seconds of route reads measured", type=float, metavar="SECONDS")
DURATION = Option("--duration", "seconds measured after the warm-up", type=float, metavar="SECONDS")

# -- how often, how big, where the figures go --------------------------------------------------
ROUNDS = Option("--rounds", "rounds", type=int)
REPEATS = Option("--repeats", "repetitions of each measurement", type=int)
REPEAT = REPEATS(flag="--repeat")
SCALE = Option("--scale", "the sizes: full, quick, or tiny (a smoke test)", choices=sorted(SCALES))
MASTER = Option("--master", "the Spark master")
JSON = Option("--json", "print the figures as JSON lines too, which python -m bench records in the results file",
              action="store_true")
