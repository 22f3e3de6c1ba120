"""tools.hoststeal: the steal field of /proc/stat, and a window's share of the CPUs' time."""

from tools.hoststeal import StealWindow, steal_ticks

STAT = """cpu  5569869 94913 599738 3991233 24372 0 92372 125702 0 0
cpu0 2784934 47456 299869 1995616 12186 0 46186 62851 0 0
cpu1 2784935 47457 299869 1995617 12186 0 46186 62851 0 0
intr 1 2 3
"""


def test_steal_is_the_eighth_number_of_the_all_cpus_line():
    assert steal_ticks(STAT) == 125702


def test_a_kernel_without_the_field_says_nothing():
    assert steal_ticks("cpu  1 2 3 4\n") is None
    assert steal_ticks("intr 1 2\n") is None


def test_a_window_divides_its_steal_by_its_length_and_the_cpus():
    now, ticks = [10.0], [1000]
    window = StealWindow(lambda: now[0], cpus=2, ticks_per_s=100, read=lambda: ticks[0]).start()
    now[0], ticks[0] = 30.0, 1400            # 4 s stolen of 2 CPUs × 20 s
    window.stop()
    assert window.steal_s == 4.0 and window.share == 0.1


def test_no_figure_where_the_kernel_gives_none():
    window = StealWindow(lambda: 1.0, cpus=2, ticks_per_s=100, read=lambda: None).start().stop()
    assert window.steal_s is None and window.share is None
