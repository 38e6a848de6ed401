"""The `sparkherd-kafka` Python data source: Kafka for Sparks without the JVM connector,
read as Spark's Kafka source reads (`source.py`) and written once per row (`sink.py`)."""

from __future__ import annotations

from typing import Final

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, DataSourceStreamWriter
from pyspark.sql.types import StructType

from worker.kafka.sink import KafkaStreamWriter
from worker.kafka.source import KafkaStreamReader, source_schema

FORMAT: Final = "sparkherd-kafka"


class KafkaDataSource(DataSource):  # type: ignore[misc]
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return source_schema(self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KafkaStreamWriter(self.options)
