"""Is a history of concurrent operations linearizable? A Wing–Gong search, with Lowe's memo.

Each operation has a call time and a return time as the client saw them, and a result. An
operation whose outcome the client cannot know (a timeout, or a write answered "not leader"
after it may have been proposed) is *indeterminate*: it may have taken effect at any moment
after its call, or never, and any result is acceptable for it. The history is linearizable when
the operations can be put in one order that keeps real time (an operation that returned before
another was called comes first) and that the sequential model accepts, every determinate
operation included.

The search tries, at each point, every operation that could come next (one called before every
pending determinate operation returned), applies it to the model, and backs up on a refusal;
(done set, model state) pairs already refuted are not tried again. Fine for the short histories
of a fault run (tens to a few hundred operations per key: keys are checked one by one).

Models: ``BrokerIdTable`` (a group's ids in the controller, read and claimed through
CONTROLLER_GET_NEXT_BROKER_ID and CONTROLLER_APPLY_BROKER_ID), ``CasRegister`` and ``GrowOnlySet``.
"""

import math
from dataclasses import dataclass, field
from typing import Any

INDETERMINATE = math.inf


@dataclass(frozen=True)
class Op:
    process: Any
    kind: str            # "read", "write", "cas", "add", ...
    arg: Any
    result: Any          # None for an indeterminate operation
    call: float
    ret: float = INDETERMINATE
    key: Any = None

    @property
    def determinate(self):
        return self.ret != INDETERMINATE


class BrokerIdTable:
    """One broker group's ids in the controller: ``read`` (CONTROLLER_GET_NEXT_BROKER_ID) → the next id,
    one more than the ids handed out; ``claim`` id (CONTROLLER_APPLY_BROKER_ID with a check code never
    used before) → True when the id was free (the first claim must be id 1), False when refused."""

    def init(self):
        return frozenset()

    def step(self, state, op):
        if op.kind == "read":
            return (op.result is None or op.result == len(state) + 1), state
        if op.kind == "claim":
            took = op.arg == 1 if not state else op.arg not in state
            after = state | {op.arg} if took else state
            if op.result is None:
                return True, after
            return op.result == took, after
        raise ValueError("BrokerIdTable has no %r" % op.kind)


class CasRegister:
    """The controller's next broker id for one group. ``read`` → the id; ``cas`` (APPLY_BROKER_ID with
    ``arg``) → True when it was the next id (the register moves on), False when it was refused."""

    def __init__(self, initial=1):
        self.initial = initial

    def init(self):
        return self.initial

    def step(self, state, op):
        if op.kind == "read":
            return (op.result is None or op.result == state), state
        if op.kind == "cas":
            took = op.arg == state
            if op.result is None:
                return True, state + 1 if took else state
            return op.result == took, state + 1 if took else state
        raise ValueError("CasRegister has no %r" % op.kind)


class GrowOnlySet:
    """``add`` x → ok; ``read`` → the frozenset so far."""

    def init(self):
        return frozenset()

    def step(self, state, op):
        if op.kind == "add":
            return True, state | {op.arg}
        if op.kind == "read":
            return (op.result is None or frozenset(op.result) == state), state
        raise ValueError("GrowOnlySet has no %r" % op.kind)


@dataclass
class Verdict:
    linearizable: bool
    operations: int
    explored: int
    #: when not linearizable: the longest prefix of determinate operations that could be ordered
    best: list = field(default_factory=list)

    def __bool__(self):
        return self.linearizable


def check(history, model, limit=2_000_000):
    """A Verdict for ``history`` (Ops of one key) against ``model``; ``limit`` bounds the states tried."""
    ops = sorted(history, key=lambda op: (op.call, op.ret))
    n = len(ops)
    determinate = 0
    for i, op in enumerate(ops):
        if op.determinate:
            determinate |= 1 << i
    refuted = set()
    explored = 0
    best = 0
    best_path = []
    # iterative depth-first search: (done mask, state, path, candidates still to try)
    stack = [(0, model.init(), [], None)]
    while stack:
        done, state, path, candidates = stack.pop()
        if done & determinate == determinate:
            return Verdict(True, n, explored)
        if candidates is None:
            key = (done, state)
            if key in refuted:
                continue
            refuted.add(key)
            explored += 1
            if explored > limit:
                raise RuntimeError("linearizability search gave up after %d states" % limit)
            horizon = min((ops[i].ret for i in range(n) if not done >> i & 1 and ops[i].determinate),
                          default=INDETERMINATE)
            candidates = [i for i in range(n) if not done >> i & 1 and ops[i].call <= horizon]
        if not candidates:
            if bin(done & determinate).count("1") > best:
                best = bin(done & determinate).count("1")
                best_path = list(path)
            continue
        i = candidates.pop()
        stack.append((done, state, path, candidates))
        ok, after = model.step(state, ops[i])
        if ok:
            stack.append((done | 1 << i, after, path + [i], None))
    return Verdict(False, n, explored, [ops[i] for i in best_path])


def check_keys(history, model_for):
    """Check each key's operations on its own; {key: Verdict}."""
    keys = {}
    for op in history:
        keys.setdefault(op.key, []).append(op)
    return {key: check(ops, model_for(key)) for key, ops in keys.items()}
