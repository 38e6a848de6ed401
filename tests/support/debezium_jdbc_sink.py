"""Debezium's JDBC sink connector for Kafka Connect, for a `ConnectWorker` to run beside
sparkherd's `kafka-to-jdbc` (tests/bench/versus_jdbc_sink.py).

Debezium publishes `debezium-connector-jdbc` to Maven Central with its runtime closure
(Debezium's sink and config modules, Hibernate ORM, the drivers of every database it
writes to) but not the plugin archive its build assembles, so the bundle here is that
closure with three changes:

* 3.6.0.Final is the newest release Maven Central has of the connector (3.6.1.Final of
  Debezium's other modules has no `debezium-connector-jdbc`), and every Debezium module
  of the bundle is that version.
* Its pom asks for `org.hibernate:hibernate-agroal` (the connection pool), a coordinate
  Hibernate 7 moved to `org.hibernate.orm`, at 7.2.6.Final, which Maven Central does not
  serve under either group. The bundle takes `hibernate-agroal` and `hibernate-core` of
  7.2.19.Final instead: the same Hibernate line, a later patch release, both from one
  version so the pool matches the ORM.
* Only PostgreSQL's driver stays (MySQL's, MariaDB's, SQL Server's and Oracle's are left
  out, with `strimzi-test-container`, which the pom has in compile scope).
* Kafka's jars, Jackson and SLF4J are left out: the worker's classpath has them. A
  second Jackson inside the plugin fails the task: Hibernate's `ObjectMapper.findModules`
  finds Connect's `Jdk8Module` through the service loader, loaded against Connect's
  Jackson, "not a subtype" of the plugin's `Module`.

The jars are a Connect plugin: `plugin.path` names a directory holding one directory of
them (a link to the cached bundle), which Connect loads in a class loader of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.support.kafka_connect import plugin_path
from worker.runtime.maven_jars import JarBundle

DEBEZIUM_VERSION: Final = "3.6.0.Final"
HIBERNATE_VERSION: Final = "7.2.19.Final"
DEBEZIUM_SINK_JARS: Final = JarBundle(
    name=f"debezium-connector-jdbc-{DEBEZIUM_VERSION}-hibernate-{HIBERNATE_VERSION}-postgresql",
    coordinates=(
        f"io.debezium:debezium-connector-jdbc:{DEBEZIUM_VERSION}",
        f"org.hibernate.orm:hibernate-core:{HIBERNATE_VERSION}",
        f"org.hibernate.orm:hibernate-agroal:{HIBERNATE_VERSION}",
    ),
    exclusions=(
        "org.apache.kafka:*",
        "org.hibernate:hibernate-agroal",
        "com.mysql:*",
        "org.mariadb.jdbc:*",
        "com.microsoft.sqlserver:*",
        "com.oracle.database.jdbc:*",
        "io.strimzi:*",
        "com.fasterxml.jackson.core:*",
        "com.fasterxml.jackson.datatype:*",
        "org.slf4j:*",
    ),
)
DEBEZIUM_JDBC_SINK: Final = "io.debezium.connector.jdbc.JdbcSinkConnector"
PLUGIN_NAME: Final = "debezium-connector-jdbc"


def debezium_plugin_path(root: Path) -> Path:
    """A `plugin.path` directory under `root` holding the sink."""
    return plugin_path(root, DEBEZIUM_SINK_JARS, PLUGIN_NAME)


def debezium_sink_config(
    topics: str, table: str, jdbc_url: str, user: str, password: str, tasks: int
) -> dict[str, str]:
    """The sink upserting `topics` into `table` by the record key's fields, creating the
    table and adding columns from the records' schemas (JSON with schema, keys too)."""
    json_with_schema = "org.apache.kafka.connect.json.JsonConverter"
    return {
        "connector.class": DEBEZIUM_JDBC_SINK,
        "tasks.max": str(tasks),
        "topics": topics,
        "connection.url": jdbc_url,
        "connection.username": user,
        "connection.password": password,
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "schema.evolution": "basic",
        "table.name.format": table,
        "key.converter": json_with_schema,
        "key.converter.schemas.enable": "true",
        "value.converter": json_with_schema,
        "value.converter.schemas.enable": "true",
    }


def change_event_sink_config(
    topics: str, table: str, jdbc_url: str, user: str, password: str
) -> dict[str, str]:
    """The sink as Debezium's documentation sets it up for a topic of change events: it
    reads the envelope itself (no `ExtractNewRecordState`), upserts by the record key,
    deletes on `op=d` (`delete.enabled`), and creates and widens the table
    (`schema.evolution=basic`); JSON with schemas, keys too."""
    json_with_schema = "org.apache.kafka.connect.json.JsonConverter"
    return {
        "connector.class": DEBEZIUM_JDBC_SINK,
        "tasks.max": "1",
        "topics": topics,
        "connection.url": jdbc_url,
        "connection.username": user,
        "connection.password": password,
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "delete.enabled": "true",
        "schema.evolution": "basic",
        "collection.name.format": table,
        "key.converter": json_with_schema,
        "key.converter.schemas.enable": "true",
        "value.converter": json_with_schema,
        "value.converter.schemas.enable": "true",
    }
