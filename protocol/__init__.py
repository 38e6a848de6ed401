"""The embedded group protocol of sparkherd workers: pure values and codecs, no I/O.

`protocol.versions` names the versions and parses `connect.protocol`; `protocol.codec`
reads and writes the metadata bytes; `protocol.negotiation` decides which version a group
speaks and handles probing and eager downgrades. Everything the codec refuses is a
`ProtocolError`.
"""

from protocol import codec, negotiation, versions
from protocol.errors import DecodeError, EncodeError, ProtocolError
from protocol.versions import CURRENT_VERSION, PROTOCOL_NAME, PROTOCOL_TYPE

__all__ = [
    "CURRENT_VERSION",
    "PROTOCOL_NAME",
    "PROTOCOL_TYPE",
    "DecodeError",
    "EncodeError",
    "ProtocolError",
    "codec",
    "negotiation",
    "versions",
]
