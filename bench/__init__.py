"""Benchmarks of the NameServer: ``python -m bench --list``, ``python -m bench NAME [ARGS]``, and
``python -m bench [--quick] [--only NAMES]`` for the suite (``make bench``).

Every benchmark starts the servers it measures as subprocesses on free 127.0.0.1 ports, drives them
from separate processes and stops them again; figures go to one file, ``bench/results/results.jsonl``,
each line with a ``bench`` field (the suite also rewrites ``latest.md``).

- ``bench.lib``: what the benchmarks share: ``options`` (every scenario's options, the shared ones defined
  once), ``brokers`` (the one fake-broker generator: bodies, frames, layouts, a few brokers or a fleet),
  ``wire`` (pre-encoded frames, the frame scanner), ``servers``, ``serverprocs``, ``javanamesrv``,
  ``baseline``, ``profiled_twistd`` (the servers and their processes), ``loadgen``, ``wholetable``,
  ``scales``, ``results``, ``runner`` (the suite) and ``cli`` (the command line);
- ``bench.scenarios``: one module a benchmark;
- ``bench.tests``: the benchmarks' own tests (tests/ never imports bench).

The host-noise probes are ``tools.guestidle`` and ``tools.hoststeal``.
"""
