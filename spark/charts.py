"""PNG charts (matplotlib, Agg backend) from the small aggregates in ``digest``.

Every function takes plain Python lists and a file path and always writes a PNG ("no data" when the
list is empty), so ``report.html`` can always reference the same files.
"""

import datetime

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

SIZE = (10, 4)


def _utc(ms):
    return datetime.datetime.fromtimestamp(ms / 1000.0, tz=datetime.timezone.utc)


def _figure(title, height=None):
    fig, ax = plt.subplots(figsize=(SIZE[0], height or SIZE[1]))
    ax.set_title(title)
    return fig, ax


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def _empty(ax):
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, fontsize=14, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def _time_axis(ax):
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H:%M", tz=datetime.timezone.utc))
    for label in ax.get_xticklabels():
        label.set_rotation(30)
        label.set_ha("right")


def bars(path, title, labels, values, xlabel="", horizontal=True, log=False):
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
    else:
        ax.bar(range(len(labels)), values, color="#4c72b0")
        step = max(1, len(labels) // 20)
        ax.set_xticks(list(range(0, len(labels), step)))
        ax.set_xticklabels([str(labels[i]) for i in range(0, len(labels), step)], fontsize=8)
        ax.set_xlabel(xlabel)
        if log:
            ax.set_yscale("log")
    return _save(fig, path)


def series(path, title, lines, ylabel="", log=False, step=False):
    """Time series: ``lines`` maps a label to [(epoch ms, value), ...]."""
    fig, ax = _figure(title)
    drawn = False
    for label, points in lines.items():
        if not points:
            continue
        points = sorted(points)
        xs, ys = [_utc(t) for t, _ in points], [v for _, v in points]
        if step:
            ax.step(xs, ys, where="post", label=str(label))
        else:
            ax.plot(xs, ys, label=str(label), linewidth=1)
        drawn = True
    if not drawn:
        _empty(ax)
        return _save(fig, path)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8, loc="upper left")
    _time_axis(ax)
    return _save(fig, path)


def sessions(path, title, rows, lanes):
    """A timeline: one lane per (server, broker), a bar per session, a red mark per expiration.

    ``rows``: (lane, start ms, end ms, expired: bool); ``lanes``: lane labels, top first.
    """
    fig, ax = _figure(title, height=max(3, 0.35 * len(lanes) + 1.5))
    if not rows:
        _empty(ax)
        return _save(fig, path)
    index = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    for lane, start, end, expired in rows:
        y = index[lane]
        width = mdates.date2num(_utc(max(end, start + 1000))) - mdates.date2num(_utc(start))
        ax.barh(y, width, left=mdates.date2num(_utc(start)), height=0.6, color="#55a868")
        if expired:
            ax.plot([mdates.date2num(_utc(end))], [y], marker="x", color="#c44e52")
    ax.set_yticks(list(index.values()))
    ax.set_yticklabels(list(index.keys()), fontsize=7)
    ax.xaxis_date()
    _time_axis(ax)
    return _save(fig, path)
