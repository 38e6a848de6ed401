"""`kafka-to-iceberg`: Kafka topics into one Apache Iceberg table, each record once.

Tasks split the topics' partitions as every Kafka sink does (`worker.connectors.
kafka_sink`); each commits its batches to the one table through Iceberg's Spark runtime
(`worker.connectors.iceberg.table` says how a batch is committed once). Tasks commit
concurrently: Iceberg's commits are optimistic, an append that loses a race re-applies
its files on the newer metadata (tables created here retry 20 times), and what still
fails on a race (a `CommitFailedException`, a table created by two tasks at once, a
commit whose outcome is unknown) is tried again here, from the check of the batch id.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import Field, SecretStr, field_validator, model_validator

from worker.config.providers import hide
from worker.connectors.claimed_batches import start_claimed_query
from worker.connectors.iceberg.catalog import (
    CatalogSettings,
    CatalogType,
    TableName,
    catalog_conf,
    check_catalog_name,
    parse_partition_by,
    parse_table,
)
from worker.connectors.iceberg.table import (
    IcebergCatalogError,
    TableRules,
    append,
    check_table_exists,
    committed_snapshot,
    create_table,
    fitted,
    table_exists,
)
from worker.connectors.jdbc.connection import check_jdbc_uri, url_files
from worker.connectors.jdbc.login_policy import pgjdbc_version_problem
from worker.connectors.kafka_sink import (
    KafkaSinkConnector,
    KafkaSinkSettings,
    sink_records,
    sink_settings,
)
from worker.connectors.table_files import one_file_per_core
from worker.plugins.api import (
    HIDDEN,
    ConfigProblem,
    ConnectorConfigError,
    NonEmptyStr,
    Task,
    TaskContext,
)
from worker.plugins.checkpoint_layout import checkpoint_query_id
from worker.records.converters.spec import RecordConverters
from worker.records.errors.tolerant_batches import is_record_error

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger(__name__)

TABLES_KEY: Final = "iceberg.tables"
TYPE_KEY: Final = "iceberg.catalog.type"
WAREHOUSE_KEY: Final = "iceberg.catalog.warehouse"
URI_KEY: Final = "iceberg.catalog.uri"
USER_KEY: Final = "iceberg.catalog.jdbc.user"
PASSWORD_KEY: Final = "iceberg.catalog.jdbc.password"
JDBC_ONLY_KEYS: Final = (URI_KEY, USER_KEY, PASSWORD_KEY)
COMMIT_ATTEMPTS: Final = 6
WARM_UP_CATALOG: Final = "sparkherd_warm_up"
WARM_UP_APP_ID: Final = "00000000-0000-0000-0000-000000000000"
RETRIED: Final = (
    "CommitFailedException",
    "CommitStateUnknownException",
    "AlreadyExistsException",
    "TABLE_OR_VIEW_ALREADY_EXISTS",
    "SCHEMA_ALREADY_EXISTS",
)
"""What a concurrent commit or creation by another task looks like: tried again."""


class KafkaToIcebergSettings(KafkaSinkSettings):
    tables: NonEmptyStr = Field(
        alias=TABLES_KEY, description="The one table written: namespace.table"
    )
    catalog_name: str = Field(
        default="iceberg",
        alias="iceberg.catalog",
        description="The catalog's name, which a jdbc catalog records with its tables",
    )
    catalog_type: CatalogType = Field(
        alias=TYPE_KEY, description="hadoop (a directory) or jdbc (PostgreSQL)"
    )
    warehouse: NonEmptyStr = Field(
        alias=WAREHOUSE_KEY, description="Where the tables' data and metadata are written"
    )
    uri: NonEmptyStr | None = Field(
        default=None, alias=URI_KEY, description="jdbc: jdbc:postgresql://host:port/database"
    )
    jdbc_user: NonEmptyStr | None = Field(default=None, alias=USER_KEY)
    jdbc_password: SecretStr | None = Field(default=None, alias=PASSWORD_KEY)
    partition_by: str = Field(
        default="",
        alias="iceberg.tables.default-partition-by",
        description="A created table's partitioning: columns or transforms, e.g. days(ts)",
    )
    auto_create: bool = Field(default=True, alias="iceberg.tables.auto-create-enabled")
    evolve_schema: bool = Field(default=False, alias="iceberg.tables.evolve-schema-enabled")

    @field_validator("tables")
    @classmethod
    def _one_table(cls, value: str) -> str:
        parse_table(value)
        return value

    @field_validator("catalog_name")
    @classmethod
    def _catalog_name(cls, value: str) -> str:
        return check_catalog_name(value.strip())

    @field_validator("partition_by")
    @classmethod
    def _partition_fields(cls, value: str) -> str:
        parse_partition_by(value)
        return value

    @field_validator("uri")
    @classmethod
    def _jdbc_uri(cls, value: str | None) -> str | None:
        return None if value is None else check_jdbc_uri(value)

    @model_validator(mode="after")
    def _uri_user(self) -> KafkaToIcebergSettings:
        if self.uri is not None:
            check_jdbc_uri(self.uri, self.jdbc_user)
        return self

    @property
    def password(self) -> str | None:
        return None if self.jdbc_password is None else self.jdbc_password.get_secret_value()

    def catalog(self) -> CatalogSettings:
        return CatalogSettings(
            self.catalog_type, self.warehouse, self.uri, self.jdbc_user, self.password
        )

    def rules(self) -> TableRules:
        return TableRules(
            parse_table(self.tables),
            self.catalog_name,
            parse_partition_by(self.partition_by),
            self.auto_create,
            self.evolve_schema,
        )


def catalog_problems(
    config: Mapping[str, str], settings: KafkaToIcebergSettings
) -> list[ConfigProblem]:
    """The jdbc catalog needs its URL; the hadoop catalog takes none of the jdbc keys."""
    if settings.catalog_type == "jdbc":
        return (
            []
            if settings.uri
            else [ConfigProblem(URI_KEY, "required with iceberg.catalog.type=jdbc")]
        )
    return [
        ConfigProblem(key, "only with iceberg.catalog.type=jdbc")
        for key in JDBC_ONLY_KEYS
        if config.get(key)
    ]


def settings_of(config: Mapping[str, str]) -> tuple[KafkaToIcebergSettings, RecordConverters]:
    settings, converters = sink_settings(KafkaToIcebergSettings, config)
    problems = catalog_problems(config, settings)
    if problems:
        raise ConnectorConfigError(problems)
    return settings, converters


@contextlib.contextmanager
def catalog_errors(password: str | None) -> Iterator[None]:
    """A failure of Spark or Iceberg as `IcebergCatalogError`, its password hidden. A
    record's failure (`transform.sql` on a value, evaluated as the batch is written)
    passes as it is: the batch step names the record from it (`worker.records.errors`)."""
    try:
        yield
    except Exception as exc:
        if type(exc).__module__.startswith("worker.") or is_record_error(exc):
            raise
        cause = f"{type(exc).__name__}: {exc}"
        raise IcebergCatalogError(hide(cause, {password: HIDDEN} if password else {})) from None


def with_retries(
    attempt: Callable[[], None],
    password: str | None,
    what: str,
    pause: Callable[[float], None] = time.sleep,
) -> None:
    """`attempt` until it returns, again (after a short, growing, random pause) when it
    failed on a race with another task, at most `COMMIT_ATTEMPTS` times in all."""
    for number in range(1, COMMIT_ATTEMPTS + 1):
        try:
            with catalog_errors(password):
                attempt()
            return
        except IcebergCatalogError as exc:
            if number == COMMIT_ATTEMPTS or not any(m in str(exc) for m in RETRIED):
                raise
            log.info(
                "%s raced another commit (attempt %s): %s",
                what,
                number,
                str(exc).splitlines()[0],
            )
            pause(random.uniform(0.1, 0.5) * number)


class IcebergBatches:
    """The commit of each batch into the table: skipped when already there, retried
    after a concurrent commit or creation."""

    def __init__(self, rules: TableRules, app_id: Callable[[], str], password: str | None) -> None:
        self._rules = rules
        self._app_id = app_id
        self._password = password

    def __call__(self, rows: DataFrame, batch_id: int) -> None:
        with_retries(
            lambda: self._commit(rows, batch_id),
            self._password,
            f"Batch {batch_id} for Iceberg table {self._rules.name}",
        )

    def _commit(self, rows: DataFrame, batch_id: int) -> None:
        session = rows.sparkSession
        app_id = self._app_id()
        if not check_table_exists(session, self._rules):
            # Only a table that was there before this attempt can hold this task's
            # batch: a new one is not searched (a Spark job, 2 s on a cold worker).
            create_table(session, self._rules, rows)
        elif (snapshot := committed_snapshot(session, self._rules, app_id, batch_id)) is not None:
            log.info(
                "Batch %s is in Iceberg table %s already (snapshot %s): not committed again",
                batch_id,
                self._rules.name,
                snapshot,
            )
            return
        append(fitted(session, self._rules, one_file_per_core(rows)), self._rules, app_id, batch_id)


def use_catalog(session: SparkSession, settings: KafkaToIcebergSettings) -> None:
    """The connector's catalog in `session`, which is the task's own: no other sees it.
    A jdbc catalog needs a JVM driver that enforces `requireAuth`."""
    if settings.catalog_type == "jdbc":
        problem = pgjdbc_version_problem(_pgjdbc_version(session))
        if problem is not None:
            raise IcebergCatalogError(problem)
    for key, value in catalog_conf(settings.rules().catalog, settings.catalog()).items():
        session.conf.set(key, value)


def _pgjdbc_version(session: SparkSession) -> str | None:
    from py4j.java_gateway import JavaClass

    jvm: Any = session._jvm
    info = jvm.org.postgresql.util.DriverInfo
    return str(info.DRIVER_VERSION) if isinstance(info, JavaClass) else None


def iceberg_has_batch(
    spark: SparkSession, settings: KafkaToIcebergSettings, checkpoint: Path, task: int, batch: int
) -> bool:
    """Whether the table holds batch `batch` of the checkpoint's query (a snapshot whose
    summary names both): what a task asks before it takes partitions over from
    `checkpoint` (`worker.connectors.partition_takeover`)."""
    session = spark.newSession()
    rules = settings.rules()
    with catalog_errors(settings.password):
        use_catalog(session, settings)
        if not table_exists(session, rules):
            return False
        query_id = checkpoint_query_id(checkpoint)
        return committed_snapshot(session, rules, query_id, batch) is not None


class KafkaToIcebergTask(Task):
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        settings, converters = settings_of(context.task_config)
        records = sink_records(
            spark, context, settings, converters, partial(iceberg_has_batch, spark, settings)
        )
        session = records.rows.sparkSession
        rules = settings.rules()
        with catalog_errors(settings.password):
            use_catalog(session, settings)
            check_table_exists(session, rules)
        return start_claimed_query(
            records.rows,
            context,
            settings.trigger_interval_ms,
            IcebergBatches(
                rules, lambda: checkpoint_query_id(context.checkpoint_dir), settings.password
            ),
            records.step,
        )


class KafkaToIcebergConnector(KafkaSinkConnector):
    name = "kafka-to-iceberg"
    former_paths = ("worker.connectors.kafka_to_iceberg.KafkaToIcebergConnector",)
    config_model = KafkaToIcebergSettings
    output_path_keys = (WAREHOUSE_KEY,)
    checkpoint_keys = (TABLES_KEY, WAREHOUSE_KEY)

    def settings(self, config: Mapping[str, str]) -> tuple[KafkaSinkSettings, RecordConverters]:
        return settings_of(config)

    def client_files(self, config: Mapping[str, str]) -> Mapping[str, Iterable[str]]:
        """The TLS files of the jdbc catalog's URL."""
        uri = config.get(URI_KEY)
        return {URI_KEY: url_files(uri)} if uri else {}

    @classmethod
    def warm_up(cls, spark: SparkSession, scratch: Path) -> None:
        """A table of a hadoop catalog in `scratch`, created and appended to as a batch
        is, and its snapshots read as a start reads them."""
        session = spark.newSession()
        catalog = CatalogSettings("hadoop", str(scratch))
        for key, value in catalog_conf(WARM_UP_CATALOG, catalog).items():
            session.conf.set(key, value)
        rules = TableRules(TableName(("warm_up",), "rows"), WARM_UP_CATALOG, (), True, False)
        rows = session.range(1)
        create_table(session, rules, rows)
        append(rows, rules, WARM_UP_APP_ID, 0)
        committed_snapshot(session, rules, WARM_UP_APP_ID, 0)

    def create_task(self) -> Task:
        return KafkaToIcebergTask()
