"""The install commands of an answer (``pip install ...``, ``uv pip install ...``), one per index, then the stack's.

`resolution_to_json` writes them into every answer (its ``install`` field) and `install_formats` prints them in
the pip, uv, conda and docker formats; the order rules are in `install_formats`' docstring. This module reads an
answer through the fields it needs (`CommandInput`), so the answer's module imports it and not the other way
round: the resolution and its formats form no import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class PinFields(Protocol):
    """What a command reads of a torch-side pin (`resolution.Pin`)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def index_url(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...


class StackPinFields(Protocol):
    """What a command reads of a stack pin (`resolution.StackPin`)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def origin(self) -> str: ...
    @property
    def url(self) -> str | None: ...
    @property
    def no_deps(self) -> bool: ...
    @property
    def extras(self) -> Sequence[str]: ...
    @property
    def builds(self) -> str | None: ...


class CommandInput(Protocol):
    """What the commands read of an answer (a `resolution.Resolution`, or the fields the JSON form keys on)."""

    @property
    def packages(self) -> Sequence[PinFields]: ...
    @property
    def index_url(self) -> str | None: ...
    @property
    def index_option(self) -> str: ...
    @property
    def no_deps(self) -> Sequence[str]: ...
    @property
    def stack(self) -> Sequence[StackPinFields]: ...


def spec(pin: PinFields) -> str:
    if pin.url is not None:
        return f"{pin.name} @ {pin.url}"  # a direct reference (PEP 508): NVIDIA's JetPack wheels
    return f"{pin.name}=={pin.version}"


def _arg(pin: PinFields) -> str:
    """`spec` as one shell word (a direct reference has spaces)."""
    return f'"{spec(pin)}"' if pin.url is not None else spec(pin)


def torch_pins(res: CommandInput) -> list[PinFields]:
    return [p for p in res.packages if p.index_url is not None and p.index_url == res.index_url]


def _default_pins(res: CommandInput) -> list[PinFields]:
    return [p for p in res.packages if p.index_url is None]


def pip_commands(res: CommandInput, tool: str = "pip install") -> list[str]:
    """One command per index: torch packages first, then what comes from the default index."""
    index = "".join(f" {line}" for line in index_lines(res))
    commands = [_torch_command(res, tool, index), *_other_commands(res, tool, index)]
    if res.stack:
        commands = _stack_commands(res, tool, commands)
    return commands


def _torch_command(res: CommandInput, tool: str, index: str) -> str:
    """The first command: every package with the default index, else the torch packages with theirs."""
    if res.index_url is None:
        pins = [p for p in res.packages if p.name not in res.no_deps]
        return f"{tool} " + " ".join(_arg(p) for p in pins)
    pins = [p for p in torch_pins(res) if p.name not in res.no_deps]
    return f"{tool} " + " ".join(spec(p) for p in pins) + index


def _other_commands(res: CommandInput, tool: str, index: str) -> list[str]:
    """After the first: the ``--no-deps`` packages from torch's index, then what comes from the default index."""
    commands = []
    no_deps = [p for p in res.packages if p.name in res.no_deps]
    if no_deps:
        commands.append(f"{tool} --no-deps " + " ".join(spec(p) for p in no_deps) + index)
    rest = [p for p in _default_pins(res) if p.name not in res.no_deps] if res.index_url else []
    if rest:
        commands.append(f"{tool} " + " ".join(spec(p) for p in rest))
    return commands


def stack_spec(pin: StackPinFields) -> str:
    if pin.origin == "url" and pin.url:
        return f'"{pin.name} @ {pin.url}"'
    if pin.extras:  # quoted: a shell would read the brackets as a glob
        return f'"{pin.name}[{",".join(pin.extras)}]=={pin.version}"'
    return f"{pin.name}=={pin.version}"


def source_built(pin: StackPinFields) -> bool:
    """Whether the pin (an sdist) or a distribution its extras pull builds against the installed torch: installed
    after torch, without build isolation."""
    return pin.origin == "sdist" or pin.builds is not None


def find_links(pins: Sequence[StackPinFields]) -> list[str]:
    """The wheel pages (``--find-links``) of the pins that come from their project's own pages, in order."""
    return list(dict.fromkeys(p.url for p in pins if p.origin == "find-links" and p.url))


def _stack_commands(res: CommandInput, tool: str, commands: list[str]) -> list[str]:
    """The ecosystem packages after torch, never replacing it (see `install_formats`' docstring)."""
    plain = [p for p in res.stack if not source_built(p) and not p.no_deps]
    if plain:
        commands = _with_plain_stack(res, tool, commands, plain)
    return commands + after_torch(res, tool)


def _with_plain_stack(res: CommandInput, tool: str, commands: list[str], plain: list[StackPinFields]) -> list[str]:
    """The stack's packages that one pip run installs: in torch's one command when it has the default index
    alone, else in a command of their own that holds every torch pin."""
    specs = " ".join([*(stack_spec(p) for p in plain), *(f"--find-links {u}" for u in find_links(plain))])
    if res.index_url is None and not res.no_deps and len(commands) == 1:
        return [f"{commands[0]} {specs}"]
    held = " ".join(spec(p) for p in res.packages if p.name not in res.no_deps)
    return [*commands, f"{tool} {held} {specs}"]


def after_torch(res: CommandInput, tool: str) -> list[str]:
    """The commands that follow the installs a file can state: each source build without build isolation, each
    ``--no-deps`` package with, next, its other requirements (see `install_formats`' docstring)."""
    held = " ".join(spec(p) for p in res.packages if p.name not in res.no_deps)
    commands = []
    for pin in res.stack:
        if source_built(pin):
            commands.append(f"{tool} --no-build-isolation {held} {stack_spec(pin)}")
        elif pin.no_deps:
            commands.append(f"{tool} --no-deps {stack_spec(pin)}")
            commands += _requirements_of(res, pin, tool, held)
    return commands


def _requirements_of(res: CommandInput, pin: StackPinFields, tool: str, held: str) -> list[str]:
    """A ``--no-deps`` package's own requirements but the pins of the answer (torch and what the stack installs),
    read from its installed metadata (``importlib.metadata``: markers kept, extras left out), then installed with
    every pin of the answer held."""
    skip = sorted({"torch", *(p.name for p in res.packages), *(p.name for p in res.stack)})
    names = ", ".join(repr(name) for name in skip)
    listing = f"{pin.name}-requirements.txt"
    script = (
        "import re; from importlib.metadata import requires; "
        f"skip = {{{names}}}; "
        f"print(*[r for r in requires({pin.name!r}) or [] if 'extra ==' not in r and "
        "re.split(r'[^A-Za-z0-9._-]', r, maxsplit=1)[0].lower().replace('_', '-') not in skip], sep='\\n')"
    )
    return [f'python -c "{script}" > {listing}', f"{tool} -r {listing} {held}".rstrip()]


def index_lines(res: CommandInput) -> list[str]:
    # The one index rule: every format prints the resolution's `index_option` as is (the resolver decides
    # it: the release's own option, --extra-index-url when packages also come from the default index).
    return [] if res.index_url is None else [f"{res.index_option} {res.index_url}"]
