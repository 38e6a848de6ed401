"""What a `transform.sql` plan may hold: as Spark's parser writes it, and once analysed.

The text of a query says little about what it will do: a CTE may be named like a file
table, a function may be named through `IDENTIFIER('...')`, a `WINDOW` clause or a hint.
So a query is judged twice. The parsed plan first, before Spark's analyzer sees it: only
query operators, relations the task names, built-in functions by name, none refused
(`parsed_problem`). Then the analysed plan, where every name has been resolved to what
will really run: every relation it reads must be one of the task's own views, every
operator and expression must be on the allow-lists below, and functions that build
data from a count (`sequence`, `array_repeat`, `repeat`, ...) must be bounded by the
worker's limit, since one such call can fill the JVM heap that every task shares
(`plan_problem`); and its output may nest no deeper than a schema may
(`output_nesting_problem`).

Pure: each judges `PlanNode`s (`worker.records.spark_trees` reads them from the JVM)
and returns the first problem as a sentence, so it is tested without Spark. Each visits
every node once, with a stack of its own: a plan Spark accepts may be far deeper than
Python's recursion limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from itertools import accumulate
from typing import Final

from worker.records.nesting import MAX_NESTING
from worker.records.spark_trees import PlanNode, each_once, everything_below

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
QUERY_OPERATORS: Final = RELATIONAL_OPERATORS | {
    "Pivot",
    "Unpivot",
    "UnresolvedHaving",
    "UnresolvedHint",
    "UnresolvedInlineTable",
    "UnresolvedRelation",
    "UnresolvedSubqueryColumnAliases",
    "UnresolvedWith",
    "WithWindowDefinition",
}
"""The unresolved plan nodes Spark's parser makes for a query: everything else (every
command, `ScriptTransformation`, `InsertIntoDir`, table-valued functions, a table named
through `IDENTIFIER(...)`) is refused."""
DENIED_FUNCTIONS: Final = frozenset(
    {
        "reflect",
        "java_method",
        "try_reflect",
        "xpath",
        "xpath_boolean",
        "xpath_double",
        "xpath_float",
        "xpath_int",
        "xpath_long",
        "xpath_number",
        "xpath_short",
        "xpath_string",
        "from_xml",
        "schema_of_xml",
    }
)
"""Built-ins that are refused all the same: reflection calls any static Java method, and
an XML parser may be made to fetch external entities (files, URLs)."""
NAMED_BY_AN_EXPRESSION: Final = "ExpressionWithUnresolvedIdentifier"
"""`IDENTIFIER('...')(...)`: a function whose name is known only once analysed."""
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


MAX_PLAN_NODES: Final = 100_000
"""The most nodes a parsed query may have, counted as `expanded_size` counts them.

Spark's parser shares nodes: a simple `CASE key WHEN 1 THEN ... WHEN 2 THEN ... END` holds
one `key` in both branches. Its analyzer does not: it copies each use, so a `CASE` on a
`CASE` on a `CASE` doubles the analysed plan each time, and thirty of them (a text of
1 KiB) keep the analyzer busy for hours and fill the JVM's heap that every task shares.
CTEs and `WINDOW` definitions used by name are copied the same way. A query that names
and shares nothing has about a node per character of its text at most, so no such query
within a setting's 64 KiB is refused for its size alone."""


def expanded_size(plan: PlanNode) -> int:
    """How many nodes a parsed plan has as Spark's analyzer and optimizer copy it out, up
    to `MAX_PLAN_NODES + 1`: a node the parser shares counts once per place it is used,
    and a reference to a CTE or a `WINDOW` by name counts as a copy of what it names (they
    are substituted, and a CTE used more than once is inlined by the optimizer, so `WITH
    a1 AS (... a0 UNION ALL ... a0), a2 AS (... a1 UNION ALL ... a1), ...` doubles with
    each CTE). Scopes are not resolved here: a name counts as its largest definition, and
    a reference inside a definition to that definition's own name (which Spark resolves
    outside it) as one node. Counted from the leaves up, each node once."""
    named = _definitions(plan)
    sizes: dict[int, int] = {}
    pending: set[int] = set()
    stack = [(plan, False)]
    while stack:
        node, leaving = stack.pop()
        parts, copies = everything_below(node), named.get(_reference(node), [])
        if leaving:
            pending.discard(id(node))
            copied = max((sizes.get(id(copy), 1) for copy in copies), default=0)
            total = 1 + copied + sum(sizes.get(id(part), 1) for part in parts)
            sizes[id(node)] = min(total, MAX_PLAN_NODES + 1)
        elif id(node) not in sizes and id(node) not in pending:
            pending.add(id(node))
            stack.append((node, True))
            stack.extend(
                (inner, False)
                for inner in (*parts, *copies)
                if id(inner) not in sizes and id(inner) not in pending
            )
    return sizes[id(plan)]


def _reference(node: PlanNode) -> tuple[str, str] | None:
    """What a node refers to by name: a CTE (or a table) or a `WINDOW` definition."""
    parts = node.fields.get("parts", ())
    if node.name == "UnresolvedRelation" and len(parts) == 1:
        return ("ctes", str(parts[0]).lower())
    if "window" in node.fields:
        return ("windows", str(node.fields["window"]).lower())
    return None


def _definitions(plan: PlanNode) -> dict[tuple[str, str] | None, list[PlanNode]]:
    """Every CTE and `WINDOW` definition in the plan, by kind and name."""
    named: dict[tuple[str, str] | None, list[PlanNode]] = {}
    for node in each_once([plan], everything_below):
        for kind in ("ctes", "windows"):
            for name, tree in zip(node.fields.get(kind, ()), node.held, strict=False):
                named.setdefault((kind, str(name).lower()), []).append(tree)
    return named


def parsed_problem(
    plan: PlanNode, relations: Collection[str], is_builtin: Callable[[str], bool]
) -> str | None:
    """The first reason a parsed plan is not one query that names only `relations` (and
    its own CTEs) and built-in functions (`is_builtin` asks Spark's registry), or None.
    Spark substitutes a CTE for a one-part name only, so only a one-part name may name a
    relation. Operators are judged before expressions, and first of all the plan's size
    as Spark's analyzer will see it."""
    if expanded_size(plan) > MAX_PLAN_NODES:
        return (
            f"too complex: its plan has more than {MAX_PLAN_NODES} expressions and operators, "
            "each part counted wherever it is used (a simple CASE's key once per WHEN, a CTE "
            "or a WINDOW once per reference)"
        )
    nodes = list(each_once([plan], everything_below))
    operators = [node for node in nodes if node.operator]
    allowed = {name.lower() for name in relations}
    for node in operators:
        allowed |= {str(cte).lower() for cte in node.fields.get("ctes", ())}
    for node in operators:
        if node.name not in QUERY_OPERATORS:
            return f"only a query is allowed, not {node.name}"
        parts = [str(part) for part in node.fields.get("parts", ())]
        if node.name == "UnresolvedRelation" and (
            len(parts) != 1 or parts[0].lower() not in allowed
        ):
            return f"a query may read only {', '.join(sorted(relations))}, not {'.'.join(parts)}"
    return next(filter(None, (_function_problem(n, is_builtin) for n in nodes)), None)


def _function_problem(node: PlanNode, is_builtin: Callable[[str], bool]) -> str | None:
    if node.operator:
        return None
    if node.name == NAMED_BY_AN_EXPRESSION:
        return "IDENTIFIER(...) is not allowed: name functions directly"
    name = node.fields.get("function")
    if name is None:
        return None
    if str(name).lower() in DENIED_FUNCTIONS:
        return f"function {name} is not allowed"
    if "." in str(name) or not is_builtin(str(name)):
        return f"only Spark's built-in functions are allowed, not {name}"
    return None


@dataclass(frozen=True)
class PlanRules:
    """What one check allows: the task's views, the built-ins refused by name (as the
    classes they resolve to), and the bound on sizes."""

    views: Collection[str]
    denied: frozenset[str]
    max_generated: int


def plan_problem(plan: PlanNode, rules: PlanRules) -> str | None:
    """The first reason the analysed plan may not run, or None. Down every tree, the
    trees a node holds included (a subquery's plan), but not into one of the task's
    views: what a view reads is the framework's, not the query's."""
    nodes = each_once([plan], lambda node: () if node.name == "View" else everything_below(node))
    return next(filter(None, (_node_problem(node, rules) for node in nodes)), None)


def _node_problem(node: PlanNode, rules: PlanRules) -> str | None:
    if node.cls.startswith(EXPRESSIONS_PACKAGE):
        return _expression_problem(node, rules)
    readable = ", ".join(sorted(rules.views))
    if node.cls not in QUERY_PLAN_NODES:
        return f"{node.name} is not allowed: a query may read only {readable}"
    if node.name == "View":
        name = str(node.fields.get("table", ""))
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


MAX_OUTPUT_NESTING: Final = MAX_NESTING + 1
"""How deep a query's output columns may nest: as deep as the `value` column of a
`value.schema` that nests as deep as a schema may (the DDL names the payload's fields,
and the column is the payload's struct, a level above them). Spark's parser takes some
250 nested `struct(...)` calls; pyspark's reading of such a schema, and every walk of it
after, would run out of Python's stack first."""
_QUOTED_NAME: Final = re.compile(r"`[^`]*(?:``[^`]*)*`")


def output_nesting_problem(row_type: str) -> str | None:
    """Why a query's output, its row type as Spark writes it in SQL
    (`STRUCT<a: ARRAY<INT>, ...>`, where only a quoted name can hold a bracket), nests too
    deep, or None. Each STRUCT, ARRAY or MAP inside the row is a level."""
    brackets = [1 if c == "<" else -1 for c in _QUOTED_NAME.sub("", row_type) if c in "<>"]
    if max(accumulate(brackets), default=1) - 1 > MAX_OUTPUT_NESTING:
        return (
            f"its output nests more than {MAX_OUTPUT_NESTING} levels deep (each STRUCT<...>, "
            "ARRAY<...> or MAP<...> of a column is a level)"
        )
    return None
