"""bench.scenarios.acl_reads at a small size: every read is answered from the cache, ACL off (one shape) and on
(a key a topic, its signed frame)."""

from bench.scenarios.acl_reads import one_run


def test_signed_reads_are_answered_from_the_cache_a_key_a_topic():
    off, on = one_run(200, 2000, acl=False, seed=1), one_run(200, 2000, acl=True, seed=1)
    assert off["cache_hit_share"] == on["cache_hit_share"] == 1.0 and off["found"] == on["found"] == 1.0
    assert off["cache_keys"] == 1 and on["cache_keys"] == 200
    assert on["cpu_us_per_read"] > 0 and off["cpu_us_per_read"] > 0
