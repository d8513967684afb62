"""Probe: `searchrl serve` under bounded hostile and normal load, on this machine's loopback only.

Run: .venv/bin/python benchmarks/probe_server.py [--clients 8] [--requests 50] [--oversize-mib 400] [--deadline 180]

Builds a BM25 index over tests/fixtures/qa/nq_oracle/corpus.jsonl in a temporary folder, starts `searchrl serve
--host 127.0.0.1 --port 0` with a token (given in $SEARCHRL_SERVE_TOKEN, as a user would), and sends, one case
after another:

- normal load: ``--clients`` threads x ``--requests`` requests of 4 real questions each, with the token;
- an oversized chunked body (``--oversize-mib``, no Content-Length), sent over a raw socket until the server
  answers or closes; and a Content-Length of the same size with no body;
- deeply nested JSON (``[`` x 100000 and ``{"queries": [`` x 50000);
- no token, a wrong token, another auth scheme;
- malformed fields (bad JSON, wrong types, too many queries, too long a query, topk out of range, huge integer);
- misspelt and unknown fields (``top_k``, ``query``, ``return_score``, ``k``): must be 422, a 200 is a silent accept;
- slowloris: connections that send their request line and headers a byte at a time, or nothing at all, while
  real clients keep searching: each must be closed by the server (its header timeout, ``--header-timeout``,
  default 15 s) within ``--slow-limit`` seconds, else it is counted as a hang;
- SIGTERM while clients are searching: the server must exit 0 (or with a one-line message) without a traceback,
  within 10 s.

The summary counts failures per class: tracebacks (in the server's output), silent accepts, data loss (none
possible: the server writes nothing; always 0), hangs, and signals (SIGTERM not handled cleanly).

For each case it prints the status codes seen, the bytes the client got to send, the server's resident memory
after the case and its peak so far (VmHWM from /proc), then a summary table. It is bounded: every socket has a
timeout, the whole run a deadline, and the server is stopped at the end whatever happens. Not a timing benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "fixtures" / "qa" / "nq_oracle" / "corpus.jsonl"
QUESTIONS = REPO / "tests" / "fixtures" / "qa" / "nq_oracle" / "questions.jsonl"
TOKEN = "probe-token-6c1f"


def memory_mib(pid: int) -> tuple[float, float]:
    """(resident, peak resident) memory of ``pid`` in MiB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def start_server(index: Path, deadline: float) -> tuple[subprocess.Popen, str, list[str]]:
    """(process, URL, the list its output lines keep arriving in)."""
    searchrl = Path(sys.executable).parent / "searchrl"
    command = [str(searchrl)] if searchrl.exists() else [sys.executable, "-m", "searchrl.cli"]
    proc = subprocess.Popen([*command, "serve", "--index", str(index), "--host", "127.0.0.1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "SEARCHRL_SERVE_TOKEN": TOKEN})
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []
    threading.Thread(target=lambda: [(lines.put(line), seen.append(line)) for line in proc.stdout],
                     daemon=True).start()
    while time.time() < deadline and proc.poll() is None:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if "listening on " in line:
            return proc, line.split("listening on ")[1].split()[0], seen
    proc.kill()
    raise SystemExit(f"the server did not start:\n{''.join(seen)}")


def slow_client(url: str, mode: str, limit: float) -> float | None:
    """A slowloris connection: "trickle" sends a request's headers one byte a second, "silent" sends nothing.
    Returns the seconds until the server closed it, or None if it was still open after `limit` seconds."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=limit)
    head = (f"POST /retrieve HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n"
            + "".join(f"X-Pad-{i}: {'x' * 20}\r\n" for i in range(200))).encode()
    start = time.monotonic()
    try:
        for byte in (head if mode == "trickle" else b""):
            if select.select([sock], [], [], 1.0)[0] and not sock.recv(1024):
                return time.monotonic() - start  # closed by the server
            if time.monotonic() - start > limit:
                return None
            sock.sendall(bytes([byte]))
        while time.monotonic() - start < limit:
            if select.select([sock], [], [], 0.5)[0] and not sock.recv(1024):
                return time.monotonic() - start
        return None
    except (BrokenPipeError, ConnectionResetError):
        return time.monotonic() - start
    finally:
        sock.close()


def raw_post(url: str, headers: list[str], body_bytes: int = 0, chunk: int = 256 * 1024) -> tuple[int | None, int]:
    """POST /retrieve over a raw socket; with ``body_bytes``, a chunked body sent until the server answers or
    closes. Returns (status or None, body bytes sent)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=20)
    head = ["POST /retrieve HTTP/1.1", f"Host: {host}", "Content-Type: application/json",
            f"Authorization: Bearer {TOKEN}", *headers]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    piece = f"{chunk:x}\r\n".encode() + b" " * chunk + b"\r\n"
    sent = 0
    try:
        while sent < body_bytes and not select.select([sock], [], [], 0)[0]:
            sock.sendall(piece)
            sent += chunk
        if body_bytes and sent >= body_bytes:
            sock.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = b""
    try:
        while data := sock.recv(65536):
            answer += data
            if b"\r\n\r\n" in answer:
                break
    except (ConnectionResetError, TimeoutError):
        pass
    sock.close()
    return (int(answer.split()[1]) if answer.startswith(b"HTTP/") else None), sent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=50, help="requests per client")
    parser.add_argument("--oversize-mib", type=int, default=400, help="size of the oversized bodies")
    parser.add_argument("--deadline", type=float, default=240, help="seconds for the whole probe")
    parser.add_argument("--slow-limit", type=float, default=40, help="seconds a slowloris connection may stay open")
    args = parser.parse_args()
    deadline = time.time() + args.deadline
    questions = [json.loads(line)["question"] for line in QUESTIONS.open()]

    from searchrl.retrieval import build_index

    rows: list[tuple[str, str, str, float, float]] = []
    failures: Counter = Counter({name: 0 for name in ("traceback", "silent accept", "data loss", "hang", "signals")})
    with tempfile.TemporaryDirectory(prefix="searchrl-probe-") as tmp:
        index = build_index(CORPUS, "bm25", Path(tmp) / "index", show_progress=False)
        proc, url, output = start_server(index, deadline)
        print(f"server pid {proc.pid} at {url} (loopback), index of {CORPUS.name}; token required")
        http = httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"})

        def record(case: str, statuses: Counter, note: str = "") -> None:
            rss, peak = memory_mib(proc.pid)
            codes = " ".join(f"{code}x{n}" for code, n in sorted(statuses.items(), key=lambda kv: str(kv[0])))
            rows.append((case, codes, note, rss, peak))
            print(f"- {case}: {codes}{'  ' + note if note else ''}  (server RSS {rss:.0f} MiB, peak {peak:.0f} MiB)",
                  flush=True)

        def post(payload: bytes, **headers: str) -> int:
            return http.post("/retrieve", content=payload, headers=headers).status_code

        try:
            record("idle after start", Counter({http.get("/health").status_code: 1}))

            def client(i: int) -> Counter:
                seen: Counter = Counter()
                with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
                    for r in range(args.requests):
                        if time.time() > deadline:
                            seen["deadline"] += 1
                            break
                        start = (i * args.requests + r) * 4 % len(questions)
                        answer = c.post("/retrieve", json={"queries": questions[start:start + 4], "topk": 3})
                        seen[answer.status_code] += 1
                return seen

            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                load = sum(pool.map(client, range(args.clients)), Counter())
            record(f"normal load {args.clients}x{args.requests}", load, f"{time.perf_counter() - t0:.1f} s")

            size = args.oversize_mib * 1024 * 1024
            status, sent = raw_post(url, ["Transfer-Encoding: chunked"], body_bytes=size)
            record(f"chunked body of {args.oversize_mib} MiB", Counter({status: 1}),
                   f"client sent {sent / 2**20:.1f} MiB before the answer")
            status, _ = raw_post(url, [f"Content-Length: {size}"])
            record(f"Content-Length {args.oversize_mib} MiB, no body", Counter({status: 1}))

            nested = Counter([post(b"[" * 100_000), post(b'{"queries": [' * 50_000)])
            record("nested JSON (2 bodies)", nested)

            auth = Counter()
            auth[httpx.post(url + "/retrieve", json={"queries": ["q"]}).status_code] += 1
            for header in ("Bearer wrong", "Basic cHJvYmU6dG9rZW4=", f"Bearer {TOKEN}x", "Bearer"):
                auth[httpx.post(url + "/retrieve", json={"queries": ["q"]},
                                headers={"Authorization": header}).status_code] += 1
            record("missing / wrong token (5 requests)", auth)

            malformed = [b'{"queries": ["a"', b"\xff\xfe", b'["a"]', b'{"topk": 3}', b'{"queries": "who"}',
                         b'{"queries": ["ok", 5]}', json.dumps({"queries": ["q"] * 1025}).encode(),
                         json.dumps({"queries": ["x" * 4097]}).encode(), b'{"queries": ["a"], "topk": 0}',
                         b'{"queries": ["a"], "topk": "3"}', b'{"queries": ["a"], "return_scores": "yes"}',
                         b'{"queries": ["a"], "topk": ' + b"9" * 5000 + b"}", b'{"queries": ["a"], "topk": NaN}']
            record(f"malformed fields ({len(malformed)} bodies)", Counter(post(body) for body in malformed))

            unknown = [b'{"queries": ["a"], "top_k": 5}', b'{"query": ["a"], "queries": ["b"]}',
                       b'{"queries": ["a"], "topk": 2, "return_score": true}', b'{"queries": ["a"], "k": 1}']
            statuses = Counter(post(body) for body in unknown)
            failures["silent accept"] += statuses[200]
            record(f"unknown fields ({len(unknown)} bodies)", statuses, "a 200 is a silent accept")

            # slowloris, while real clients search: every slow connection must be closed by the server
            with ThreadPoolExecutor(12) as pool:
                slow = [pool.submit(slow_client, url, mode, args.slow_limit) for mode in ("trickle", "silent") * 5]
                t0 = time.perf_counter()
                served = Counter(http.post("/retrieve", json={"queries": questions[:2]}).status_code for _ in range(20))
                served_s = time.perf_counter() - t0
                closed = [f.result() for f in slow]
            open_ones = sum(c is None for c in closed)
            failures["hang"] += open_ones
            shut = [c for c in closed if c is not None]
            record(f"slowloris: {len(closed)} slow connections", served,
                   f"closed by the server: {len(shut)} (after {min(shut, default=0):.0f}-{max(shut, default=0):.0f} s), "
                   f"still open after {args.slow_limit:.0f} s: {open_ones}; 20 normal requests meanwhile in "
                   f"{served_s:.1f} s")

            health = http.get("/health").json()
            ok = http.post("/retrieve", json={"queries": questions[:2]})
            record("still serving afterwards", Counter({ok.status_code: 1}),
                   f"health: requests={health['requests']} errors={health['errors']} rejected={health['rejected']}")

            # SIGTERM while a client keeps searching
            stop = threading.Event()

            def busy() -> None:
                with httpx.Client(base_url=url, timeout=5, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
                    while not stop.is_set():
                        try:
                            c.post("/retrieve", json={"queries": questions[:4]})
                        except httpx.HTTPError:
                            return

            worker = threading.Thread(target=busy, daemon=True)
            worker.start()
            time.sleep(0.5)
            t0 = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
            stop.set()
            worker.join(timeout=10)
            time.sleep(0.2)  # the reader thread takes the last lines
            tail = [ln.strip() for ln in output if ln.strip()][-1:]
            clean = code == 0 or (code is not None and code > 0 and tail and "error" in tail[0])
            failures["signals"] += not clean
            failures["hang"] += code is None
            rows.append(("SIGTERM under load", f"exit {code}", f"{time.perf_counter() - t0:.1f} s; last line: "
                         f"{tail[0] if tail else '-'}", 0.0, 0.0))
            print(f"- SIGTERM under load: exit {code} after {time.perf_counter() - t0:.1f} s "
                  f"({'clean' if clean else 'NOT CLEAN'}); last line {tail}", flush=True)
        finally:
            http.close()
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        failures["traceback"] += sum("Traceback" in line for line in output)

    width = max(len(r[0]) for r in rows)
    print(f"\n{'case':<{width}}  {'statuses':<22} {'RSS MiB':>8} {'peak MiB':>9}  note")
    for case, codes, note, rss, peak in rows:
        print(f"{case:<{width}}  {codes:<22} {rss:>8.0f} {peak:>9.0f}  {note}")
    print("failures by class: " + ", ".join(f"{name} {n}" for name, n in failures.items()))
    return 0 if not sum(failures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
