"""The one registry of probe groups: the worker, the probe's command line and ``accelenv probe`` read it.

Adding a group is one entry here and one module holding its ``plan``. Each entry says:

- ``name``: the group's name (the ``group`` of its checks, ``--checks`` takes it);
- ``plan``: ``"module:function"``; the function takes the probe context (``detect``'s also the host facts)
  and returns the group's checks; it is imported only when the group runs;
- ``own_worker``: run in a worker of its own, beside the shared one (OpInfo's imports change global torch
  flags; torch.compile leaves dynamo and inductor state behind; each costs seconds a crash-restarted worker
  would repeat; distributed waits seconds for its rank processes to start torch, time the shared worker
  spends on other groups meanwhile);
- ``alone``: run in a worker of its own after every other worker has finished, with all the cores (perf:
  timings taken while other workers share the cores measure the sharing);
- ``traced``: run under the breadcrumb dispatch mode (dynamo traces Python, and a mode in its way changes
  what it compiles, so compile runs untraced, its eager references inside ``ctx.traced()``; blocked ops are
  refused in every group at the device's kernel, ``probes.harness.kernel_block``);
- ``default``: part of the default suite; ``False`` groups run only when ``--checks`` names them;
- ``summary``: ``"module:function"`` turning the group's entries into the report's ``summary.groups[name]``
  (the group's totals are part of the report, not a check), or None.

``REQUIRED`` names the groups whose checks must all pass for the run to be ok: a device that cannot complete
the smoke training step or the models fails the run whatever else passed (``unsupported`` there is failing
too). ``FAILING_STATUSES`` are the statuses that fail a check anywhere. The service keeps its own copy of
both (``compat_service.domain.evidence.status``); a test pins them equal.
"""

import importlib


class Group(object):
    __slots__ = ("name", "plan", "own_worker", "alone", "traced", "default", "summary", "with_facts")

    def __init__(self, name, plan, own_worker=False, traced=True, default=True, summary=None, with_facts=False,
                 alone=False):
        self.name = name
        self.plan = plan
        self.own_worker = own_worker or alone
        self.alone = alone
        self.traced = traced
        self.default = default
        self.summary = summary
        self.with_facts = with_facts

    def plan_function(self):
        return _load(self.plan)

    def summary_function(self):
        return _load(self.summary) if self.summary else None


def _load(spec):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


#: in report order
GROUPS = (
    Group("detect", "probes.checks.detect:plan", with_facts=True),
    Group("smoke", "probes.checks.smoke:plan"),
    Group("models", "probes.checks.models:plan"),
    Group("ops", "probes.checks.ops:plan"),
    Group("opinfo", "probes.checks.opinfo:plan", own_worker=True, summary="probes.checks.opinfo:group_summary"),
    Group("compile", "probes.checks.compile_stages:plan", own_worker=True, traced=False),
    Group("runtime", "probes.checks.runtime_api:plan"),
    Group("privateuse1", "probes.checks.privateuse1:plan"),
    Group("allocator", "probes.checks.allocator:plan"),
    Group("amp", "probes.checks.amp:plan"),
    Group("distributed", "probes.checks.distributed:plan", own_worker=True),
    Group("perf", "probes.checks.perf:plan", traced=False, alone=True),
)
BY_NAME = dict((g.name, g) for g in GROUPS)
NAMES = tuple(g.name for g in GROUPS)
DEFAULT = tuple(g.name for g in GROUPS if g.default)
OWN_WORKER = tuple(g.name for g in GROUPS if g.own_worker)
ALONE = tuple(g.name for g in GROUPS if g.alone)
UNTRACED = tuple(g.name for g in GROUPS if not g.traced)

#: statuses that fail a check, in every group
FAILING_STATUSES = ("failed", "timeout", "crashed", "error")
#: groups where every check must pass (``unsupported`` fails here: the device cannot train)
REQUIRED = ("smoke", "models")


def is_failing(group, status):
    """True when a check of ``group`` with ``status`` makes the run not ok."""
    return status in FAILING_STATUSES or (group in REQUIRED and status == "unsupported")
