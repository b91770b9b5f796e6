"""What a check is, and the shape of its outcome (the ``checks[]`` entries of the report).

A check is an id, a group and a function of the probe context. The function returns an ``Outcome``; an
exception escaping it becomes status ``error`` (a probe bug or an unexpected failure), never a crash of
the suite.
"""

from probes.checks import registry

GROUPS = registry.NAMES  # the groups and their properties live in ``probes.checks.registry``
STATUSES = ("passed", "failed", "unsupported", "skipped", "timeout", "crashed", "error")
BAD_STATUSES = registry.FAILING_STATUSES
MAX_DETAIL = 4000
MAX_DATA_KEYS = 64


class BlockedOp(RuntimeError):
    """An op that hung or crashed earlier in this suite; not called again (raised by the harness's dispatch mode)."""

    def __init__(self, op, why):
        RuntimeError.__init__(self, "not run: %s %s" % (op, why))
        self.op = op


class Check(object):
    __slots__ = ("id", "group", "run", "timeout")

    def __init__(self, check_id, group, run, timeout=None):
        self.id = check_id
        self.group = group
        self.run = run
        self.timeout = timeout  # seconds; None: the suite's --timeout


class Outcome(object):
    __slots__ = ("status", "detail", "data")

    def __init__(self, status, detail=None, **data):
        if status not in STATUSES:
            raise ValueError("unknown check status %r" % status)
        self.status = status
        self.detail = detail
        self.data = data


def passed(detail=None, **data):
    return Outcome("passed", detail, **data)


def failed(detail, **data):
    return Outcome("failed", detail, **data)


def skipped(reason, **data):
    return Outcome("skipped", reason, **data)


def unsupported(detail, **data):
    return Outcome("unsupported", detail, **data)


def result_entry(check_id, group, status, duration_s, detail=None, data=None):
    """One ``checks[]`` entry, clipped to the report's limits."""
    data = dict(data or {})
    if len(data) > MAX_DATA_KEYS:
        data = dict(list(data.items())[:MAX_DATA_KEYS])
    if detail is not None:
        detail = str(detail)[:MAX_DETAIL]
    return {
        "id": check_id,
        "group": group,
        "status": status,
        "duration_s": round(max(0.0, float(duration_s)), 6),
        "detail": detail,
        "data": data,
    }
