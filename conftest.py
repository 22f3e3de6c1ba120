"""Test-suite wide settings: hypothesis profile without deadlines (CI machines are noisy), the
session-wide check that no process a test started outlives the run (tests/leftovers.py), and how
``make test``'s workers share the suite (tests/parallel.py)."""

pytest_plugins = ("tests.leftovers", "tests.starved", "tests.parallel")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("ci")
except ImportError:  # pragma: no cover
    pass
