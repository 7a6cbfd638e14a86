"""An upstream on a raw socket that answers its first connections in full, then stalls on the next.

Each scripted answer is one whole HTTP response (`connection: close`, so the next request opens a
new connection); the connection after them gets the stall body (or nothing) and is held open, and
the server notes when the gateway closes it: the proof that a cancel reached the upstream request.
"""

from __future__ import annotations

import socket
import threading


class StallingUpstream:
    def __init__(self, body: bytes | None, *, answers: tuple[tuple[str, bytes], ...] = ()) -> None:
        self.body = body
        self.answers = list(answers)
        """(content type, body) of each whole answer before the stall."""
        self.closed_by_peer = threading.Event()
        self.request_seen = threading.Event()
        """Set when the request that stalls has been read whole."""
        self.requests: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        threading.Thread(target=self.serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def read_request(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length"))
        while len(rest) < length:
            rest += conn.recv(65536)
        self.requests.append(rest)

    def serve(self) -> None:
        for content_type, body in self.answers:
            conn, _ = self.sock.accept()
            with conn:
                self.read_request(conn)
                conn.sendall(f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
                             "connection: close\r\n\r\n".encode() + body)
        conn, _ = self.sock.accept()
        self.read_request(conn)
        self.request_seen.set()
        if self.body is not None:
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                         + self.body)
        conn.settimeout(20)
        try:
            while conn.recv(1024):
                continue
            self.closed_by_peer.set()
        except OSError:
            self.closed_by_peer.set()
        finally:
            conn.close()
