"""A throw-away PostgreSQL (`tests.support.postgres`) that speaks TLS with a certificate
for 127.0.0.1 from a throw-away authority, and asks every client that came over TLS for
its password in clear text (`hostssl ... password`, as a server behind a TLS-only
network policy may); a client over plain TCP logs in with SCRAM as before."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.support.postgres import SERVER_USER, PostgresServer
from tests.support.secured_kafka import make_authority

HBA: str = "hostssl all all 127.0.0.1/32 password\nhost all all 127.0.0.1/32 scram-sha-256\n"


def serve_tls_with_clear_text_passwords(server: PostgresServer, authority_dir: Path) -> Path:
    """Turn `server` (restarted) into such a server; the authority's certificate, which
    a client that verifies the server names as `sslrootcert`."""
    assert server.root is not None
    authority = make_authority(authority_dir)
    data = server.root / "data"
    for source, name in (
        (authority_dir / "server.pem", "server.crt"),
        (authority_dir / "server.key", "server.key"),
    ):
        shutil.copyfile(source, data / name)
        if os.geteuid() == 0:
            shutil.chown(data / name, SERVER_USER)
        (data / name).chmod(0o600)
    with (data / "postgresql.conf").open("a") as conf:
        conf.write("ssl = on\n")
    (data / "pg_hba.conf").write_text(HBA)
    server.stop()
    server.start()
    return authority.ca
