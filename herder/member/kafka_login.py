"""Why Kafka refused this worker's login, if it did: a configuration error, not a fault
that retrying can fix."""

from __future__ import annotations

import ssl

from aiokafka.conn import create_conn
from aiokafka.errors import KafkaError, SaslAuthenticationFailed

from worker.kafka.security import KafkaClientSecurity


async def login_refusal(bootstrap_servers: str, security: KafkaClientSecurity) -> str | None:
    """Why the brokers refused this worker's login, if they did. aiokafka's bootstrap only
    logs the cause (a SASL failure, an untrusted certificate) and raises "unable to
    bootstrap"; retrying cannot fix a refused login, so it is a configuration error."""
    for entry in bootstrap_servers.split(","):
        host, _, port = entry.strip().rpartition(":")
        try:
            connection = await create_conn(
                host.strip("[]"),
                int(port),
                request_timeout_ms=10_000,
                **security.aiokafka_options(),
            )
        except SaslAuthenticationFailed:
            assert security.sasl is not None
            return (
                f"authentication failed: Kafka at {entry} refused {security.sasl.username!r} "
                f"with {security.sasl.mechanism} (check sasl.jaas.config)"
            )
        except ssl.SSLCertVerificationError as exc:
            return (
                f"the TLS certificate of Kafka at {entry} is not trusted: {exc.verify_message} "
                "(check ssl.truststore.location)"
            )
        except ssl.SSLError as exc:
            return f"TLS with Kafka at {entry} failed: {exc.reason} (check security.protocol)"
        except (OSError, KafkaError, ValueError):
            continue
        connection.close()
    return None
