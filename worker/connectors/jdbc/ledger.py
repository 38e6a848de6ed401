"""kafka-to-jdbc's ledger: in `insert` mode, which batches a task has committed, kept in
the target database itself, in the same transaction as the batch's rows.

A row of `sparkherd_jdbc_sink_batches` says that the batch `batch_id` of the streaming
query `query_id` is in the tables. Inserting it is the batch's first statement (`claim`),
so a batch that runs again (after a crash between the database's commit and Spark's, a
restart, a move to another worker) finds its row and writes nothing, and two runs of one
batch at once (a zombie) meet on the primary key: the second waits for the first's
transaction and then finds the row. A batch's rows and its ledger row commit together or
not at all.

The key is the query's id (`<checkpoint>/metadata`, as kafka-to-delta's `txnAppId`), not
the connector and task: an offsets reset removes the checkpoint, and the new query's
batch ids start again at 0, which must not be mistaken for batches already written; and a
task's id may name other partitions after `tasks.max` changed, while a checkpoint, and its
query id, always belong to the partitions it read. `connector` and `task` are kept for
whoever reads the table. Spark runs a batch again only while it is the query's latest, so
each commit also removes the query's rows older than `KEPT_BATCHES`.

`upsert` and `update` need no ledger: writing a batch's records again by key leaves the
same rows.
"""

from __future__ import annotations

from typing import Final

from worker.connectors.jdbc.sql import IdentifierError, TableName, table_for

LEDGER: Final = TableName("sparkherd_jdbc_sink_batches")
"""Created where the connection's search_path creates tables (`currentSchema` in the URL)."""


def sink_table(name_format: str, topic: str) -> TableName:
    """The table `table.name.format` names for `topic` (`sql.table_for`), never the
    ledger, in whatever schema: a connector writing rows into it could make other sinks
    of that database take batches they never wrote for written, and skip them."""
    table = table_for(name_format, topic)
    if table.name == LEDGER.name:
        raise IdentifierError(
            f"{table} is the ledger kafka-to-jdbc keeps of the batches it has written; "
            "no connector writes there"
        )
    return table


KEPT_BATCHES: Final = 100


def create_ledger() -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {LEDGER.sql()} ("
        "query_id TEXT NOT NULL, batch_id BIGINT NOT NULL, connector TEXT NOT NULL, "
        "task INTEGER NOT NULL, committed_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
        "PRIMARY KEY (query_id, batch_id))"
    )


def claim() -> str:
    """Parameters: query id, batch id, connector, task. One row affected: the batch is
    this transaction's to write; none: it was committed before."""
    return (
        f"INSERT INTO {LEDGER.sql()} (query_id, batch_id, connector, task) "
        "VALUES (%s, %s, %s, %s) ON CONFLICT (query_id, batch_id) DO NOTHING"
    )


def has_batch() -> str:
    """Parameters: query id, batch id. A row: the batch was committed."""
    return f"SELECT 1 FROM {LEDGER.sql()} WHERE query_id = %s AND batch_id = %s"


def forget_old() -> str:
    """Parameters: query id, the oldest batch id kept."""
    return f"DELETE FROM {LEDGER.sql()} WHERE query_id = %s AND batch_id < %s"


def oldest_kept(batch_id: int) -> int:
    return batch_id - KEPT_BATCHES
