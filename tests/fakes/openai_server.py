"""A real HTTP server that speaks enough of the OpenAI API for the gateway tests.

It runs `http.server.ThreadingHTTPServer` in a daemon thread on 127.0.0.1 (random free port), so
the real `openai` client, its HTTP stack, timeouts and SSE parsing are all exercised.

Served:
- `POST /v1/chat/completions`: scripted answers (`add`), plain JSON or SSE when `"stream": true`.
  Scripted failure modes (the bad models of issue 13), each an `add()` keyword:
  `status=500` (an error before any token), `text=""` (an empty answer), `malformed=True`
  (broken JSON), `non_json=True` (an HTML error page with status 200), `wrong_shape=True`
  (JSON without `choices`), `first_token_delay_s` (headers at once, the first token late),
  `endless=True` (a stream that never ends and ignores `max_tokens`; unstreamed: no answer at
  all), and `break_stream_after`. `closed_port_url()` is a base URL where the connection is refused.
  `stream_outcomes` / `wait_for_disconnect()` show whether a client hung up mid-answer.
- `POST /v1/embeddings`: deterministic hashed bag-of-words vectors, unit length.
- `GET /v1/models`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_TEXT = "Fake-Antwort."
FAKE_MODEL_ID = "fake-model"

_TOKEN_RE = re.compile(r"\S+\s*|\s+")
_WORD_RE = re.compile(r"\w+", re.UNICODE)

Answer = str | Callable[[dict], str]


@dataclass
class _Script:
    text: Answer
    match: Callable[[dict], bool] | None
    status: int
    delay_s: float
    malformed: bool
    chunk_delay_s: float
    break_stream_after: int | None
    times: int
    endless: bool = False
    first_token_delay_s: float = 0.0
    non_json: bool = False
    wrong_shape: bool = False


# An endless stream without a chunk delay would flood the client (and these 2 cores).
ENDLESS_CHUNK_DELAY_S = 0.01
# Even an endless answer ends some time: a forgotten client must not keep a thread for ever.
ENDLESS_MAX_S = 120.0


def closed_port_url() -> str:
    """A base URL where nothing listens: bind, read the port, close; a connect is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return f"http://127.0.0.1:{port}/v1"


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Hash bag-of-words into `dim` buckets, normalized: equal texts give equal vectors and texts
    that share words are closer than texts that share none."""
    vec = [0.0] * dim
    words = _WORD_RE.findall(text.lower()) or ["<leer>"]
    for word in words:
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        sign = 1.0 if digest[4] & 1 else -1.0
        vec[index] += sign
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:  # all words cancelled out in one bucket; keep the vector usable
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


def _text_of(answer: Answer, body: dict) -> str:
    return answer(body) if callable(answer) else answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a test that gives up on a slow answer must not hang the exit

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients drop idle keep-alive connections with a reset (timeouts, GC of an old client);
        # that is normal here and must not print a traceback into the test output.
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class FakeOpenAI:
    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.base_url = ""
        self.requests: list[dict] = []
        self.latency_s = 0.0
        self._scripts: list[_Script] = []
        self._default: Answer = DEFAULT_TEXT
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        # One entry per chat answer the handler finished: "complete" or "disconnected".
        self.stream_outcomes: list[str] = []
        self._outcome_seen = threading.Condition(self._lock)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        server = _Server(("127.0.0.1", 0), handler)
        self._server = server
        port = server.server_address[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget scripts, recorded requests, default answer and latency (between tests)."""
        with self._lock:
            self._scripts.clear()
            self.requests.clear()
            self.stream_outcomes.clear()
            self._default = DEFAULT_TEXT
            self.latency_s = 0.0

    # -- scripting ---------------------------------------------------------------------------

    def add(
        self,
        text: Answer = "",
        *,
        match: Callable[[dict], bool] | None = None,
        status: int = 200,
        delay_s: float = 0.0,
        malformed: bool = False,
        chunk_delay_s: float = 0.0,
        break_stream_after: int | None = None,
        times: int = 1,
        endless: bool = False,
        first_token_delay_s: float = 0.0,
        non_json: bool = False,
        wrong_shape: bool = False,
    ) -> None:
        """Script a chat answer. The first scripted answer (FIFO) whose `match(body)` is true
        answers and uses up one of its `times`. `text` may be a callable of the request body.
        The failure modes are described in the module docstring."""
        if times < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._scripts.append(
                _Script(
                    text=text,
                    match=match,
                    status=status,
                    delay_s=delay_s,
                    malformed=malformed,
                    chunk_delay_s=chunk_delay_s,
                    break_stream_after=break_stream_after,
                    times=times,
                    endless=endless,
                    first_token_delay_s=first_token_delay_s,
                    non_json=non_json,
                    wrong_shape=wrong_shape,
                )
            )

    def set_default(self, text: Answer) -> None:
        """The answer when no scripted answer matches."""
        with self._lock:
            self._default = text

    def pending(self) -> int:
        """How many scripted answers are still unused (a test can assert all were consumed)."""
        with self._lock:
            return sum(s.times for s in self._scripts)

    # -- inspection --------------------------------------------------------------------------

    def chat_requests(self) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if r.get("path") == "/v1/chat/completions"]

    def wait_for_disconnect(self, timeout_s: float = 5.0) -> bool:
        """Wait until some chat answer ended because the client hung up."""
        deadline = time.monotonic() + timeout_s
        with self._outcome_seen:
            while "disconnected" not in self.stream_outcomes:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._outcome_seen.wait(left)
            return True

    def system_prompt(self, i: int = -1) -> str:
        messages = self.chat_requests()[i].get("messages") or []
        return "\n".join(
            m.get("content") or "" for m in messages if m.get("role") in ("system", "developer")
        )

    # -- used by the handler -----------------------------------------------------------------

    def _record(self, body: dict) -> None:
        with self._lock:
            self.requests.append(body)

    def _record_outcome(self, outcome: str) -> None:
        with self._outcome_seen:
            self.stream_outcomes.append(outcome)
            self._outcome_seen.notify_all()

    def _next_id(self) -> str:
        with self._lock:
            self._counter += 1
            return f"chatcmpl-fake-{self._counter}"

    def _take_script(self, body: dict) -> _Script:
        with self._lock:
            for script in self._scripts:
                if script.match is None or script.match(body):
                    script.times -= 1
                    if script.times == 0:
                        self._scripts.remove(script)
                    return script
            default = self._default
        return _Script(
            text=default,
            match=None,
            status=200,
            delay_s=0.0,
            malformed=False,
            chunk_delay_s=0.0,
            break_stream_after=None,
            times=1,
        )


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    # HTTP/1.1 so that streamed answers use chunked encoding: a connection closed before the
    # final empty chunk is then a detectable broken stream, as with a real server.
    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections end eventually

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY Nagle's algorithm and
        # the client's delayed ACK add ~40 ms to every answer, which would skew benchmarks.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    # -- plumbing ----------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str) -> None:
        kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
        self._send_json(
            status, {"error": {"message": message, "type": kind, "param": None, "code": None}}
        )

    def _read_body(self) -> dict | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self.fake._record({"path": self.path, "unparseable": raw.decode("utf-8", "replace")})
            self._send_error(400, "request body is not JSON")
            return None
        if not isinstance(body, dict):
            self._send_error(400, "request body is not a JSON object")
            return None
        body["path"] = self.path
        self.fake._record(body)
        return body

    def _client_gone(self) -> bool:
        """Has the client closed its end? (readable with nothing to read = EOF)"""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _wait(self, seconds: float) -> bool:
        """Sleep, watching the client: False as soon as it hung up."""
        deadline = time.monotonic() + seconds
        while True:
            if self._client_gone():
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, 0.02))

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # -- routes ------------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self.fake._record({"path": "/v1/models"})
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": FAKE_MODEL_ID, "object": "model", "created": 0, "owned_by": "fake"}
                    ],
                },
            )
            return
        self._send_error(404, f"unknown path {self.path}")

    def do_POST(self) -> None:
        try:
            if self.path == "/v1/chat/completions":
                body = self._read_body()
                if body is not None:
                    self._chat(body)
            elif self.path == "/v1/embeddings":
                body = self._read_body()
                if body is not None:
                    self._embeddings(body)
            else:
                self._read_body()
                self._send_error(404, f"unknown path {self.path}")
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (timeout tests); nothing to answer any more.
            self.close_connection = True
            if self.path == "/v1/chat/completions":
                self.fake._record_outcome("disconnected")

    def _chat(self, body: dict) -> None:
        script = self.fake._take_script(body)
        delay = script.delay_s + self.fake.latency_s
        if delay:
            time.sleep(delay)
        if script.status != 200:
            self._send_error(script.status, f"scripted error {script.status}")
            return
        text = _text_of(script.text, body)
        model = body.get("model") or FAKE_MODEL_ID
        if body.get("stream"):
            self._chat_stream(text, model, script)
            return
        if script.first_token_delay_s and not self._wait(script.first_token_delay_s):
            self._hung_up()
            return
        if script.endless:
            # Unstreamed, an endless generation is an answer that never comes.
            self._wait(ENDLESS_MAX_S)
            self._hung_up()
            return
        if script.non_json:
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            self.fake._record_outcome("complete")
            return
        if script.wrong_shape:
            # Valid JSON, but a legacy completions body: no "message" in the choice.
            self._send_json(
                200, {"id": self.fake._next_id(), "object": "text_completion", "result": text}
            )
            self.fake._record_outcome("complete")
            return
        if script.malformed:
            data = b'{"id": "chatcmpl-broken", "choices": [ this is not json'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        words = len(text.split())
        self._send_json(
            200,
            {
                "id": self.fake._next_id(),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": 1,
                    "completion_tokens": words,
                    "total_tokens": words + 1,
                },
            },
        )
        self.fake._record_outcome("complete")

    def _hung_up(self) -> None:
        self.close_connection = True
        self.fake._record_outcome("disconnected")

    def _chat_stream(self, text: str, model: str, script: _Script) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk_id = self.fake._next_id()
        created = int(time.time())

        def event(delta: dict, finish_reason: str | None) -> bytes:
            chunk = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            return f"data: {json.dumps(chunk)}\n\n".encode()

        if script.malformed:
            self._write_chunk(b"data: {this is not json\n\n")
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
            return
        if script.first_token_delay_s and not self._wait(script.first_token_delay_s):
            self._hung_up()
            return
        if script.wrong_shape:
            self._write_chunk(f"data: {json.dumps({'id': chunk_id, 'result': text})}\n\n".encode())
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
            self.fake._record_outcome("complete")
            return
        if script.endless:
            self._endless_stream(text, event, script)
            return
        for i, token in enumerate(_TOKEN_RE.findall(text)):
            if script.break_stream_after is not None and i >= script.break_stream_after:
                self._break_connection()
                return
            if i and script.chunk_delay_s and not self._wait(script.chunk_delay_s):
                self._hung_up()
                return
            delta = {"role": "assistant", "content": token} if i == 0 else {"content": token}
            self._write_chunk(event(delta, None))
        if script.break_stream_after is not None:
            # Fewer tokens than the break point: still cut the stream before its end.
            self._break_connection()
            return
        self._write_chunk(event({}, "stop"))
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")  # the terminating zero-length chunk
        self.fake._record_outcome("complete")

    def _endless_stream(
        self, text: str, event: Callable[[dict, str | None], bytes], script: _Script
    ) -> None:
        # A model that never stops and ignores max_tokens: the text's tokens, round and round.
        tokens = _TOKEN_RE.findall(text or "bla ") or ["bla "]
        delay = script.chunk_delay_s or ENDLESS_CHUNK_DELAY_S
        ends = time.monotonic() + ENDLESS_MAX_S
        i = 0
        while time.monotonic() < ends:
            token = tokens[i % len(tokens)]
            delta = {"role": "assistant", "content": token} if i == 0 else {"content": token}
            self._write_chunk(event(delta, None))  # BrokenPipe when the client hung up
            i += 1
            if not self._wait(delay):
                self._hung_up()
                return
        self._break_connection()

    def _break_connection(self) -> None:
        # Drop the socket without the terminating chunk, as a crashed server would.
        self.close_connection = True
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _embeddings(self, body: dict) -> None:
        raw_input = body.get("input")
        if isinstance(raw_input, str):
            texts = [raw_input]
        elif isinstance(raw_input, list) and all(isinstance(t, str) for t in raw_input):
            texts = raw_input
        else:
            self._send_error(400, "input must be a string or a list of strings")
            return
        dim = body.get("dimensions") or self.fake.dim
        if not isinstance(dim, int) or dim < 1:
            self._send_error(400, "dimensions must be a positive integer")
            return
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vec = hashed_embedding(text, dim)
            embedding: Any = (
                base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii")
                if as_base64
                else vec
            )
            data.append({"object": "embedding", "index": i, "embedding": embedding})
        tokens = sum(len(t.split()) for t in texts)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or FAKE_MODEL_ID,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )
