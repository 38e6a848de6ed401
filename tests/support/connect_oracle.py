"""Kafka Connect's own classes (and Debezium's) in a JVM of their own, driven from Python
through py4j: the oracle that differential tests hold sparkherd's converters and
transforms to. Where Connect defines a behaviour, a test gives the same input to Connect's
class and to sparkherd and compares what comes out; no expected bytes are written by hand.

The JVM is a plain one (py4j's `GatewayServer`, from the jar pyspark ships), not Spark's:
its classpath is Connect's (`tests.support.kafka_connect.CONNECT_JARS`, from Maven Central
through `worker.runtime.maven_jars`), with Debezium's core when a test asks for it, so no
class of Connect meets another version of itself on Spark's classpath. Values cross as
JSON, built into Connect data and read back out of it by `java/ConnectOracle.java`
(compiled with `javac` on first use, into the jar cache): py4j unboxes every Long or Float
that reaches Python, and Connect's schema checks refuse the Integer it sends back.

In Python, by Connect type: int8..int64 are `int`, float32/float64 `float`, boolean
`bool`, string `str`, bytes `bytes`, Decimal `decimal.Decimal`, Date `datetime.date`, Time
`datetime.time`, Timestamp a UTC `datetime.datetime`, array `list`, map `dict` (keys of
any type; a struct key as a sorted tuple of its items), struct a `dict` by field name.
Schemas are given in the form Connect's `JsonConverter` writes into an envelope
(`{"type": "struct", "fields": [{"field": "id", "type": "int64"}]}`), read by Connect's
own `asConnectSchema`.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import math
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import pyspark
from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

from tests.support.kafka_connect import CONNECT_JARS
from worker.runtime.maven_jars import JarBundle, cache_root, classpath, resolve_jars

SOURCE: Final = Path(__file__).parent / "java" / "ConnectOracle.java"
DEBEZIUM_VERSION: Final = "3.6.1.Final"
DEBEZIUM_TRANSFORMS: Final = JarBundle(
    f"debezium-transforms-{DEBEZIUM_VERSION}",
    # debezium-core is a relocation to debezium-connector-common since 3.x; its
    # transforms (ExtractNewRecordState) are in debezium-connect-plugins.
    (
        f"io.debezium:debezium-connector-common:{DEBEZIUM_VERSION}",
        f"io.debezium:debezium-connect-plugins:{DEBEZIUM_VERSION}",
    ),
    # Connect's own jars come from CONNECT_JARS, of the broker's version.
    exclusions=("org.apache.kafka:*",),
)
LOGICAL: Final = {
    "org.apache.kafka.connect.data.Decimal": "decimal",
    "org.apache.kafka.connect.data.Date": "date",
    "org.apache.kafka.connect.data.Time": "time",
    "org.apache.kafka.connect.data.Timestamp": "timestamp",
}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

Spec = Mapping[str, Any]
"""A Connect schema in its envelope form."""


@dataclass(frozen=True)
class Record:
    """A Connect record's parts that converters and transforms see, in Python."""

    topic: str
    value_schema: Spec | None
    value: object
    key_schema: Spec | None = None
    key: object = None
    partition: int | None = 0
    offset: int = 0
    timestamp: int | None = None
    headers: tuple[tuple[str, Spec | None, object], ...] = field(default=())
    """(key, schema, value) of each header, in order."""


@dataclass(frozen=True)
class Stage:
    """One transform of a chain, and the predicate that decides whether it applies."""

    transformation: Any
    predicate: Any = None
    negate: bool = False


class ConnectOracle:
    """One JVM with Connect's classes; `start` makes one and stops it on the way out."""

    def __init__(self, gateway: JavaGateway) -> None:
        self._gateway = gateway
        self.jvm: Any = gateway.jvm
        self._oracle: Any = self.jvm.ConnectOracle

    @classmethod
    @contextlib.contextmanager
    def start(cls, *, debezium: bool = False) -> Iterator[ConnectOracle]:
        cache = cache_root(os.environ)
        bundles = [CONNECT_JARS, *([DEBEZIUM_TRANSFORMS] if debezium else [])]
        jars = [jar for bundle in bundles for jar in resolve_jars(bundle, cache)]
        compiled = _compiled(resolve_jars(CONNECT_JARS, cache), cache)
        port = launch_gateway(
            jarpath=str(_py4j_jar()),
            classpath=classpath([compiled, *jars]),
            javaopts=["-Xmx256m", "-XX:TieredStopAtLevel=1"],
            die_on_exit=True,
        )
        gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port))
        try:
            yield cls(gateway)
        finally:
            with contextlib.suppress(Exception):
                gateway.shutdown()

    # -- converters -----------------------------------------------------------------------

    def converter(self, class_name: str, config: Mapping[str, str], *, key: bool = False) -> Any:
        """Connect's converter `class_name`, configured as a worker configures one."""
        converter = self._instance(class_name)
        converter.configure(self._map(config), key)
        return converter

    def write(self, converter: Any, topic: str, spec: Spec | None, value: object) -> bytes | None:
        """What the converter's `fromConnectData` writes for `value` of schema `spec`."""
        written = self._oracle.write(
            converter, topic, json.dumps(spec), json.dumps(to_json(spec, value))
        )
        return None if written is None else bytes(written)

    def read(self, converter: Any, topic: str, data: bytes | None) -> tuple[Spec | None, object]:
        """What the converter's `toConnectData` reads from `data`: its schema and value."""
        read = json.loads(
            self._oracle.read(converter, topic, None if data is None else bytearray(data))
        )
        return read["schema"], from_json(read["schema"], read["value"])

    # -- transforms -----------------------------------------------------------------------

    def transformation(self, class_name: str, config: Mapping[str, str]) -> Any:
        """Connect's (or Debezium's) transform or predicate `class_name`, configured."""
        configured = self._instance(class_name)
        configured.configure(self._map(config))
        return configured

    def apply(self, chain: Sequence[Stage], record: Record) -> Record | None:
        """The record after the chain, as a sink task applies it (None: dropped)."""
        transformations = self.jvm.java.util.ArrayList()
        predicates = self.jvm.java.util.ArrayList()
        negate = self.jvm.java.util.ArrayList()
        for stage in chain:
            transformations.add(stage.transformation)
            predicates.add(stage.predicate)
            negate.add(stage.negate)
        out = json.loads(
            self._oracle.apply(transformations, predicates, negate, _record_json(record))
        )
        return None if out is None else _record(out)

    def header_bytes(self, spec: Spec | None, value: object) -> bytes | None:
        """What Connect's default header converter (`SimpleHeaderConverter`) writes for a
        header value of schema `spec` (None: schemaless), as a record's headers come out
        of `apply`."""
        written = self._oracle.headerBytes(json.dumps(spec), json.dumps(to_json(spec, value)))
        return None if written is None else bytes(written)

    # -- plumbing -------------------------------------------------------------------------

    def _instance(self, class_name: str) -> Any:
        """A new instance of `class_name` (a nested class as `Outer$Inner`)."""
        no_types = self._gateway.new_array(self.jvm.java.lang.Class, 0)
        no_arguments = self._gateway.new_array(self.jvm.java.lang.Object, 0)
        found = self.jvm.java.lang.Class.forName(class_name)
        return found.getDeclaredConstructor(no_types).newInstance(no_arguments)

    def _map(self, config: Mapping[str, str]) -> Any:
        mapped = self.jvm.java.util.HashMap()
        for key, value in config.items():
            mapped.put(key, value)
        return mapped


def to_json(spec: Spec | None, value: object) -> object:
    """`value` in the JSON form `ConnectOracle.java` builds Connect data from."""
    if value is None:
        return None
    if spec is None:
        return value
    logical = LOGICAL.get(spec.get("name") or "")
    if logical == "decimal":
        assert isinstance(value, Decimal)
        return format(value, "f")
    if logical == "date":
        assert isinstance(value, date)
        return value.isoformat()
    if logical == "time":
        assert isinstance(value, time)
        seconds = value.hour * 3600 + value.minute * 60 + value.second
        return seconds * 1000 + value.microsecond // 1000
    if logical == "timestamp":
        assert isinstance(value, datetime)
        return (value - _EPOCH) // timedelta(milliseconds=1)
    kind = spec["type"]
    if kind in ("float", "double") and isinstance(value, float) and not math.isfinite(value):
        return repr(value).replace("inf", "Infinity").replace("nan", "NaN")
    if kind == "bytes":
        assert isinstance(value, bytes)
        return base64.b64encode(value).decode()
    if kind == "array":
        assert isinstance(value, list)
        return [to_json(spec["items"], item) for item in value]
    if kind == "map":
        assert isinstance(value, dict)
        return [[to_json(spec["keys"], k), to_json(spec["values"], v)] for k, v in value.items()]
    if kind == "struct":
        assert isinstance(value, dict)
        fields = {f["field"]: f for f in spec["fields"]}
        return {name: to_json(fields[name], item) for name, item in value.items()}
    return value


def from_json(spec: Spec | None, value: object) -> object:
    """The Python value of Connect data in its JSON form (the inverse of `to_json`)."""
    if value is None or spec is None:
        return value
    logical = LOGICAL.get(spec.get("name") or "")
    if logical == "decimal":
        return Decimal(str(value))
    if logical == "date":
        return date.fromisoformat(str(value))
    if logical in ("time", "timestamp"):
        assert isinstance(value, int)
        moment = _EPOCH + timedelta(milliseconds=value)
        return moment.time() if logical == "time" else moment
    kind = spec["type"]
    if kind in ("float", "double"):
        return float(value)  # type: ignore[arg-type]
    if kind == "bytes":
        return base64.b64decode(str(value))
    if kind == "array":
        assert isinstance(value, list)
        return [from_json(spec["items"], item) for item in value]
    if kind == "map":
        assert isinstance(value, list)
        return {
            _hashable(from_json(spec["keys"], k)): from_json(spec["values"], v) for k, v in value
        }
    if kind == "struct":
        assert isinstance(value, dict)
        return {f["field"]: from_json(f, value.get(f["field"])) for f in spec["fields"]}
    return value


def _record_json(record: Record) -> str:
    return json.dumps(
        {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "keySchema": record.key_schema,
            "key": to_json(record.key_schema, record.key),
            "valueSchema": record.value_schema,
            "value": to_json(record.value_schema, record.value),
            "headers": [[k, s, to_json(s, v)] for k, s, v in record.headers],
        }
    )


def _record(out: Mapping[str, Any]) -> Record:
    return Record(
        topic=out["topic"],
        partition=out["partition"],
        offset=out["offset"],
        timestamp=out["timestamp"],
        key_schema=out["keySchema"],
        key=from_json(out["keySchema"], out["key"]),
        value_schema=out["valueSchema"],
        value=from_json(out["valueSchema"], out["value"]),
        headers=tuple((k, s, from_json(s, v)) for k, s, v in out["headers"]),
    )


def _hashable(value: object) -> object:
    """A map key read back: Connect allows struct and array keys, Python needs them frozen."""
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    return value


def _py4j_jar() -> Path:
    """The py4j jar pyspark ships, whose GatewayServer the oracle's JVM runs."""
    found = sorted((Path(pyspark.__file__).parent / "jars").glob("py4j-*.jar"))
    if not found:
        raise FileNotFoundError("pyspark ships no py4j jar")
    return found[-1]


def _compiled(connect: Sequence[Path], cache: Path) -> Path:
    """`ConnectOracle.java` compiled against Connect's jars, once per version of the
    source (concurrent test processes wait for the first to finish)."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target = cache / f"connect-oracle-{digest}"
    done = target / "ConnectOracle.class"
    if done.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"connect-oracle-{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            staging = target.with_name(target.name + ".staging")
            staging.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["javac", "-nowarn", "-d", str(staging), "-cp", classpath(connect), str(SOURCE)],
                check=True,
                capture_output=True,
                timeout=300,
            )
            staging.rename(target)
    return target
