"""Sizes of each benchmark at the three scales: full (the issue's numbers), quick, tiny (smoke test)."""

from dataclasses import dataclass, field

from bench.lib.loadgen import LoadSpec


@dataclass
class FleetSpec:
    """The fleet capacity search (bench.scenarios.fleet): sizes are 30-s-equivalent broker counts."""
    topics: int = 1000                 # topics per broker
    real_brokers: int = 256            # brokers actually connected; beyond, the period shrinks
    load: LoadSpec = field(default_factory=lambda: LoadSpec(connections=16, depth=16, warmup=1.0, duration=3.0,
                                                            rate=50_000))
    route_p99_ms: float = 5.0          # the limit for route reads
    register_p99_ms: float = 1000.0    # a registration slower than this is not keeping up
    start: dict = field(default_factory=lambda: {"4.9": 1000, "5.x": 8000})
    cap: dict = field(default_factory=lambda: {"4.9": 64000, "5.x": 512000})
    bisections: int = 2
    grace: float = 2.0                 # seconds after the window for the last answers
    sample_topics: int = 512           # route read topics, spread over the fleet's bands


def _load(**sizes):
    """A LoadSpec field of these sizes: each Scale gets its own (the suite changes them per run)."""
    return field(default_factory=lambda: LoadSpec(**sizes))


@dataclass
class Scale:
    """The sizes of every benchmark of the suite; the defaults are the full scale's."""
    name: str = "full"
    route_topics: int = 1000
    route_brokers: int = 4
    route_load: LoadSpec = _load(connections=16, depth=8, warmup=1.0, duration=4.0)
    route_rounds: int = 2
    profile_load: LoadSpec = _load(connections=16, depth=8, warmup=0.5, duration=4.0)
    inprocess_requests: int = 40000
    inprocess_repeats: int = 5
    register_sizes: tuple = (1000, 10000, 50000)
    register_repeats: int = 3
    register_unchanged: int = 2
    register_parse_repeats: int = 3
    register_trivial_repeats: int = 20
    mixed_brokers: int = 100
    mixed_topics: int = 1000
    mixed_interval: float = 1.0
    mixed_load: LoadSpec = _load(connections=16, depth=8, warmup=1.0, duration=8.0, rate=2000)
    memory_brokers: int = 100
    memory_topics: int = 10000
    cores_load: LoadSpec = _load(connections=32, depth=8, processes=1, warmup=0.5, duration=3.0)
    stall_topics: int = 10000
    stall_registrations: int = 3
    fleet: FleetSpec = field(default_factory=FleetSpec)


FULL = Scale()

#: About a minute: full but for the sizes below.
QUICK = Scale(
    name="quick",
    route_load=LoadSpec(connections=16, depth=8, warmup=0.5, duration=3.0), route_rounds=1,
    profile_load=LoadSpec(connections=16, depth=8, warmup=0.5, duration=2.0),
    inprocess_requests=20000, inprocess_repeats=3,
    register_sizes=(1000, 10000), register_repeats=2,
    mixed_brokers=30, mixed_load=LoadSpec(connections=16, depth=8, warmup=0.5, duration=4.0, rate=2000),
    memory_brokers=20, memory_topics=5000,
    fleet=FleetSpec(real_brokers=128, load=LoadSpec(connections=16, depth=16, warmup=0.5, duration=2.0, rate=50_000),
                    bisections=1),
)

#: Seconds, not minutes: for the smoke test (figures exist, not what they say).
TINY = Scale(
    name="tiny",
    route_topics=20, route_brokers=2,
    route_load=LoadSpec(connections=2, depth=2, warmup=0.2, duration=0.6), route_rounds=1,
    profile_load=LoadSpec(connections=2, depth=2, warmup=0.1, duration=0.4),
    inprocess_requests=800, inprocess_repeats=1,
    register_sizes=(200, 2000), register_repeats=1, register_unchanged=1, register_parse_repeats=1,
    register_trivial_repeats=5,
    mixed_brokers=3, mixed_topics=50, mixed_interval=0.2,
    mixed_load=LoadSpec(connections=2, depth=2, warmup=0.2, duration=0.6, rate=200),
    memory_brokers=3, memory_topics=3000,
    cores_load=LoadSpec(connections=4, depth=2, warmup=0.2, duration=0.6),
    stall_topics=500, stall_registrations=1,
    fleet=FleetSpec(topics=20, real_brokers=16, load=LoadSpec(connections=2, depth=4, warmup=0.1, duration=0.3,
                                                              rate=1000),
                    start={"4.9": 16, "5.x": 16}, cap={"4.9": 16, "5.x": 16}, bisections=0, grace=1.0,
                    sample_topics=20, route_p99_ms=1000.0, register_p99_ms=5000.0),
)

SCALES = {s.name: s for s in (FULL, QUICK, TINY)}
