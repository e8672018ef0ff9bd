"""A provider's error answer reaches people and the store as one plain line: an HTML error page
with its line breaks, a terminal's escape sequences and NUL in the body of a 500 are flattened
in the run summary, the log and `collection_runs.error` (real CLI, loopback server, real
store)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from collectors.common import flat
from storage.query import query
from tracker.cli import cli

# A page a proxy might send, with a colour and a window-title escape, and a NUL.
PAGE = b"<html>\n<body>\r\n\tBad \x1b[31mgateway\x1b[0m\x00\n\x1b]0;pwned\x07</body>\n</html>\n"
ONE_LINE = "HTTP 500: <html> <body> Bad gateway </body> </html>"
# The plain-JSON collectors whose error carries the answer's text.
PROVIDERS = {"lambdalabs": "instance types", "paperspace": "sizes page 1"}


class Broken(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(500)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def broken() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Broken)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.usefixtures("one_retry")
def test_an_error_page_is_one_plain_line_everywhere(
    tmp_path: Path, broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ['[storage]\npath = "prices.duckdb"']
    for name in REGISTRY:
        if name in PROVIDERS:
            lines.append(f'[providers.{name}]\nendpoint = "{broken}"\ntimeout = 5')
        else:
            lines.append(f"[providers.{name}]\nenabled = false")
    config = tmp_path / "config.toml"
    config.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("LAMBDA_API_KEY", "demo")
    monkeypatch.setenv("DIGITALOCEAN_TOKEN", "demo")
    monkeypatch.delenv("GPU_TRACKER_DB", raising=False)
    result = CliRunner().invoke(cli, ["--config", str(config), "-v", "collect"])
    assert result.exit_code == 1, result.output
    assert "\x1b" not in result.output and "\x00" not in result.output
    assert "pwned" not in result.output
    runs = query(tmp_path / "prices.duckdb", "SELECT provider, error FROM collection_runs").rows
    assert dict(runs) == {name: f"{name}: {what}: {ONE_LINE}" for name, what in PROVIDERS.items()}


def test_flat_keeps_the_words_and_drops_the_rest() -> None:
    assert flat("a\n b\t\tc\r\n") == "a b c"
    assert flat("\x1b[1;31mred\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "red link"
    assert flat("nul\x00here, C1\x85too, DEL\x7f") == "nul here, C1 too, DEL"
    assert flat("plain line") == "plain line"
