"""Large messages over a WebRTC data channel: SCTP messages are limited (aiortc: 64 KiB),
a raw 640×432 frame is 830 KB. Each wire message is cut into chunks with a 12-byte header
(magic, message id, chunk number, chunk count) and reassembled with the same size limit as
any other message; a chunk that does not fit the message in progress drops it (counted)."""

from __future__ import annotations

import struct

from streameval.errors import WireError

MAGIC = b"SEC1"
HEADER = struct.Struct("<4sIHH")
CHUNK_BYTES = 60_000


def split(message: bytes, message_id: int) -> list[bytes]:
    n = max(1, -(-len(message) // CHUNK_BYTES))
    if n > 0xFFFF:
        raise ValueError(f"message of {len(message)} bytes needs more than 65535 chunks")
    return [
        HEADER.pack(MAGIC, message_id & 0xFFFFFFFF, k, n)
        + message[k * CHUNK_BYTES : (k + 1) * CHUNK_BYTES]
        for k in range(n)
    ]


class Reassembler:
    """Chunks in order (a data channel is reliable and ordered) → whole messages."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._id: int | None = None
        self._parts: list[bytes] = []
        self._size = 0

    def add(self, chunk: bytes) -> bytes | None:
        """The whole message once its last chunk came; None meanwhile. WireError (a
        ValueError) when the chunk is malformed or the message grows over the limit."""
        if len(chunk) < HEADER.size:
            raise WireError(f"chunk of {len(chunk)} bytes, shorter than its header")
        magic, message_id, k, n = HEADER.unpack_from(chunk)
        if magic != MAGIC or n == 0 or k >= n:
            self._reset()
            raise WireError("not a streameval chunk (bad header)")
        if k == 0:
            self._reset()
            self._id = message_id
        elif message_id != self._id or k != len(self._parts):
            self._reset()
            raise WireError(f"chunk {k}/{n} of message {message_id} out of sequence")
        self._size += len(chunk) - HEADER.size
        if self._size > self.max_bytes:
            self._reset()
            raise WireError(f"message over the {self.max_bytes}-byte limit")
        self._parts.append(chunk[HEADER.size :])
        if len(self._parts) < n:
            return None
        whole = b"".join(self._parts)
        self._reset()
        return whole

    def _reset(self) -> None:
        self._id, self._parts, self._size = None, [], 0
