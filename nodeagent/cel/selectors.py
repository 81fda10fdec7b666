"""CEL device selectors with the Kubernetes DRA variables, on the common-expression-language package.

One responsibility: compile a selector expression once (bounded LRU by text) and evaluate it
against one device, cheaply. It does no I/O and knows nothing about claims or the allocator.

The variable is `device`, shaped as in Kubernetes:
  device.driver                      string
  device.attributes["<domain>"].x    string | int | bool | version string
  device.capacity["<domain>"].x      quantity
An attribute or capacity named "domain/x" lives under its domain; a bare name "x" belongs to
the driver's domain (as the ResourceSlice API defines it).

Quantities. The package converts only plain values (no custom object types), so a quantity is
carried as an int in base units (bytes, counts; rounded up like nodeagent.util.quantity.canonical
for a non-cpu resource), and the Kubernetes quantity library is registered as functions over
ints: quantity(), isQuantity(), compareTo(), isGreaterThan(), isLessThan(), asInteger(),
isInteger(), asApproximateFloat(), sign(), add(), sub(). `x.compareTo(y)` is CEL sugar for
`compareTo(x, y)`, so the upstream spelling works unchanged.

Versions. A version attribute is a `Version` (a str subclass, so the rest of nodeagent treats it
as text) and reaches CEL as a distinct value type (bytes, which no DRA attribute otherwise has),
as Kubernetes's semver type is distinct from string: semver("1.0.0") builds one, compareTo()/
isGreaterThan()/isLessThan()/major()/minor()/patch() work on versions only, and handing them a
string is the runtime error "no such overload" upstream reports. Comparisons follow Kubernetes's
Semver too (`v == "1.0.0"` is "no such overload", `"1.0.0" == v` false, `v != "1.0.0"` true,
`v == semver("1.0.0")` by precedence, `<` on a version "no such overload: _<_"): the package
has no operator hooks, so relations.py rewrites the relations of a selector, and that program
runs for devices with a version attribute (or selectors that call semver()).
Known leniency: because a quantity is an int here, `memory > 5` is accepted where Kubernetes's
type checker would refuse it; every expression Kubernetes accepts behaves the same.

Speed. Building a cel.Context converts the device to CEL values (~50 us); evaluating a compiled
program against a reused Context costs 1-5 us. So a DeviceView builds its Context once, lazily,
and keeps it; and, since a view is immutable and evaluation is pure, it also memoizes each
expression's outcome, which makes re-evaluation for the next pod a dict lookup. Devices of
equal content share one view (shared_view), so a fresh node's devices cost lookups too.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nodeagent.cel import gostrings as cel_gostrings
from nodeagent.cel import relations as cel_relations
from nodeagent.errors import ValidationError
from nodeagent.util import quantity as quantities

if TYPE_CHECKING:
    # Imported where used: the package loads its CLI (prompt_toolkit) too, 30 MiB that a process
    # which never evaluates a selector (bench/nodes.py's thousand nodes) need not hold.
    import cel

CACHE_SIZE = 4096
"""Compiled expressions kept (LRU by expression text)."""

class Version(str):
    """A version attribute's value (semver 2.0 text): kept apart from strings, as in Kubernetes."""

    __slots__ = ()


AttributeValue = str | int | bool | tuple[str | int | bool, ...]
"""A tuple is a list-type attribute (KEP-5491): a list in CEL."""


class CelError(ValidationError):
    """A selector does not compile; the message is the compiler's."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(path, message)


class CelRuntimeError(CelError):
    """A selector failed while evaluated against one device (missing attribute, type error)."""


# --- Kubernetes quantity and semver libraries, over ints and version strings -------------------

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def quantity_value(text: str) -> int:
    """A quantity literal in base units, rounded up (the CEL-side value of a quantity)."""
    return quantities.canonical("", text)


def _quantity(text: object) -> int:
    if not isinstance(text, str):
        raise TypeError(f"quantity() takes a string, got {type(text).__name__}")
    return quantity_value(text)


def _is_quantity(text: object) -> bool:
    try:
        quantities.parse(text)
    except quantities.QuantityError:
        return False
    return isinstance(text, str)


SemverKey = tuple[int, int, int, tuple[tuple[int, int | str], ...]]


def _semver_key(text: str) -> SemverKey:
    """Comparable key with semver 2.0 precedence (build metadata ignored)."""
    m = _SEMVER.match(text)
    if m is None:
        raise ValueError(f"invalid semantic version {text!r}")
    if m.group(4):
        # (0, ...) sorts before (1, 0): a prerelease precedes its release.
        parts = tuple((0, int(p)) if p.isdigit() else (1, p) for p in m.group(4).split("."))
        pre: tuple[tuple[int, int | str], ...] = ((0, 0), *parts)
    else:
        pre = ((1, 0),)
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), pre


def _compare(a: object, b: object) -> int:
    if _is_int(a) and _is_int(b):
        assert isinstance(a, int) and isinstance(b, int)
        return (a > b) - (a < b)
    if isinstance(a, bytes) and isinstance(b, bytes):
        x, y = _semver_key(a.decode()), _semver_key(b.decode())
        return (x > y) - (x < y)
    raise TypeError(f"no such overload: compareTo({_type_name(a)}, {_type_name(b)})")


def _type_name(value: object) -> str:
    if isinstance(value, bytes):
        return "semver"
    return {bool: "bool", int: "int", str: "string", float: "double"}.get(type(value), type(value).__name__)


def _semver(text: object) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"no such overload: semver({_type_name(text)})")
    _semver_key(text)
    return text.encode()


def _is_semver(text: object) -> bool:
    return isinstance(text, str) and _SEMVER.match(text) is not None


def _int_arg(name: str, value: object) -> int:
    if not _is_int(value):
        raise TypeError(f"no such overload: {name}({type(value).__name__})")
    assert isinstance(value, int)
    return value


def _version_part(index: int) -> Callable[[object], int]:
    name = ("major", "minor", "patch")[index]

    def part(version: object) -> int:
        if not isinstance(version, bytes):
            raise TypeError(f"no such overload: {name}({_type_name(version)})")
        major, minor, patch, _ = _semver_key(version.decode())
        return (major, minor, patch)[index]

    return part


LIST_VALUES_MAX = 48  # ResourceSliceMaxAttributeValuesPerDevice


def _includes(target: object, arg: object) -> bool:
    """upstream's includesFunc (DRAListTypeAttributes): `x.includes(v)` is membership for a list
    attribute and equality for a scalar one, so a selector works for either form."""
    if isinstance(target, list):
        if len(target) > LIST_VALUES_MAX:
            raise ValueError(f"'includes' function cannot be applied to lists longer than {LIST_VALUES_MAX} values")
        return any(type(item) is type(arg) and item == arg for item in target)
    return type(target) is type(arg) and target == arg


def _semver_equal(a: bytes, b: bytes) -> bool:
    return _semver_key(a.decode()) == _semver_key(b.decode())


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "asInteger": lambda q: _int_arg("asInteger", q),
    "isInteger": lambda q: _int_arg("isInteger", q) is not None,
    "asApproximateFloat": lambda q: float(_int_arg("asApproximateFloat", q)),
    "sign": lambda q: (_int_arg("sign", q) > 0) - (q < 0),
    "add": lambda a, b: _int_arg("add", a) + _int_arg("add", b),
    "sub": lambda a, b: _int_arg("sub", a) - _int_arg("sub", b),
    "semver": _semver,
    "isSemver": _is_semver,
    "includes": _includes,
    "major": _version_part(0),
    "minor": _version_part(1),
    "patch": _version_part(2),
    **cel_relations.functions(_semver_equal),
    **cel_gostrings.FUNCTIONS,
}
"""Functions registered on every device context (beyond CEL's standard library)."""

_STRING_EXTENSIONS = ("charAt", "indexOf", "lastIndexOf", "substring", "replace", "split", "join",
                      "lowerAscii", "upperAscii", "trim", "reverse", "strings.quote")
_STANDARD = ("size", "int", "uint", "double", "string", "bytes", "bool", "timestamp", "duration", "dyn",
             "type", "contains", "startsWith", "endsWith", "matches", "getDate", "getDayOfMonth",
             "getDayOfWeek", "getDayOfYear", "getFullYear", "getHours", "getMilliseconds", "getMinutes",
             "getMonth", "getSeconds")
KNOWN_FUNCTIONS = frozenset((*_STANDARD, *_STRING_EXTENSIONS, *FUNCTIONS))

_COMPREHENSION_VAR = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_LITERAL_ARG = re.compile(r"\b(quantity|semver)\s*\(\s*(\"[^\"\\]*\"|'[^'\\]*')\s*\)")
_PY_CALL = re.compile(r"^Function '[^']*' error: Python function call failed: \w+: ")
_PARSE_PREFIX = re.compile(r"^Failed to parse expression .*?: (?=ERROR)", re.DOTALL)


# --- devices -----------------------------------------------------------------------------------


def split_name(driver: str, name: str) -> tuple[str, str]:
    """("domain", "name") of an attribute or capacity name; a bare name is in the driver's domain."""
    domain, sep, short = name.rpartition("/")
    return (domain, short) if sep else (driver, name)


def qualified(driver: str, name: str) -> str:
    """The fully qualified "domain/name" form of an attribute or capacity name."""
    domain, short = split_name(driver, name)
    return f"{domain}/{short}"


class DeviceView:
    """One device as CEL sees it. Immutable after construction; holds its Context and results."""

    __slots__ = ("_context", "_results", "allow_multiple_allocations", "attributes", "capacity", "driver",
                 "has_versions")

    def __init__(
        self,
        driver: str,
        attributes: Mapping[str, AttributeValue],
        capacity: Mapping[str, int],
        allow_multiple_allocations: bool = False,
    ) -> None:
        self.driver = driver
        # device.allowMultipleAllocations (DRAConsumableCapacity, on by default since 1.36):
        # the device's field, false when unset, as upstream's CEL environment declares it
        self.allow_multiple_allocations = allow_multiple_allocations
        self.attributes = _by_domain(driver, attributes)
        self.capacity = _by_domain(driver, capacity)
        self.has_versions = any(isinstance(v, Version) or (isinstance(v, tuple) and any(
            isinstance(x, Version) for x in v)) for v in attributes.values())
        self._context: cel.Context | None = None
        self._results: dict[str, bool | str] = {}

    def context(self) -> cel.Context:
        if self._context is None:
            import cel
            from cel.stdlib import add_stdlib_to_context

            ctx = cel.Context(
                variables={"device": {"driver": self.driver, "attributes": self.attributes,
                                      "capacity": self.capacity,
                                      "allowMultipleAllocations": self.allow_multiple_allocations}},
                functions=dict(FUNCTIONS),
            )
            add_stdlib_to_context(ctx, ["strings"])
            self._context = ctx
        return self._context


VIEW_POOL_SIZE = 8192
"""Distinct device contents whose views are shared (cleared wholesale past the bound: a Device
keeps the view it got, so a clear only ends sharing for devices seen later)."""

_views: dict[tuple[Any, ...], DeviceView] = {}


def _tagged(name: str, value: AttributeValue) -> tuple[Any, ...]:
    """The attribute with its value's type: True == 1 and Version("1.0.0") == "1.0.0" must not
    share a view. A list attribute holds scalars only."""
    cls = value.__class__
    if cls is tuple:
        return (name, cls, tuple((v.__class__, v) for v in value))  # type: ignore[union-attr]
    return (name, cls, value)


def shared_view(driver: str, attributes: Mapping[str, AttributeValue], capacity: Mapping[str, int],
                allow_multiple_allocations: bool = False) -> DeviceView:
    """The one DeviceView for devices of equal content (driver, attributes, capacity, multi-allocation).

    Evaluation is a pure function of exactly these, so devices that publish the same
    attributes (every GPU of a model, on every node) share one CEL context and one memo of
    selector outcomes: the first pod that looks at a fresh node pays a dict lookup per device
    instead of ~50 us to build a context and a program run per selector."""
    key = (driver, tuple(sorted([_tagged(k, v) for k, v in attributes.items()])), tuple(sorted(capacity.items())),
           allow_multiple_allocations)
    found = _views.get(key)
    if found is None:
        if len(_views) >= VIEW_POOL_SIZE:
            _views.clear()
        found = _views[key] = DeviceView(driver, attributes, capacity, allow_multiple_allocations)
    return found


def _cel_value(value: Any) -> Any:
    if isinstance(value, Version):
        return value.encode()
    if isinstance(value, tuple):
        return [_cel_value(v) for v in value]
    return value


def _by_domain(driver: str, values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    # The driver's own domain is always there, so a missing bare name reads "no such key: name".
    out: dict[str, dict[str, Any]] = {driver: {}}
    for name, value in values.items():
        domain, short = split_name(driver, name)
        out.setdefault(domain, {})[short] = _cel_value(value)
    return out


# --- compiled selectors ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CompiledSelector:
    """A compiled selector; `matches` evaluates it against one device."""

    expression: str
    program: cel.Program
    versioned: cel.Program | None = None
    """The program with version-aware relations (cel_relations), when the selector has any."""
    builds_versions: bool = False

    def evaluate(self, device: DeviceView) -> bool | str:
        """True/False, or the runtime error message (memoized on the view: it is immutable)."""
        results = device._results
        found = results.get(self.expression)
        if found is not None:
            return found
        program = self.program
        if self.versioned is not None and (device.has_versions or self.builds_versions):
            program = self.versioned
        try:
            value = program.execute(device.context())
        except KeyError as err:
            outcome: bool | str = f"no such key: {err.args[0] if err.args else err}"
        except (TypeError, ValueError, RuntimeError) as err:
            outcome = _first_sentence(_PY_CALL.sub("", str(err)))
        else:
            outcome = value if isinstance(value, bool) else (
                f"expression must evaluate to bool, got {type(value).__name__}")
        results[self.expression] = outcome
        return outcome

    def matches(self, device: DeviceView) -> bool:
        """Whether the device is selected; raises CelRuntimeError when evaluation fails."""
        outcome = self.evaluate(device)
        if isinstance(outcome, str):
            raise CelRuntimeError(outcome)
        return outcome


def _first_sentence(text: str) -> str:
    head, sep, _ = text.partition(". ")
    return head if sep else text.rstrip(".")


_cache: OrderedDict[str, CompiledSelector | CelError] = OrderedDict()


def compile_selector(expression: str) -> CompiledSelector:
    """Compile (or fetch from the LRU) one selector; raises CelError with the compiler's message."""
    found = _cache.get(expression)
    if found is not None:
        _cache.move_to_end(expression)
    else:
        found = _compile(expression)
        _cache[expression] = found
        if len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    if isinstance(found, CelError):
        raise CelError(found.detail)
    return found


def _compile(expression: str) -> CompiledSelector | CelError:
    if not expression.strip():
        return CelError("ERROR: <input>:1:1: expression is empty")
    import cel

    try:
        program = cel.compile(expression)
    except (ValueError, TypeError, RuntimeError) as err:
        return CelError(_PARSE_PREFIX.sub("", str(err)))
    bound = set(_COMPREHENSION_VAR.findall(expression))
    for name in program.variables():
        if name != "device" and name not in bound:
            return CelError(f"ERROR: <input>: undeclared reference to '{name}' (in container '')")
    for name in program.functions():
        if (name[:1] not in "_@!" and name not in KNOWN_FUNCTIONS) or name.startswith("__nodeagent"):
            return CelError(f"ERROR: <input>: undeclared reference to '{name}' (in container '')")
    for func, literal in _LITERAL_ARG.findall(expression):
        text = literal[1:-1]
        ok = _is_quantity(text) if func == "quantity" else _is_semver(text)
        if not ok:
            kind = "quantity" if func == "quantity" else "semantic version"
            return CelError(f"ERROR: <input>: {func}() argument is not a valid {kind}: {literal}")
    result = _probe_type(program)
    if result is not None:
        return CelError(f"must evaluate to bool or the unknown type, not {result}")
    versioned = None
    text = cel_relations.rewrite(expression)
    if text is not None:
        try:
            versioned = cel.compile(cel_gostrings.rewrite(text) or text)
        except (ValueError, TypeError, RuntimeError):  # keep the original program (see cel_relations)
            versioned = None
    return CompiledSelector(expression, cel_gostrings.executable(program, expression), versioned,
                            "semver" in expression)


def _probe_type(program: cel.Program) -> str | None:
    """The CEL type of a result that is certainly not bool, else None. There is no type checker in
    the package, so the program runs against a device with no attributes and no capacity: an
    expression that reads them fails there (its type is dyn, which Kubernetes accepts too), one
    that does not shows the type it always has (`1`, `device.driver`, `device.attributes`)."""
    import cel
    from cel.stdlib import add_stdlib_to_context

    ctx = cel.Context(variables={"device": {"driver": "", "attributes": {}, "capacity": {},
                                            "allowMultipleAllocations": False}},
                      functions=dict(FUNCTIONS))
    add_stdlib_to_context(ctx, ["strings"])
    try:
        value = program.execute(ctx)
    except (KeyError, TypeError, ValueError, RuntimeError):  # the type depends on the device
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return _type_name(value)


def cache_clear() -> None:
    """Forget every compiled expression (tests)."""
    _cache.clear()
