"""What an analysed `transform.sql` plan may hold, judged from Spark's JSON of it.

The text of a query says little about what it will do: a CTE may be named like a file
table, a function may be named through `IDENTIFIER('...')`, a `WINDOW` clause or a hint.
After Spark's analyzer, every name has been resolved to what will really run, so this is
where a query is judged: every relation it reads must be one of the task's own views,
every operator and expression must be on the allow-lists below, and functions that build
data from a count (`sequence`, `array_repeat`, `repeat`, ...) must be bounded by the
worker's limit, since one such call can fill the JVM heap that every task shares.

Pure: it reads the JSON that `TreeNode.toJSON` makes (one py4j call for the whole plan)
and returns the first problem as a sentence, so it is tested without Spark.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

EXPRESSIONS_PACKAGE: Final = "org.apache.spark.sql.catalyst.expressions."
"""Spark's built-in expressions live here (and in its subpackages); a user-defined
function, a Hive UDF or a connector's own expression does not."""
MAX_GENERATED_KEY: Final = "spark.sparkherd.sql.maxGeneratedElements"
"""The worker's bound on what one call of `sequence`, `array_repeat`, `repeat`, `lpad`,
... may build: a Spark setting of the worker (every `spark.*` key reaches its session)."""
DEFAULT_MAX_GENERATED: Final = 100_000
_LOGICAL: Final = "org.apache.spark.sql.catalyst.plans.logical."
RELATIONAL_OPERATORS: Final = frozenset(
    {
        "Aggregate",
        "Deduplicate",
        "Distinct",
        "Except",
        "Filter",
        "Generate",
        "GlobalLimit",
        "Intersect",
        "Join",
        "LateralJoin",
        "LocalLimit",
        "LocalRelation",
        "Offset",
        "OneRowRelation",
        "Project",
        "Repartition",
        "RepartitionByExpression",
        "Sample",
        "Sort",
        "SubqueryAlias",
        "Tail",
        "Union",
    }
)
"""Operators a query has both as Spark's parser writes it and once analysed."""
QUERY_PLAN_NODES: Final = frozenset(
    _LOGICAL + name
    for name in RELATIONAL_OPERATORS
    | {
        "CTERelationDef",
        "CTERelationRef",
        "Expand",
        "RebalancePartitions",
        "ResolvedHint",
        "View",
        "Window",
        "WithCTE",
    }
)
"""The analysed operators of a query over given views: relational operators, CTEs,
inline tables (`VALUES`, a one-row `SELECT`) and the views themselves. Nothing that reads
a table or a file is here: a view's own plan, below its `View` node, is not judged."""
USER_DEFINED: Final = frozenset(
    {
        "PythonUDAF",
        "PythonUDF",
        "PythonUDTF",
        "ScalaUDAF",
        "ScalaUDF",
        "UserDefinedGenerator",
    }
)
"""Expressions in Spark's package that run a function somebody supplied."""

_SIZE_ARGUMENT: Final = {
    "ArrayRepeat": ("array_repeat", 1),
    "BinaryPad": ("lpad/rpad", 1),
    "FormatNumber": ("format_number", 1),
    "RandStr": ("randstr", 0),
    "StringLPad": ("lpad", 1),
    "StringRPad": ("rpad", 1),
    "StringRepeat": ("repeat", 1),
    "StringSpace": ("space", 0),
}
"""Built-ins whose result is as large as one of their arguments says: the SQL name and
the argument's position among the expression's children."""
_INTEGER_TYPES: Final = frozenset({"byte", "short", "integer", "long"})
_FORMAT_SIZE: Final = re.compile(r"%(?:\d+\$)?[-#+ 0,(<]*(\d+)?(?:\.(\d+))?")
"""A `format_string` conversion: its width and precision are sizes too."""


@dataclass(frozen=True)
class PlanNode:
    """One node of a Spark tree (an operator or an expression), children rebuilt."""

    cls: str
    fields: Mapping[str, Any]
    children: tuple[PlanNode, ...]

    @property
    def name(self) -> str:
        return self.cls.rsplit(".", 1)[-1]


def trees(value: Any) -> Iterator[PlanNode]:
    """Every tree in a JSON value from `toJSON`: Spark writes a tree as a list of its
    nodes in pre-order, each with its `num-children`, and writes a field that holds
    other trees (a subquery's plan, a project list) as nested lists of them."""
    if isinstance(value, list):
        if value and all(isinstance(item, dict) and "class" in item for item in value):
            position = 0
            while position < len(value):
                node, position = _rebuild(value, position)
                yield node
        else:
            for item in value:
                yield from trees(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from trees(item)


def _rebuild(nodes: list[dict[str, Any]], position: int) -> tuple[PlanNode, int]:
    entry = nodes[position]
    position += 1
    children = []
    for _ in range(int(entry.get("num-children", 0))):
        child, position = _rebuild(nodes, position)
        children.append(child)
    fields = {k: v for k, v in entry.items() if k not in ("class", "num-children")}
    return PlanNode(str(entry["class"]), fields, tuple(children)), position


@dataclass(frozen=True)
class PlanRules:
    """What one check allows: the task's views, the built-ins refused by name (as the
    classes they resolve to), and the bound on sizes."""

    views: Collection[str]
    denied: frozenset[str]
    max_generated: int


def plan_problem(plan_json: Any, rules: PlanRules) -> str | None:
    """The first reason the analysed plan may not run, or None."""
    return next(_problems(trees(plan_json), rules), None)


def _problems(roots: Iterator[PlanNode], rules: PlanRules) -> Iterator[str]:
    """Down every tree, the trees held in fields included (a subquery's plan), but not
    into one of the task's views: what a view reads is the framework's, not the query's."""
    for node in roots:
        problem = _node_problem(node, rules)
        if problem is not None:
            yield problem
        elif node.name != "View":
            yield from _problems(iter(node.children), rules)
            yield from _problems(trees(list(node.fields.values())), rules)


def _node_problem(node: PlanNode, rules: PlanRules) -> str | None:
    if node.cls.startswith(EXPRESSIONS_PACKAGE):
        return _expression_problem(node, rules)
    readable = ", ".join(sorted(rules.views))
    if node.cls not in QUERY_PLAN_NODES:
        return f"{node.name} is not allowed: a query may read only {readable}"
    if node.name == "View":
        identifier = node.fields.get("desc", {}).get("identifier", {})
        name = str(identifier.get("table", ""))
        if node.fields.get("isTempView") is not True or name.lower() not in {
            view.lower() for view in rules.views
        }:
            return f"a query may read only {readable}, not view {name}"
    return None


def _expression_problem(node: PlanNode, rules: PlanRules) -> str | None:
    if node.name in rules.denied or node.name in USER_DEFINED:
        return f"{node.name} is not allowed"
    if node.name == "Sequence":
        return _sequence_problem(node, rules.max_generated)
    if node.name == "FormatString":
        return _format_problem(node, rules.max_generated)
    if node.name in _SIZE_ARGUMENT:
        function, index = _SIZE_ARGUMENT[node.name]
        size = node.children[index] if index < len(node.children) else None
        if node.name == "FormatNumber" and size is not None and not _is_integer(size):
            return None  # a pattern, not a number of decimals
        return _size_problem(function, size, rules.max_generated)
    return None


def _is_integer(node: PlanNode) -> bool:
    return node.name == "Literal" and node.fields.get("dataType") in _INTEGER_TYPES


def _integer(node: PlanNode | None) -> int | None:
    """The value of an integer literal (null counts as 0: its result is null)."""
    if node is None or not _is_integer(node):
        return None
    value = node.fields.get("value")
    return 0 if value is None else int(value)


def _bound_message(function: str, limit: int) -> str:
    return (
        f"{function} may only be called with integer literals as its size, at most {limit} "
        f"(the worker's {MAX_GENERATED_KEY})"
    )


def _size_problem(function: str, size: PlanNode | None, limit: int) -> str | None:
    value = _integer(size)
    if value is None or value > limit:
        return _bound_message(function, limit)
    return None


def _sequence_problem(node: PlanNode, limit: int) -> str | None:
    start, stop, *rest = (_integer(child) for child in node.children)
    step = rest[0] if rest else (1 if (stop or 0) >= (start or 0) else -1)
    if start is None or stop is None or step is None or step == 0:
        return _bound_message("sequence", limit)
    if (stop - start) // step + 1 > limit:
        return _bound_message("sequence", limit)
    return None


def _format_problem(node: PlanNode, limit: int) -> str | None:
    pattern = node.children[0] if node.children else None
    if pattern is None or pattern.name != "Literal" or pattern.fields.get("dataType") != "string":
        return "format_string/printf takes only a string literal as its format"
    text = str(pattern.fields.get("value") or "")
    for width, precision in _FORMAT_SIZE.findall(text):
        if max(int(width or 0), int(precision or 0)) > limit:
            return (
                f"format_string/printf widths and precisions may be at most {limit} "
                f"(the worker's {MAX_GENERATED_KEY})"
            )
    return None
