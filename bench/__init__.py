"""Benchmarks of the NameServer (issue 7): ``python -m bench [--quick] [--out DIR]``.

Every benchmark starts the servers it measures as subprocesses on free 127.0.0.1
ports, drives them from separate processes and stops them again; figures are appended
to ``<out>/results.jsonl`` and summarised in ``<out>/latest.md``.

Modules, one job each:

- ``wire``: pre-encoded request frames with patchable opaques, and the frame scanner;
- ``brokers``: REGISTER_BROKER bodies in the Java formats and fake broker connections;
- ``servers``: the namesrv and baseline server subprocesses, /proc readings;
- ``baseline``: the minimal Twisted server that is the framework's ceiling;
- ``loadgen``: the pipelining GET_ROUTEINFO_BY_TOPIC load generator (multiprocessing);
- ``heartbeats``: a fleet of fake brokers re-registering on a short period, in its own process;
- ``route``, ``registration``, ``mixed``, ``memory``, ``profiling``: the benchmarks;
- ``results``: figures, results.jsonl, latest.md; ``runner``: the command line.
"""
