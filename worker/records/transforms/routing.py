"""The transforms that decide where a record goes or whether it goes on (RegexRouter,
TimestampRouter, Filter) and the predicates (HasHeaderKey, RecordIsTombstone,
TopicNameMatches).

Regular expressions are Java's, as in Connect: Spark evaluates them with
`java.util.regex`, and the chain compiles each in the JVM when it is built, so a pattern
Java refuses is a problem on its key, not a failed batch. A RegexRouter renames a topic
its pattern matches whole (Java's `Matcher.matches`), replacing the first match as
`replaceFirst` does (`$1`, `${name}`). A topic routed to one of the worker's own topics
fails its record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from worker.records.transforms.config import Chain, Configured
from worker.records.transforms.date_formats import spark_pattern
from worker.records.transforms.headers import headers_column
from worker.records.transforms.record import (
    TIMESTAMP,
    TOPIC,
    VALUE,
    ChainContext,
    ChainProblem,
    Change,
    Record,
)
from worker.records.transforms.timestamps import utc_wall_clock

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

GROUP_REFERENCE: Final = re.compile(r"\\.|\$(\d+|\{([A-Za-z][A-Za-z0-9]*)\})|(\$)|(\\)$")
NAMED_GROUP: Final = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")


def java_pattern(configured: Configured, setting: str, context: ChainContext) -> int:
    """Compile the setting's Java regular expression in the JVM; its number of groups."""
    regex = configured.text(setting) or ""
    jvm = context.spark.sparkContext._jvm
    assert jvm is not None
    try:
        return int(jvm.java.util.regex.Pattern.compile(regex).matcher("").groupCount())
    except Exception as exc:
        java = getattr(exc, "java_exception", None)
        reason = str(java.getMessage()) if java is not None else str(exc)
        raise ChainProblem(
            configured.key(setting), f"not a Java regular expression: {reason.splitlines()[0]}"
        ) from None


def whole_match(column: Column, regex: str) -> Column:
    """Java's `Pattern.matcher(text).matches()`."""
    return column.rlike(f"\\A(?:{regex})\\z")


def routed(topic: Column, context: ChainContext) -> Column | None:
    """Why a routed record fails: it names one of the worker's own topics."""
    from pyspark.sql import functions as f

    if not context.internal_topics:
        return None
    internal = f.array(*(f.lit(name) for name in sorted(context.internal_topics)))
    reason = f.concat(
        f.lit("routes the record to "), topic, f.lit(", one of the worker's own topics")
    )
    return f.when(f.array_contains(internal, topic), reason)


def regex_router(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    regex = configured.text("regex") or ""
    replacement = configured.text("replacement") or ""
    groups = java_pattern(configured, "regex", context)
    _check_replacement(configured, replacement, groups, set(NAMED_GROUP.findall(regex)))
    renamed = f.regexp_replace(f.col(TOPIC), f"\\A(?:{regex})", replacement)
    topic = f.when(whole_match(f.col(TOPIC), regex), renamed).otherwise(f.col(TOPIC))
    return Change(topic=topic, error=routed(topic, context))


def _check_replacement(configured: Configured, text: str, groups: int, names: set[str]) -> None:
    """What Java's `Matcher.appendReplacement` would throw for every matching record."""
    for match in GROUP_REFERENCE.finditer(text):
        number, name, lone_dollar, trailing = match.groups()
        problem = None
        if lone_dollar or trailing:
            problem = "a `$` or `\\` with nothing after it (write `\\$` for a dollar)"
        elif name is not None and name not in names:
            problem = f"no group named {name!r} in regex"
        elif number is not None and name is None and int(number[0]) > groups:
            problem = f"no group {number[0]} in regex (it has {groups})"
        if problem is not None:
            raise ChainProblem(configured.key("replacement"), problem)


def timestamp_router(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    pattern = spark_pattern(configured.text("timestamp.format") or "")
    stamp = f.date_format(utc_wall_clock(f.col(TIMESTAMP)), pattern.pattern)
    parts: list[Column] = []
    for i, piece in enumerate((configured.text("topic.format") or "").split("${topic}")):
        if i:
            parts.append(f.col(TOPIC))
        for j, text in enumerate(piece.split("${timestamp}")):
            if j:
                parts.append(stamp)
            parts.append(f.lit(text))
    topic = f.concat(*parts)
    missing = f.when(f.col(TIMESTAMP).isNull(), f.lit("Timestamp missing on record"))
    internal = routed(topic, context)
    return Change(topic=topic, error=missing if internal is None else f.coalesce(missing, internal))


def known_routes(spark: SparkSession, chain: Chain, topics: Sequence[str]) -> list[str]:
    """The topics records of `topics` may end in that are known before records come, in
    Java's regex semantics: a RegexRouter that applies to every record replaces a topic
    it matches, one behind a predicate adds what it makes of it. TimestampRouter's and
    `route.by.field`'s topics are known only per record."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    known = list(dict.fromkeys(topics))
    for stage in chain:
        configured = stage.transform
        if configured.family != "RegexRouter":
            continue
        pattern = jvm.java.util.regex.Pattern.compile(configured.text("regex") or "")
        after: list[str] = []
        for topic in known:
            matcher = pattern.matcher(topic)
            if matcher.matches():
                after.append(str(matcher.replaceFirst(configured.text("replacement") or "")))
            if stage.predicate is not None or not matcher.matches():
                after.append(topic)
        known = list(dict.fromkeys(after))
    return known


def filter_records(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    return Change(drop=f.lit(True))


def has_header_key(configured: Configured, record: Record, context: ChainContext) -> Column:
    from pyspark.sql import functions as f

    name = configured.text("name") or ""
    return f.exists(headers_column(), lambda h: h["key"] == f.lit(name))


def record_is_tombstone(configured: Configured, record: Record, context: ChainContext) -> Column:
    from pyspark.sql import functions as f

    return f.col(VALUE).isNull()


def topic_name_matches(configured: Configured, record: Record, context: ChainContext) -> Column:
    from pyspark.sql import functions as f

    java_pattern(configured, "pattern", context)
    return f.coalesce(whole_match(f.col(TOPIC), configured.text("pattern") or ""), f.lit(False))
