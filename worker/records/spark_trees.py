"""Spark's plan and expression trees, read once through py4j into `PlanNode`s.

`transform.sql` arrives over REST, and Spark takes trees of it far beyond what a walk by
recursion survives: `NOT` a thousand times is a thousand nested expressions, past
Python's recursion limit. Nor can a tree be read whole as Spark's JSON of it
(`TreeNode.toJSON`): that writes a child held in an `Option` or a tuple (a `CASE`'s
branches and its `ELSE`) a second time beside the child itself, so its size doubles with
each nested `CASE`, and thirty of them fill the JVM's heap. And the parser shares nodes:
a simple `CASE key WHEN ...` holds the same `key` in every branch, so a `CASE` on a
`CASE` on a `CASE` doubles the tree each time without doubling the text.

So a tree is read node by node, with a stack of its own, and each JVM object once (an
`IdentityHashMap` on the JVM side remembers which): a node two parents share is one
`PlanNode` with two parents, and what reads a `PlanNode` tree visits each node once
(`each_once`). Reading costs a few py4j calls per JVM object, never one per path to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from py4j.java_gateway import JavaObject

_QUERY_PLAN: Final = "org.apache.spark.sql.catalyst.plans.QueryPlan"
_EXPRESSION: Final = "org.apache.spark.sql.catalyst.expressions.Expression"
_PLAN_EXPRESSION: Final = "org.apache.spark.sql.catalyst.expressions.PlanExpression"
"""An expression that holds a plan of its own (a subquery), which is not its child."""
_CATALYST: Final = "org.apache.spark.sql.catalyst."


@dataclass(frozen=True, eq=False)
class PlanNode:
    """One node of a Spark tree: its class, whether it is an operator (anything but an
    expression), what the checks read of it (`fields`), its children in Spark's order,
    and the trees it holds besides them (an operator's expressions and subqueries, a
    subquery's plan). Compared and hashed by identity: a tree may be far larger than its
    nodes."""

    cls: str
    operator: bool
    fields: Mapping[str, Any] = field(default_factory=dict)
    children: tuple[PlanNode, ...] = field(default=(), repr=False)
    held: tuple[PlanNode, ...] = field(default=(), repr=False)

    @property
    def name(self) -> str:
        return self.cls.rsplit(".", 1)[-1]


def each_once(
    roots: Iterable[PlanNode], below: Callable[[PlanNode], Iterable[PlanNode]]
) -> Iterator[PlanNode]:
    """Every node from `roots` down through `below`, in pre-order, each once however
    many parents share it, with a stack of its own."""
    stack = list(roots)[::-1]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            yield node
            stack.extend(reversed(tuple(below(node))))


def everything_below(node: PlanNode) -> tuple[PlanNode, ...]:
    return (*node.children, *node.held)


def _items(seq: Any) -> list[Any]:
    """A Scala Seq through py4j."""
    return [seq.apply(index) for index in range(seq.size())]


def _text(value: Any) -> str | None:
    """A JVM value as Spark's JSON of a literal writes it: its `toString`."""
    if value is None:
        return None
    return str(value.toString()) if isinstance(value, JavaObject) else str(value)


_FIELDS: Final[Mapping[str, Callable[[Any], Mapping[str, Any]]]] = {
    "expressions.Literal": lambda node: {
        "value": _text(node.value()),
        "dataType": str(node.dataType().typeName()),
    },
    "plans.logical.View": lambda node: {
        "isTempView": bool(node.isTempView()),
        "table": str(node.desc().identifier().table()),
    },
    "analysis.UnresolvedRelation": lambda node: {
        "parts": [str(part) for part in _items(node.multipartIdentifier())]
    },
    "analysis.UnresolvedFunction": lambda node: {
        "function": ".".join(str(part) for part in _items(node.nameParts()))
    },
    "analysis.UnresolvedGenerator": lambda node: {"function": str(node.name().unquotedString())},
    "plans.logical.UnresolvedWith": lambda node: {
        "ctes": [str(cte._1()) for cte in _items(node.cteRelations())]
    },
    "plans.logical.WithWindowDefinition": lambda node: {
        "windows": _strings(node.windowDefinitions().keysIterator())
    },
    "expressions.UnresolvedWindowExpression": lambda node: {
        "window": str(node.windowSpec().name())
    },
}
"""What the checks read of a node besides its class and its trees, by the class's name
under `org.apache.spark.sql.catalyst.`. A node that names definitions (`ctes`,
`windows`) holds their trees first among its `held`, in the same order."""


def _strings(iterator: Any) -> list[str]:
    """A Scala Iterator's items, as text."""
    items = []
    while iterator.hasNext():
        items.append(str(iterator.next()))
    return items


class _Kind(NamedTuple):
    """What a class of node is, as far as reading it goes."""

    expression: bool
    holds_plan: bool
    """A `PlanExpression`: it holds a subquery's plan besides its children."""
    plan: bool
    """A `QueryPlan`, which has expressions."""
    own_inner_children: bool
    """Its inner children are not only its subqueries (which are read through the
    expressions that hold them): `QueryPlan`'s own `innerChildren` are those subqueries,
    and reading them twice would count each subquery twice, at every level of nesting."""


class SparkTreeReader:
    """Reads plans of one JVM; `opaque` classes are read without what is below them (a
    view's own plan is the framework's, not the query's)."""

    def __init__(self, jvm: Any, opaque: frozenset[str] = frozenset()) -> None:
        self._jvm = jvm
        self._opaque = opaque
        self._kinds = tuple(
            jvm.java.lang.Class.forName(name)
            for name in (_EXPRESSION, _PLAN_EXPRESSION, _QUERY_PLAN)
        )
        self._no_parameters = jvm.java.lang.reflect.Array.newInstance(
            jvm.java.lang.Class.forName("java.lang.Class"), 0
        )
        self._class_name = jvm.org.apache.commons.lang3.ClassUtils.getName
        """An object's class name in one call (`getClass().getName()` takes two)."""
        self._known: dict[str, _Kind] = {}

    def _kind(self, handle: Any, cls: str) -> _Kind:
        if cls not in self._known:
            klass = handle.getClass()
            expression, holds_plan, plan = (bool(k.isAssignableFrom(klass)) for k in self._kinds)
            inner = klass.getMethod("innerChildren", self._no_parameters).getDeclaringClass()
            own = not plan or str(inner.getName()) != _QUERY_PLAN
            self._known[cls] = _Kind(expression, holds_plan, plan, own)
        return self._known[cls]

    def read(self, root: Any) -> PlanNode:
        """`root` (a py4j handle of a plan or an expression) and everything below it."""
        memo = self._jvm.java.util.IdentityHashMap()
        memo.put(root, 0)
        handles = [root]
        shapes: dict[int, tuple[str, bool, Mapping[str, Any], list[int], list[int]]] = {}
        built: dict[int, PlanNode] = {}

        def index(handle: Any) -> int:
            prior = memo.putIfAbsent(handle, len(handles))
            if prior is not None:
                return int(prior)
            handles.append(handle)
            return len(handles) - 1

        stack: list[tuple[bool, int]] = [(False, 0)]
        while stack:
            leaving, at = stack.pop()
            if leaving:
                cls, operator, fields, children, held = shapes.pop(at)
                built[at] = PlanNode(
                    cls,
                    operator,
                    fields,
                    tuple(built[i] for i in children),
                    tuple(built[i] for i in held),
                )
            elif at not in built and at not in shapes:
                cls, operator, fields, below, besides = self._shape(handles[at])
                children, held = [index(h) for h in below], [index(h) for h in besides]
                shapes[at] = (cls, operator, fields, children, held)
                stack.append((True, at))
                stack.extend((False, i) for i in reversed(children + held) if i not in built)
        return built[0]

    def _shape(self, handle: Any) -> tuple[str, bool, Mapping[str, Any], list[Any], list[Any]]:
        """What `read` needs of a node: its class, whether it is an operator, its
        fields, its children and the trees it holds (not yet read)."""
        cls = str(self._class_name(handle, ""))
        kind = self._kind(handle, cls)
        read_fields = (
            _FIELDS.get(cls.removeprefix(_CATALYST)) if cls.startswith(_CATALYST) else None
        )
        fields = read_fields(handle) if read_fields is not None else {}
        if cls in self._opaque:
            return cls, not kind.expression, fields, [], []
        children = _items(handle.children())
        if kind.expression:
            return cls, False, fields, children, [handle.plan()] if kind.holds_plan else []
        held = self._own_expressions(handle, cls) if kind.plan else []
        if kind.own_inner_children:
            held += _items(handle.innerChildren())
        return cls, True, fields, children, held

    def _own_expressions(self, node: Any, cls: str) -> list[Any]:
        """An operator's expressions, and those the parser keeps elsewhere: a `WINDOW`
        clause's definitions (first, in the order of their names) and a hint's
        parameters."""
        expressions = _items(node.expressions())
        name = cls.rsplit(".", 1)[-1]
        if name == "WithWindowDefinition":
            definitions = []
            values = node.windowDefinitions().valuesIterator()
            while values.hasNext():
                definitions.append(values.next())
            expressions = [*definitions, *expressions]
        elif name == "UnresolvedHint":
            expression = self._kinds[0]
            expressions += [p for p in _items(node.parameters()) if expression.isInstance(p)]
        return expressions
