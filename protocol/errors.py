"""The one error family of the protocol package.

Everything the codec refuses is a `ProtocolError`, itself a `ValueError`, so a leader can
put a single `except ProtocolError` around a member's bytes and keep the group alive.
Decoders raise only `DecodeError`; encoders raise `EncodeError` for values the wire
format cannot hold (a string longer than an int16 length, a negative task number).
"""


class ProtocolError(ValueError):
    """Bytes or values that do not fit the sparkherd group protocol."""


class DecodeError(ProtocolError):
    """Metadata bytes that cannot be read: truncated, oversized, inconsistent or not UTF-8.

    The message names the message kind, the field and the byte offset, so the leader's
    log says what a misbehaving member sent.
    """


class EncodeError(ProtocolError):
    """A value the chosen version's layout cannot represent."""
