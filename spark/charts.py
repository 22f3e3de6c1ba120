"""PNG charts (matplotlib, Agg backend) from the small aggregates in ``digest``.

Every function takes plain Python lists and a file path and always writes a PNG ("no data" when the
list is empty), so ``report.html`` can always reference the same files. Every chart carries its unit
in the title and on the value axis; time axes are UTC.

Time series are drawn on a fixed bucket grid with the *coverage* (buckets in which any log line was
read): inside it a bucket without events is a real zero, outside it is a gap, drawn as a break in the
line and a grey band "no log data". A straight line never bridges hours without data.
"""

import datetime

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402


def _plain(value, _position=None):
    """Plain numbers on log axes (1, 10, 1,000,000, 0.5), never 10^3 or 1e+06."""
    if value >= 1 and value == int(value):
        return "{:,}".format(int(value))
    return "%g" % value


PLAIN = FuncFormatter(_plain)

SIZE = (10, 4)
GAP_COLOR = "#dddddd"
SESSION_COLOR = "#55a868"
EXPIRED_COLOR = "#c44e52"
FLAP_COLOR = "#dd8452"
CLEAN_END_COLOR = "#4c72b0"


def _utc(ms):
    return datetime.datetime.fromtimestamp(ms / 1000.0, tz=datetime.timezone.utc)


def _num(ms):
    return mdates.date2num(_utc(ms))


def _figure(title, height=None):
    fig, ax = plt.subplots(figsize=(SIZE[0], height or SIZE[1]))
    ax.set_title(title)
    return fig, ax


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)
    return path


def _empty(ax):
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, fontsize=14, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def _time_axis(ax):
    locator = mdates.AutoDateLocator(tz=datetime.timezone.utc)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=datetime.timezone.utc))
    ax.set_xlabel("time (UTC)")


def bars(path, title, labels, values, xlabel="", horizontal=True, log=False, ylabel=""):
    """A bar chart of (label, value) pairs (horizontal: the first label on top)."""
    fig, ax = _figure(title, height=max(3, 0.3 * len(labels) + 1.5) if horizontal else None)
    if not labels:
        _empty(ax)
        return _save(fig, path)
    if horizontal:
        positions = list(range(len(labels)))[::-1]
        ax.barh(positions, values, color="#4c72b0")
        ax.set_yticks(positions)
        ax.set_yticklabels([str(label) for label in labels], fontsize=8)
        ax.set_xlabel(xlabel)
        if log:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(PLAIN)
    else:
        ax.bar(range(len(labels)), values, color="#4c72b0")
        step = max(1, len(labels) // 20)
        ax.set_xticks(list(range(0, len(labels), step)))
        ax.set_xticklabels([str(labels[i]) for i in range(0, len(labels), step)], fontsize=8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(PLAIN)
    return _save(fig, path)


def gridded(points, covered, bucket, zero=True):
    """``points`` [(bucket start ms, value)] on every bucket from the first to the last covered one.

    Returns (xs, ys): a covered bucket without a point is 0 when ``zero`` (counts) else NaN (e.g. a
    latency with no request); an uncovered bucket is always NaN, which breaks the drawn line.
    """
    if not covered:
        return [], []
    values = dict(points)
    start, end = min(covered), max(covered)
    xs, ys = [], []
    for b in range(start, end + bucket, bucket):
        xs.append(b)
        if b in covered:
            ys.append(values.get(b, 0 if zero else float("nan")))
        else:
            ys.append(float("nan"))
    return xs, ys


def gaps(covered, bucket):
    """[(start ms, end ms)] runs of uncovered buckets between the first and last covered ones."""
    runs, ordered = [], sorted(covered)
    for a, b in zip(ordered, ordered[1:]):
        if b - a > bucket:
            runs.append((a + bucket, b))
    return runs


def series(path, title, lines, ylabel, covered, bucket, log=False, zero=True):
    """Time series on the bucket grid: ``lines`` maps a label to [(bucket start ms, value), ...].

    ``log``: False, True (log scale) or ``"symlog"`` (linear up to 1, logarithmic above).

    ``covered``: the set of bucket starts with any input line; gaps between them are shaded.
    """
    fig, ax = _figure(title)
    covered = set(covered)
    for label, points in lines.items():   # points outside the coverage still count as coverage
        covered.update(t for t, _ in points)
    drawn = False
    for label, points in sorted(lines.items()):
        if not points:
            continue
        xs, ys = gridded(points, covered, bucket, zero)
        ax.plot([_utc(x) for x in xs], ys, label=str(label), linewidth=1, drawstyle="steps-post",
                marker="." if len(xs) < 60 else None)
        drawn = True
    if not drawn:
        _empty(ax)
        return _save(fig, path)
    handles, names = ax.get_legend_handles_labels()
    holes = gaps(covered, bucket)
    for start, end in holes:
        ax.axvspan(_utc(start), _utc(end), color=GAP_COLOR, zorder=0)
    if holes:
        handles.append(Patch(color=GAP_COLOR))
        names.append("no log data")
    ax.set_ylabel(ylabel)
    if log == "symlog":   # counts with a start-up burst: zero stays zero, the burst does not flatten the rest
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(PLAIN)
    elif log:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(PLAIN)
    else:
        ax.set_ylim(bottom=0)
        if zero:   # counts: whole numbers on the axis
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(handles, names, fontsize=8, loc="upper left")
    _time_axis(ax)
    return _save(fig, path)


def sessions(path, title, rows, lanes, flaps=(), covered=(), bucket=60000):
    """A per-broker timeline: one lane per (broker, server), the flappiest on top.

    ``rows``: (lane, start ms, end ms, end event); ``lanes``: lane labels, top first; ``flaps``: (lane,
    expired ms, re-registered ms). A session is a green bar; an expiration a red x; a flap an orange
    band over the time the broker was away; a clean unregistration a blue bar end.
    """
    fig, ax = plt.subplots(figsize=(12, max(3, 0.4 * len(lanes) + 2)))
    ax.set_title(title)
    if not rows:
        _empty(ax)
        return _save(fig, path)
    index = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    for start, end in gaps(set(covered), bucket):
        ax.axvspan(_num(start), _num(end), color=GAP_COLOR, zorder=0)
    for lane, expired_at, back_at in flaps:
        if lane in index:
            ax.barh(index[lane], _num(back_at) - _num(expired_at), left=_num(expired_at), height=0.8,
                    color=FLAP_COLOR, zorder=1)
    for lane, start, end, end_event in rows:
        y = index[lane]
        ax.barh(y, _num(max(end, start + 1000)) - _num(start), left=_num(start), height=0.5, color=SESSION_COLOR,
                zorder=2)
        if end_event == "broker_expired":
            ax.plot([_num(end)], [y], marker="x", color=EXPIRED_COLOR, markersize=8, mew=2, zorder=3)
        elif end_event == "broker_unregistered":
            ax.plot([_num(end)], [y], marker="|", color=CLEAN_END_COLOR, markersize=12, mew=2, zorder=3)
    ax.set_yticks(list(index.values()))
    ax.set_yticklabels(list(index.keys()), fontsize=7)
    ax.set_ylim(-0.7, len(lanes) - 0.3)
    ax.xaxis_date()
    legend = [Patch(color=SESSION_COLOR, label="registered (session)"),
              Line2D([], [], marker="x", color=EXPIRED_COLOR, linestyle="", mew=2, label="expired"),
              Patch(color=FLAP_COLOR, label="flap: away, then back"),
              Line2D([], [], marker="|", color=CLEAN_END_COLOR, linestyle="", mew=2, markersize=10,
                     label="unregistered")]
    if covered and gaps(set(covered), bucket):
        legend.append(Patch(color=GAP_COLOR, label="no log data"))
    ax.legend(handles=legend, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    _time_axis(ax)
    return _save(fig, path)
