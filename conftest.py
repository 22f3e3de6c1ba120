"""Test-suite wide settings: hypothesis profile without deadlines (CI machines are noisy), and the
session-wide check that no process a test started outlives the run (tests/leftovers.py)."""

pytest_plugins = ("tests.leftovers", "tests.starved")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("ci")
except ImportError:  # pragma: no cover
    pass
