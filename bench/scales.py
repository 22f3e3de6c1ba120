"""Sizes of each benchmark at the three scales: full (the issue's numbers), quick, tiny (smoke test)."""

from dataclasses import dataclass

from bench.loadgen import LoadSpec


@dataclass
class Scale:
    name: str
    route_topics: int
    route_brokers: int
    route_load: LoadSpec
    route_rounds: int
    profile_load: LoadSpec
    inprocess_requests: int
    inprocess_repeats: int
    register_sizes: tuple
    register_repeats: int
    register_unchanged: int
    register_parse_repeats: int
    register_trivial_repeats: int
    mixed_brokers: int
    mixed_topics: int
    mixed_interval: float
    mixed_load: LoadSpec
    memory_brokers: int
    memory_topics: int
    cores_load: LoadSpec
    stall_topics: int = 10000
    stall_registrations: int = 3


FULL = Scale(
    name="full",
    route_topics=1000, route_brokers=4,
    route_load=LoadSpec(connections=16, depth=8, warmup=1.0, duration=4.0), route_rounds=2,
    profile_load=LoadSpec(connections=16, depth=8, warmup=0.5, duration=4.0),
    inprocess_requests=40000, inprocess_repeats=5,
    register_sizes=(1000, 10000, 50000), register_repeats=3, register_unchanged=2, register_parse_repeats=3,
    register_trivial_repeats=20,
    mixed_brokers=100, mixed_topics=1000, mixed_interval=1.0,
    mixed_load=LoadSpec(connections=16, depth=8, warmup=1.0, duration=8.0, rate=2000),
    memory_brokers=100, memory_topics=10000,
    cores_load=LoadSpec(connections=32, depth=8, processes=1, warmup=0.5, duration=3.0),
)

QUICK = Scale(
    name="quick",
    route_topics=1000, route_brokers=4,
    route_load=LoadSpec(connections=16, depth=8, warmup=0.5, duration=3.0), route_rounds=1,
    profile_load=LoadSpec(connections=16, depth=8, warmup=0.5, duration=2.0),
    inprocess_requests=20000, inprocess_repeats=3,
    register_sizes=(1000, 10000), register_repeats=2, register_unchanged=2, register_parse_repeats=3,
    register_trivial_repeats=20,
    mixed_brokers=30, mixed_topics=1000, mixed_interval=1.0,
    mixed_load=LoadSpec(connections=16, depth=8, warmup=0.5, duration=4.0, rate=2000),
    memory_brokers=20, memory_topics=5000,
    cores_load=LoadSpec(connections=32, depth=8, processes=1, warmup=0.5, duration=3.0),
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
)

SCALES = {s.name: s for s in (FULL, QUICK, TINY)}
