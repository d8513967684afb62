"""The retrieval server and client over real HTTP: `searchrl serve` as a subprocess on a free loopback port.

Every endpoint, every request limit and bad input (oversized chunked and declared bodies over a raw socket,
deeply nested JSON), the bearer token, Search-R1's client code against our server, concurrent clients, a
failing retriever (500, and the server keeps serving), and the client's retries against a server that is
stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from searchrl.cli import main as cli_main
from searchrl.errors import ConfigError, RetrievalError
from searchrl.retrieval import Hit, RemoteRetriever, build_index, load_index, load_retriever, render_hits
from searchrl.retrieval.server import ServerLimits, bind_socket, create_app, is_loopback

SEARCHRL = Path(sys.executable).parent / "searchrl"


def searchr1_passages2string(retrieval_result: list[dict]) -> str:
    """Search-R1's `generation.py::_passages2string`, verbatim (PeterGriffinJin/Search-R1@a14dc3a)."""
    format_reference = ''
    for idx, doc_item in enumerate(retrieval_result):
        content = doc_item['document']['contents']
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        format_reference += f"Doc {idx+1}(Title: {title}) {text}\n"
    return format_reference


@pytest.fixture(scope="module")
def index_dir(qa_samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serve") / "bm25"
    assert cli_main(["index", "build", "--corpus", str(qa_samples / "nq_oracle" / "corpus.jsonl"), "--kind", "bm25",
                     "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def local(index_dir: Path):
    return load_index(index_dir)


def _start_server(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([str(SEARCHRL), "serve", *args, "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    seen = []
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if "listening on " in line:
            return proc, line.split("listening on ")[1].split()[0]
    proc.kill()
    raise AssertionError(f"server did not start: {''.join(seen)}")


@pytest.fixture(scope="module")
def server(index_dir: Path) -> Iterator[str]:
    proc, url = _start_server("--index", str(index_dir))
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def http(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30) as client:
        yield client


QUERIES = ["who got the first nobel prize in physics", "when is the next deadpool movie being released"]


def test_server_binds_loopback_and_reports_health(server: str, http: httpx.Client) -> None:
    assert server.startswith("http://127.0.0.1:")
    health = http.get("/health").json()
    assert health["status"] == "ok" and health["kind"] == "bm25" and health["num_docs"] == 989
    assert set(health["cache"]) == {"hits", "misses", "size", "maxsize"} and health["default_topk"] == 3


def test_retrieve_matches_search_r1_shapes(http: httpx.Client, local) -> None:
    expected = local.search(QUERIES, topk=3)
    body = http.post("/retrieve", json={"queries": QUERIES, "topk": 3, "return_scores": True}).json()
    assert list(body) == ["result"] and len(body["result"]) == 2
    for items, hits in zip(body["result"], expected):
        assert [set(item) for item in items] == [{"document", "score"}] * 3
        assert [item["document"] for item in items] == [{"id": h.doc_id, "contents": h.contents} for h in hits]
        assert [item["score"] for item in items] == pytest.approx([h.score for h in hits], rel=1e-6)
        # What a Search-R1 rollout builds from our answer is exactly what searchrl's rollout renders.
        assert searchr1_passages2string(items) == render_hits(hits)
    # return_scores false (Search-R1's own server crashes here): documents without scores.
    plain = http.post("/retrieve", json={"queries": QUERIES, "topk": 2, "return_scores": False}).json()
    assert [[set(item) for item in items] for items in plain["result"]] == [[{"document"}] * 2] * 2
    assert [[i["document"]["id"] for i in items] for items in plain["result"]] == [
        [h.doc_id for h in hits[:2]] for hits in expected]
    # topk null or absent: the server default (3); return_scores absent: false, as in Search-R1.
    for payload in ({"queries": QUERIES, "topk": None}, {"queries": QUERIES}):
        result = http.post("/retrieve", json=payload).json()["result"]
        assert [len(items) for items in result] == [3, 3] and "score" not in result[0][0]
    assert http.post("/retrieve", json={"queries": []}).json() == {"result": []}


@pytest.mark.parametrize(("payload", "status", "message"), [
    (b'{"queries": ["a"', 400, "not valid JSON"),
    (b'\xff\xfe', 400, "not valid JSON"),
    (b'["a", "b"]', 422, "must be a JSON object"),
    (b'{"topk": 3}', 422, "field 'queries' is required"),
    (b'{"queries": "who"}', 422, "field 'queries' must be a list of strings"),
    (b'{"queries": ["ok", 5]}', 422, "queries[1] must be a string"),
    (json.dumps({"queries": ["q"] * 1025}).encode(), 422, "at most 1024 per request"),
    (json.dumps({"queries": ["ok", "x" * 4097]}).encode(), 422, "queries[1] has 4097 characters; at most 4096"),
    (b'{"queries": ["a"], "topk": 0}', 422, "between 1 and 100"),
    (b'{"queries": ["a"], "topk": 101}', 422, "between 1 and 100"),
    (b'{"queries": ["a"], "topk": "3"}', 422, "field 'topk' must be an integer or null"),
    (b'{"queries": ["a"], "topk": 2.5}', 422, "field 'topk' must be an integer or null"),
    (b'{"queries": ["a"], "topk": true}', 422, "field 'topk' must be an integer or null"),
    (b'{"queries": ["a"], "return_scores": "yes"}', 422, "field 'return_scores' must be true or false"),
    (b"[" * 100_000, 400, "nests JSON too deeply"),  # was a 500 (RecursionError)
    (b'{"queries": [' * 50_000, 400, "nests JSON too deeply"),
    (b'{"queries": ["a"], "topk": ' + b"9" * 5000 + b"}", 400, "not valid JSON"),  # was a 500 (int digit limit)
    # A misspelt field was ignored (top_k: 5 got the default 3 hits): now named, with the fields there are.
    (b'{"queries": ["a"], "top_k": 5}', 422, "unknown field 'top_k'; a request has only the fields queries, topk, "
                                             "return_scores"),
    (b'{"queries": ["a"], "topk": 2, "return_score": true}', 422, "unknown field 'return_score'"),
])
def test_bad_requests_get_clear_4xx(http: httpx.Client, payload: bytes, status: int, message: str) -> None:
    response = http.post("/retrieve", content=payload, headers={"content-type": "application/json"})
    assert response.status_code == status
    assert message in response.json()["detail"]


def test_limits_accept_the_largest_valid_request_and_other_routes(http: httpx.Client) -> None:
    body = {"queries": ["nobel prize"] * 1024, "topk": 100, "return_scores": True}
    result = http.post("/retrieve", json=body).json()["result"]
    assert len(result) == 1024 and 3 < len(result[0]) <= 100
    assert http.post("/retrieve", json={"queries": ["q" * 4096], "topk": 1}).status_code == 200
    assert http.get("/retrieve").status_code == 405
    assert http.get("/nowhere").status_code == 404
    assert http.get("/docs").status_code == 404  # no CDN-backed docs page


def test_concurrent_clients_get_their_own_answers(server: str, local) -> None:
    questions = [f"{q} {i}" for i in range(8) for q in QUERIES]  # distinct queries per client
    expected = local.search(questions, topk=3)
    remote = RemoteRetriever(server)

    def client(i: int) -> list[list[Hit]]:
        return remote.search(questions[2 * i:2 * i + 2], topk=3)

    with ThreadPoolExecutor(8) as pool:
        answers = [hits for part in pool.map(client, range(8)) for hits in part]
    assert [[h.doc_id for h in hits] for hits in answers] == [[h.doc_id for h in hits] for hits in expected]
    remote.close()


def test_remote_retriever_equals_local_and_counts_cache(server: str, local) -> None:
    for url in (server, server + "/retrieve", server + "/"):
        remote = load_retriever(url, cache=False)
        assert isinstance(remote, RemoteRetriever) and remote.retrieve_url == server + "/retrieve"
        assert remote.search(QUERIES, topk=3) == local.search(QUERIES, topk=3)
    before = remote.health()["cache"]
    remote.search(["Unique Query About Röntgen", "unique   query about röntgen"], topk=3)
    after = remote.health()["cache"]
    assert (after["misses"] - before["misses"], after["hits"] - before["hits"]) == (1, 1)
    remote.close()


def test_client_rejects_4xx_without_retry(server: str) -> None:
    remote = RemoteRetriever(server, retries=3, backoff=5.0)
    start = time.perf_counter()
    with pytest.raises(RetrievalError, match=r"rejected the request with 422: .*between 1 and 100"):
        remote.search(["a"], topk=500)
    assert time.perf_counter() - start < 4.0  # no backoff sleeps


def test_client_retries_then_names_the_url_of_a_stopped_server(index_dir: Path) -> None:
    proc, url = _start_server("--index", str(index_dir), "--no-cache")
    remote = RemoteRetriever(url, retries=2, backoff=0.05, connect_timeout=1.0, timeout=5.0)
    try:
        assert len(remote.search(QUERIES, topk=1)) == 2
        assert remote.health()["cache"] is None
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    start = time.perf_counter()
    with pytest.raises(RetrievalError) as err:
        remote.search(QUERIES, topk=1)
    elapsed = time.perf_counter() - start
    assert f"{url}/retrieve failed after 3 attempt(s): connection failed (ConnectError" in str(err.value)
    assert 0.15 <= elapsed < 10  # two backoff sleeps: 0.05 + 0.1


class FlakyRetriever:
    """A real index whose search raises for the query "boom" (a failing retriever, e.g. a broken disk)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls = 0
        self.kind, self.num_docs = inner.kind, inner.num_docs

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        self.calls += 1
        if "boom" in queries:
            raise OSError("disk read failed")
        return self.inner.search(queries, topk)


@contextlib.contextmanager
def _app_server(retriever, limits: ServerLimits | None = None, token: str | None = None) -> Iterator[str]:
    """`create_app` under uvicorn in a thread on a free loopback port (cheaper than a `searchrl serve` process)."""
    import uvicorn

    app = create_app(retriever, limits or ServerLimits(), token=token)
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        app.state.batcher.close()
        sock.close()


@pytest.fixture()
def flaky_server(local) -> Iterator[tuple[str, FlakyRetriever]]:
    flaky = FlakyRetriever(local)
    with _app_server(flaky) as url:
        yield url, flaky


def test_retriever_error_answers_500_and_server_keeps_serving(flaky_server: tuple[str, FlakyRetriever]) -> None:
    url, flaky = flaky_server
    response = httpx.post(url + "/retrieve", json={"queries": ["boom"], "topk": 3})
    assert response.status_code == 500
    assert response.json()["detail"] == "retriever failed: OSError: disk read failed"
    ok = httpx.post(url + "/retrieve", json={"queries": QUERIES, "topk": 3})
    assert ok.status_code == 200 and len(ok.json()["result"]) == 2
    assert httpx.get(url + "/health").json()["errors"] == 1
    # The client retries 5xx answers with backoff, then gives up naming the URL and the server's message.
    remote = RemoteRetriever(url, retries=2, backoff=0.01)
    calls = flaky.calls
    with pytest.raises(RetrievalError, match=r"failed after 3 attempt\(s\): server error 500: retriever failed: OSError"):
        remote.search(["boom"], topk=3)
    assert flaky.calls - calls == 3
    remote.close()


def test_cli_index_info_search_and_errors(index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli_main(["index", "info", str(index_dir)]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "bm25"
    assert cli_main(["index", "search", str(index_dir), "first nobel prize physics", "--topk", "2"]) == 0
    out = capsys.readouterr().out
    assert '[0] List of Nobel laureates in Physics' in out and 'Doc 1(Title: "List of Nobel laureates in Physics")' in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "0", "contents": "x"}\n{"id": "1" "contents": "y"}\n')
    assert cli_main(["index", "build", "--corpus", str(bad), "--kind", "bm25", "--out", str(tmp_path / "o"),
                     "--quiet"]) == 2
    assert f"{bad}:2: not valid JSON" in capsys.readouterr().err
    assert cli_main(["index", "build", "--corpus", str(bad), "--kind", "bm25", "--out", str(index_dir)]) == 2
    assert f"--out {index_dir}: already exists (a searchrl index folder); pass --overwrite" in capsys.readouterr().err
    assert cli_main(["serve", "--index", str(tmp_path / "none")]) == 2
    assert "no index, corpus or URL" in capsys.readouterr().err


def test_build_index_shows_progress(qa_samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    build_index(qa_samples / "nq_oracle" / "corpus.jsonl", "bm25", tmp_path / "i", show_progress=True)
    err = capsys.readouterr().err
    assert "indexed corpus.jsonl (bm25)" in err and "989 docs" in err


# ------------------------------------------------------------------------------------------ hostile clients

SMALL_LIMIT = 1024 * 1024


@pytest.fixture(scope="module")
def small_limit_server(local) -> Iterator[str]:
    with _app_server(local, ServerLimits(max_body_bytes=SMALL_LIMIT)) as url:
        yield url


def _raw_post(url: str, headers: list[str], body_bytes: int = 0, chunk: int = 64 * 1024) -> tuple[bytes, int]:
    """POST /retrieve over a raw socket with ``headers``; with ``body_bytes``, send that much chunked body but
    stop as soon as the server answers or closes. Returns (the server's bytes up to its close, body bytes sent)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)  # bounds what the kernel buffers on our side
    head = ["POST /retrieve HTTP/1.1", f"Host: {host}", "Content-Type: application/json", *headers]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    piece = f"{chunk:x}\r\n".encode() + b" " * chunk + b"\r\n"  # whitespace: a valid start of a JSON body
    sent = 0
    try:
        while sent < body_bytes:
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered (or closed) while the body was still being sent
            sock.sendall(piece)
            sent += chunk
        if sent >= body_bytes and body_bytes:
            sock.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed the connection without reading the rest: what the limit asks for
    answer = b""
    with contextlib.suppress(ConnectionResetError, TimeoutError):
        while data := sock.recv(65536):
            answer += data
    sock.close()
    return answer, sent


def _status_and_detail(answer: bytes) -> tuple[int, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)["detail"]


def test_chunked_body_over_the_limit_is_refused_before_it_is_read(small_limit_server: str) -> None:
    """A chunked body has no Content-Length: the server counts it as it arrives and stops at the limit (it used
    to read the whole body, e.g. 400 MiB, before answering 413)."""
    total = 32 * SMALL_LIMIT
    answer, sent = _raw_post(small_limit_server, ["Transfer-Encoding: chunked"], body_bytes=total)
    # The answer came while the client was still sending: at most the limit plus the sockets' buffers was sent.
    assert sent < total // 4, f"the client sent {sent} of {total} bytes before the server answered"
    status, detail = _status_and_detail(answer)
    assert status == 413 and f"request body has more than {SMALL_LIMIT} bytes; at most {SMALL_LIMIT}" in detail
    assert b"connection: close" in answer.lower()
    ok = httpx.post(small_limit_server + "/retrieve", json={"queries": QUERIES})
    assert ok.status_code == 200 and len(ok.json()["result"]) == 2
    assert httpx.get(small_limit_server + "/health").json()["rejected"]["413"] >= 1


def test_declared_body_over_the_limit_is_refused_at_once(small_limit_server: str) -> None:
    """A Content-Length over the limit: 413 before any body byte, and the connection is closed rather than
    kept open to drain a body the server will not read."""
    start = time.perf_counter()
    answer, _ = _raw_post(small_limit_server, [f"Content-Length: {8 * SMALL_LIMIT}"])
    status, detail = _status_and_detail(answer)
    assert status == 413 and f"request body has {8 * SMALL_LIMIT} bytes; at most {SMALL_LIMIT}" in detail
    assert time.perf_counter() - start < 5  # recv returned: the server closed without waiting for the body
    # At the limit exactly, the request is read and answered.
    body = json.dumps({"queries": ["nobel prize"]}).encode()
    padded = body + b" " * (SMALL_LIMIT - len(body))
    assert httpx.post(small_limit_server + "/retrieve", content=padded).status_code == 200
    assert httpx.post(small_limit_server + "/retrieve", content=padded + b" ").status_code == 413


def test_token_guards_retrieve_and_the_client_sends_it(local, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEARCHRL_SERVE_TOKEN", raising=False)
    with _app_server(local, token="s3cret-token") as url:
        missing = httpx.post(url + "/retrieve", json={"queries": QUERIES})
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert "requires a token: send the header 'Authorization: Bearer TOKEN'" in missing.json()["detail"]
        for header in ("Bearer wrong", "Basic czNjcmV0LXRva2Vu", "Bearer s3cret-token-and-more"):
            wrong = httpx.post(url + "/retrieve", json={"queries": QUERIES}, headers={"Authorization": header})
            assert wrong.status_code == 401, header
        ok = httpx.post(url + "/retrieve", json={"queries": QUERIES},
                        headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200 and len(ok.json()["result"]) == 2
        health = httpx.get(url + "/health").json()  # open: no passage, no query in it
        assert health["token_required"] is True and health["rejected"]["401"] == 4
        # The client: without a token it fails at once, naming the fix; with one (argument or variable) it works.
        with pytest.raises(RetrievalError, match=r"rejected the request with 401: .*SEARCHRL_SERVE_TOKEN"):
            RemoteRetriever(url, retries=3, backoff=5.0).search(QUERIES)
        remote = load_retriever(url, cache=False, token="s3cret-token")
        assert remote.search(QUERIES, topk=3) == local.search(QUERIES, topk=3)
        monkeypatch.setenv("SEARCHRL_SERVE_TOKEN", "s3cret-token")
        assert len(RemoteRetriever(url).search(QUERIES)) == 2
        with pytest.raises(RetrievalError, match="wrong bearer token"):
            RemoteRetriever(url, token="other").search(QUERIES)
    with pytest.raises(ConfigError, match="the server token is empty"):
        create_app(local, token=" ")


def test_cli_serve_reads_the_token_from_the_environment(index_dir: Path) -> None:
    proc, url = _start_server("--index", str(index_dir), env={**os.environ, "SEARCHRL_SERVE_TOKEN": "from-env"})
    try:
        assert httpx.post(url + "/retrieve", json={"queries": QUERIES}).status_code == 401
        assert len(RemoteRetriever(url, token="from-env").search(QUERIES)) == 2
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serve_warns_when_reachable_from_other_machines_without_a_token(index_dir: Path) -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.5", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.0.2.1", "no-such-host.invalid"))
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the warning is logged, then binding fails (exit 2),
    # so nothing is ever exposed by this test.
    env = {k: v for k, v in os.environ.items() if k != "SEARCHRL_SERVE_TOKEN"}
    for extra, warned in (([], True), (["--token", "t0ken"], False)):
        done = subprocess.run([str(SEARCHRL), "serve", "--index", str(index_dir), "--host", "192.0.2.1", "--port", "0",
                               *extra], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 2 and "cannot listen on 192.0.2.1:0" in done.stderr, done.stderr
        warning = "warning: listening on 192.0.2.1, which other machines can reach, without a token"
        assert (warning in done.stderr) == warned
        assert "Traceback" not in done.stderr


def _read_response(sock: socket.socket) -> bytes:
    """One HTTP response (headers and a Content-Length body) from a raw socket; b"" if the server closed it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_a_connection_whose_headers_do_not_arrive_in_time_is_closed(index_dir: Path) -> None:
    proc, url = _start_server("--index", str(index_dir), "--header-timeout", "1")
    host, port = url.removeprefix("http://").split(":")
    try:
        # slowloris: a request line and one header, then nothing; and a connection that sends nothing at all
        slow, silent = (socket.create_connection((host, int(port)), timeout=15) for _ in range(2))
        slow.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        assert slow.recv(100) == b"" and silent.recv(100) == b""  # closed by the server, not by our 15 s timeout
        assert time.monotonic() - started < 10
        # A kept-alive connection idling longer than the header timeout between requests is not cut by it
        # (the idle time is uvicorn's keep-alive timeout's), and a whole request is answered.
        with socket.create_connection((host, int(port)), timeout=15) as kept:
            for _ in range(2):
                kept.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert _read_response(kept).startswith(b"HTTP/1.1 200")
                time.sleep(1.5)
        assert httpx.get(url + "/health").status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serve_stops_cleanly_on_sigterm(index_dir: Path) -> None:
    import signal

    proc = subprocess.Popen([str(SEARCHRL), "serve", "--index", str(index_dir), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = next(line for line in proc.stdout if "listening on " in line).split("listening on ")[1].split()[0]
        assert httpx.post(url + "/retrieve", json={"queries": QUERIES}).status_code == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err  # was -15: uvicorn re-raised SIGTERM after its shutdown
    assert err == "searchrl serve: stopped (SIGTERM)\n"
