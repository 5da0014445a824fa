"""`make test-llm`'s language model: llama.cpp's OpenAI-compatible server (the package
`llama-cpp-python[server]`) serving the small packaged GGUF model, on a free port, for exactly as
long as one command runs.

    python tests/llm_server.py --python var/llm/venv/bin/python \\
        --model var/llm/gemma-3-270m-q4_k_m.gguf --log var/llm/server.log -- COMMAND ...

The server is started from that interpreter (its own virtual environment: it compiles llama.cpp
and must not mix with the project's packages), waited for until `GET /v1/models` answers, and
COMMAND runs with `NOVABERG_LLM_BASE_URL`, `NOVABERG_LLM_MODEL` and `NOVABERG_LLM_SERVER_LOG` (the
server's log, which the robustness tests read to see the server notice a cancelled stream) set.
When COMMAND ends, also by Ctrl-C or SIGTERM, the server is stopped (its whole process group).

Exit status: COMMAND's; 3 when the server did not come up (its log's tail is printed).

`--interrupt_requests False`: llama-cpp-python's server by default ends a running stream as soon
as the next request arrives. That would hide whether our own cancel (Stop) reached the server,
and it is not what other OpenAI-compatible servers (Ollama, vLLM) do.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType

MODEL_ALIAS = "gemma-3-270m"
READY_TIMEOUT_S = 180.0
# Wide enough for the responder's prompt (identity, rules, directives, history, composer text).
CONTEXT_TOKENS = 8192


def say(text: str) -> None:
    print(f"novaberg: {text}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def models_answer(base_url: str) -> list[str] | None:
    """The model ids of GET /v1/models, or None while the server does not answer yet."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
            body = json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m.get("id")) for m in data if isinstance(m, dict)]


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(kein Log)"


def start_server(python: str, model: Path, port: int, log: Path, threads: int) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    args = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT_TOKENS),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--interrupt_requests",
        "False",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # its "disconnected" lines reach the log now
    with log.open("wb") as out:
        return subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own group: stopped as a whole, not hit by our Ctrl-C
        )


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_ready(proc: subprocess.Popen, base_url: str, log: Path) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            say(f"FEHLER: der Sprachmodell-Server endete mit {proc.returncode}:\n{tail(log)}")
            return False
        models = models_answer(base_url)
        if models is not None:
            say(f"Sprachmodell-Server bereit: {base_url} (Modelle: {', '.join(models)})")
            return True
        time.sleep(0.3)
    say(
        f"FEHLER: der Sprachmodell-Server antwortete nicht in {READY_TIMEOUT_S:.0f} s:\n{tail(log)}"
    )
    return False


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True, help="interpreter with llama-cpp-python")
    parser.add_argument("--model", required=True, type=Path, help="the GGUF file")
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("kein Befehl nach --")
    if not args.model.is_file():
        say(f"FEHLER: Modelldatei {args.model} fehlt (make test-llm legt sie an)")
        return 3
    signal.signal(signal.SIGTERM, _terminate)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    proc = start_server(args.python, args.model, port, args.log, args.threads)
    try:
        if not wait_ready(proc, base_url, args.log):
            return 3
        env = {
            **os.environ,
            "NOVABERG_LLM_BASE_URL": base_url,
            "NOVABERG_LLM_MODEL": MODEL_ALIAS,
            "NOVABERG_LLM_API_KEY": "",
            "NOVABERG_LLM_SERVER_LOG": str(args.log.resolve()),
        }
        return subprocess.run(command, env=env, check=False).returncode
    except KeyboardInterrupt:
        return 130
    finally:
        stop_server(proc)
        say(f"Sprachmodell-Server beendet (Log: {args.log})")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
