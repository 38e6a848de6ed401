"""What a connector's SQL may be: one query over its own views, and nothing else.

A `transform.sql` arrives over REST. Handed to `session.sql` as is, it would be a
program: a command runs the moment it is parsed (`INSERT OVERWRITE DIRECTORY`, `ADD
JAR`, `SET`), script `TRANSFORM ... USING` runs a shell command on the executors, a
relation such as ``text.`/etc/hostname` `` reads any local file, and `reflect` calls any
Java method. So a query is judged twice:

1. Parsed by Spark's own parser (which runs nothing), its unresolved plan judged against
   an allow-list of query operators and the names of refused functions, so that no
   command and no reflection reaches Spark's analyzer.
2. Analysed by `session.sql` (which for a query only plans) in a session that cannot read
   files by name (`spark.sql.runSQLOnFiles=false`), and the analysed plan judged: what
   the text named no longer matters, only what will run.

Both judges are `worker.records.sql_plan`'s, over plans read by
`worker.records.spark_trees`. Whatever Spark's parser or analyzer fails on, its own
stack included, is a `QueryNotAllowed` that says so, never an error of the worker.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Final, TypeVar

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from worker.records.spark_trees import SparkTreeReader
from worker.records.sql_plan import (
    DEFAULT_MAX_GENERATED,
    DENIED_FUNCTIONS,
    MAX_GENERATED_KEY,
    USER_DEFINED,
    PlanRules,
    output_nesting_problem,
    parsed_problem,
    plan_problem,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

QUERY_SESSION_CONF: Final = {"spark.sql.runSQLOnFiles": "false"}
"""What every session that runs a connector's SQL is set to: ``json.`/path` `` is then an
unknown table, not a file read."""
_VIEW: Final = "org.apache.spark.sql.catalyst.plans.logical.View"


class QueryNotAllowed(ValueError):
    """The SQL is not one allowed query; the message says what to change."""


def _first_line(error: BaseException) -> str:
    """What Spark says went wrong, in one line. A JVM error that Spark did not turn into
    one of its own (a `StackOverflowError` in its analyzer) comes as py4j's "An error
    occurred while calling ...": the JVM's exception says more."""
    if isinstance(error, Py4JJavaError):
        text = str(error.java_exception.toString()).strip()
        if "StackOverflowError" in text:
            return f"too deeply nested for Spark ({text}): nest it less deep"
    else:
        text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


T = TypeVar("T")


def _spark_call(what: str, call: Callable[[], T]) -> T:
    """`call()`, with whatever Spark or its JVM raises turned into `QueryNotAllowed`."""
    try:
        return call()
    except (PySparkException, Py4JJavaError) as exc:
        raise QueryNotAllowed(f"{what}{_first_line(exc)}") from None


def check_query(spark: SparkSession, sql: str, relations: Collection[str]) -> None:
    """Raise `QueryNotAllowed` unless `sql` parses as one query that names only
    `relations` (and its own CTEs) and built-in functions. Parses only; runs nothing."""
    parser = spark._jsparkSession.sessionState().sqlParser()
    parsed = _spark_call("not one valid query: ", lambda: parser.parsePlan(sql))
    jvm = spark._jvm
    builtins = jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.builtin()
    identifier = jvm.org.apache.spark.sql.catalyst.FunctionIdentifier
    tree = SparkTreeReader(jvm).read(parsed)
    problem = parsed_problem(
        tree, relations, lambda name: bool(builtins.functionExists(identifier.apply(name)))
    )
    if problem is not None:
        raise QueryNotAllowed(problem)


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
    query = _spark_call("", lambda: session.sql(sql))
    analysed = _spark_call("", lambda: query._jdf.queryExecution().analyzed())
    plan = SparkTreeReader(session._jvm, opaque=frozenset({_VIEW})).read(analysed)
    rules = PlanRules(tuple(views), _denied_classes(session), max_generated(session))
    problem = plan_problem(plan, rules)
    if problem is None:
        problem = output_nesting_problem(str(query._jdf.schema().sql()))
    if problem is not None:
        raise QueryNotAllowed(problem)
    return query


def analyze_query(
    spark: SparkSession, sql: str, views: Mapping[str, StructType | str]
) -> StructType:
    """`checked_query` over an empty view per name (`views`: name to schema, or to its
    DDL): unknown columns and type errors are found before any data is. The query's
    output schema."""
    session = query_session(spark)
    frames = {name: _empty_view(session, name, schema) for name, schema in views.items()}
    return checked_query(session, sql, frames).schema


def _empty_view(session: SparkSession, name: str, schema: StructType | str) -> DataFrame:
    return _spark_call(f"view {name}: ", lambda: session.createDataFrame([], schema))
