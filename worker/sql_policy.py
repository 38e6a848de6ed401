"""What a connector's SQL may be: one query over its own views, and nothing else.

A `transform.sql` arrives over REST. Handed to `session.sql` as is, it would be a
program: a command runs the moment it is parsed (`INSERT OVERWRITE DIRECTORY`, `ADD
JAR`, `SET`), script `TRANSFORM ... USING` runs a shell command on the executors, a
relation such as ``text.`/etc/hostname` `` reads any local file, and `reflect` calls any
Java method. So the query is first parsed by Spark's own parser (which runs nothing)
and its unresolved plan walked against an allow-list; only a plan that passes is then
analyzed, over empty views of the right schema, by `session.sql`, which for a query only
plans.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from pyspark.errors import PySparkException

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

QUERY_OPERATORS: Final = frozenset(
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
        "Pivot",
        "Project",
        "Repartition",
        "RepartitionByExpression",
        "Sample",
        "Sort",
        "SubqueryAlias",
        "Tail",
        "Union",
        "Unpivot",
        "UnresolvedHaving",
        "UnresolvedHint",
        "UnresolvedInlineTable",
        "UnresolvedRelation",
        "UnresolvedSubqueryColumnAliases",
        "UnresolvedWith",
        "WithWindowDefinition",
    }
)
"""The unresolved plan nodes Spark's parser makes for a query: everything else (every
command, `ScriptTransformation`, `InsertIntoDir`, table-valued functions, ...) is refused."""
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
DENIED_EXPRESSIONS: Final = frozenset(
    {"CallMethodViaReflection", "ScalaUDF", "ScalaUDAF", "PythonUDF", "PythonUDAF", "PythonUDTF"}
)
"""Resolved expressions that run code a user chose; refused should one slip past the
names (defense in depth)."""
_SUBQUERY: Final = "org.apache.spark.sql.catalyst.expressions.SubqueryExpression"


class QueryNotAllowed(ValueError):
    """The SQL is not one allowed query; the message says what to change."""


def _items(seq: Any) -> Iterator[Any]:
    """A Scala Seq through py4j."""
    for index in range(seq.size()):
        yield seq.apply(index)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


class _Walk:
    """One walk over a plan tree: its nodes (CTE definitions and subqueries included) and
    every expression in them."""

    def __init__(self, spark: SparkSession) -> None:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        self._subquery = jvm.java.lang.Class.forName(_SUBQUERY)

    def plans(self, plan: Any) -> Iterator[Any]:
        yield plan
        for expression in _items(plan.expressions()):
            yield from self._subplans(expression)
        for child in (*_items(plan.children()), *_items(plan.innerChildren())):
            yield from self.plans(child)

    def expressions(self, plan: Any) -> Iterator[Any]:
        for node in self.plans(plan):
            for expression in _items(node.expressions()):
                yield from self._tree(expression)

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
    """Raise `QueryNotAllowed` unless `sql` is one query that reads only `relations` (and
    its own CTEs) with built-in functions. Parses only; runs nothing."""
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
            relation = ".".join(_items(node.multipartIdentifier()))
            if relation.lower() not in allowed:
                readable = ", ".join(sorted(relations))
                raise QueryNotAllowed(f"a query may read only {readable}, not {relation}")
    for expression in walk.expressions(plan):
        name = _function_name(expression)
        if name is None:
            continue
        if name.lower() in DENIED_FUNCTIONS:
            raise QueryNotAllowed(f"function {name} is not allowed")
        if "." in name or not builtins.functionExists(identifier.apply(name)):
            raise QueryNotAllowed(f"only Spark's built-in functions are allowed, not {name}")


def analyze_query(spark: SparkSession, sql: str, views: Mapping[str, str]) -> None:
    """`check_query`, then Spark's analyzer over an empty view per name (`views`: name to
    DDL schema) in a session of its own: unknown columns and type errors are found
    before any data is. Runs nothing: a query's DataFrame is only planned."""
    check_query(spark, sql, views)
    session = spark.newSession()
    for name, schema in views.items():
        session.createDataFrame([], schema).createOrReplaceTempView(name)
    try:
        analyzed = session.sql(sql)._jdf.queryExecution().analyzed()
    except PySparkException as exc:
        raise QueryNotAllowed(_first_line(exc)) from None
    for expression in _Walk(spark).expressions(analyzed):
        if expression.nodeName() in DENIED_EXPRESSIONS:
            raise QueryNotAllowed(f"{expression.nodeName()} is not allowed")
