"""What a connector's SQL may be: one query over its own views, and nothing else.

A `transform.sql` arrives over REST. Handed to `session.sql` as is, it would be a
program: a command runs the moment it is parsed (`INSERT OVERWRITE DIRECTORY`, `ADD
JAR`, `SET`), script `TRANSFORM ... USING` runs a shell command on the executors, a
relation such as ``text.`/etc/hostname` `` reads any local file, and `reflect` calls any
Java method. So a query is judged twice:

1. Parsed by Spark's own parser (which runs nothing), its unresolved plan walked against
   an allow-list of query operators and the names of refused functions, so that no
   command and no reflection reaches Spark's analyzer.
2. Analysed by `session.sql` (which for a query only plans) in a session that cannot read
   files by name (`spark.sql.runSQLOnFiles=false`), and the analysed plan judged by
   `worker.records.sql_plan`: what the text named no longer matters, only what will run.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from pyspark.errors import PySparkException

from worker.records.sql_plan import (
    DEFAULT_MAX_GENERATED,
    MAX_GENERATED_KEY,
    RELATIONAL_OPERATORS,
    USER_DEFINED,
    PlanRules,
    plan_problem,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

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
QUERY_SESSION_CONF: Final = {"spark.sql.runSQLOnFiles": "false"}
"""What every session that runs a connector's SQL is set to: ``json.`/path` `` is then an
unknown table, not a file read."""
_SUBQUERY: Final = "org.apache.spark.sql.catalyst.expressions.SubqueryExpression"
_EXPRESSION: Final = "org.apache.spark.sql.catalyst.expressions.Expression"


class QueryNotAllowed(ValueError):
    """The SQL is not one allowed query; the message says what to change."""


def _items(seq: Any) -> Iterator[Any]:
    """A Scala Seq through py4j."""
    for index in range(seq.size()):
        yield seq.apply(index)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


class _Walk:
    """One walk over an unresolved plan tree: its nodes (CTE definitions and subqueries
    included) and every expression in them, those of `WINDOW` definitions and hints
    too, which are not among a node's expressions."""

    def __init__(self, spark: SparkSession) -> None:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        self._subquery = jvm.java.lang.Class.forName(_SUBQUERY)
        self._expression = jvm.java.lang.Class.forName(_EXPRESSION)

    def plans(self, plan: Any) -> Iterator[Any]:
        yield plan
        for expression in self._own_expressions(plan):
            yield from self._subplans(expression)
        for child in (*_items(plan.children()), *_items(plan.innerChildren())):
            yield from self.plans(child)

    def expressions(self, plan: Any) -> Iterator[Any]:
        for node in self.plans(plan):
            for expression in self._own_expressions(node):
                yield from self._tree(expression)

    def _own_expressions(self, node: Any) -> Iterator[Any]:
        yield from _items(node.expressions())
        kind = node.nodeName()
        if kind == "WithWindowDefinition":
            definitions = node.windowDefinitions().valuesIterator()
            while definitions.hasNext():
                yield definitions.next()
        elif kind == "UnresolvedHint":
            yield from (p for p in _items(node.parameters()) if self._expression.isInstance(p))

    def _tree(self, expression: Any) -> Iterator[Any]:
        yield expression
        for child in _items(expression.children()):
            yield from self._tree(child)

    def _subplans(self, expression: Any) -> Iterator[Any]:
        for node in self._tree(expression):
            if self._subquery.isInstance(node):
                yield from self.plans(node.plan())


def _function_name(expression: Any) -> str | None:
    """The name an unresolved function or generator is called by, dotted if qualified."""
    kind = expression.nodeName()
    if kind == "UnresolvedFunction":
        return ".".join(_items(expression.nameParts()))
    if kind == "UnresolvedGenerator":
        return str(expression.name().unquotedString())
    return None


def check_query(spark: SparkSession, sql: str, relations: Collection[str]) -> None:
    """Raise `QueryNotAllowed` unless `sql` parses as one query that names only
    `relations` (and its own CTEs) and built-in functions. Parses only; runs nothing.
    Spark substitutes a CTE for a one-part name only, so only a one-part name may
    name a relation."""
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
    except Exception as exc:
        raise QueryNotAllowed(f"not one valid query: {_first_line(exc)}") from None
    walk = _Walk(spark)
    nodes = list(walk.plans(plan))
    allowed = {name.lower() for name in relations}
    for node in nodes:
        if node.nodeName() == "UnresolvedWith":
            allowed |= {str(cte._1()).lower() for cte in _items(node.cteRelations())}
    builtins = spark._jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.builtin()
    identifier = spark._jvm.org.apache.spark.sql.catalyst.FunctionIdentifier
    for node in nodes:
        kind = node.nodeName()
        if kind not in QUERY_OPERATORS:
            raise QueryNotAllowed(f"only a query is allowed, not {kind}")
        if kind == "UnresolvedRelation":
            parts = list(_items(node.multipartIdentifier()))
            if len(parts) != 1 or parts[0].lower() not in allowed:
                readable = ", ".join(sorted(relations))
                raise QueryNotAllowed(f"a query may read only {readable}, not {'.'.join(parts)}")
    for expression in walk.expressions(plan):
        if expression.nodeName() == NAMED_BY_AN_EXPRESSION:
            raise QueryNotAllowed("IDENTIFIER(...) is not allowed: name functions directly")
        name = _function_name(expression)
        if name is None:
            continue
        if name.lower() in DENIED_FUNCTIONS:
            raise QueryNotAllowed(f"function {name} is not allowed")
        if "." in name or not builtins.functionExists(identifier.apply(name)):
            raise QueryNotAllowed(f"only Spark's built-in functions are allowed, not {name}")


def query_session(spark: SparkSession) -> SparkSession:
    """A session of its own for a connector's SQL (temporary views are per session), set
    as `QUERY_SESSION_CONF` says."""
    session = spark.newSession()
    for key, value in QUERY_SESSION_CONF.items():
        session.conf.set(key, value)
    return session


def max_generated(spark: SparkSession) -> int:
    """The worker's `MAX_GENERATED_KEY`, checked when the worker's config is loaded."""
    return int(spark.conf.get(MAX_GENERATED_KEY, str(DEFAULT_MAX_GENERATED)) or 0)


def _denied_classes(spark: SparkSession) -> frozenset[str]:
    """The expressions the refused built-ins resolve to (by simple class name)."""
    registry = spark._jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.builtin()
    identifier = spark._jvm.org.apache.spark.sql.catalyst.FunctionIdentifier
    classes = set(USER_DEFINED) | {"CallMethodViaReflection"}
    for name in DENIED_FUNCTIONS:
        info = registry.lookupFunction(identifier.apply(name))
        if info.isDefined():
            classes.add(str(info.get().getClassName()).rsplit(".", 1)[-1])
    return frozenset(classes)


def checked_query(session: SparkSession, sql: str, views: Mapping[str, DataFrame]) -> DataFrame:
    """`sql` over `views` (registered in `session` under their names), once both checks
    passed; `session` is a `query_session`. Plans only: nothing runs."""
    check_query(session, sql, views)
    for name, frame in views.items():
        frame.createOrReplaceTempView(name)
    try:
        query = session.sql(sql)
        plan = json.loads(query._jdf.queryExecution().analyzed().toJSON())
    except PySparkException as exc:
        raise QueryNotAllowed(_first_line(exc)) from None
    rules = PlanRules(tuple(views), _denied_classes(session), max_generated(session))
    problem = plan_problem(plan, rules)
    if problem is not None:
        raise QueryNotAllowed(problem)
    return query


def analyze_query(spark: SparkSession, sql: str, views: Mapping[str, str]) -> StructType:
    """`checked_query` over an empty view per name (`views`: name to DDL schema): unknown
    columns and type errors are found before any data is. The query's output schema."""
    session = query_session(spark)
    return checked_query(
        session, sql, {name: session.createDataFrame([], schema) for name, schema in views.items()}
    ).schema
