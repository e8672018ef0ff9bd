"""Regenerate the README's picture of the dashboard, docs/dashboard.png, from the demo store.

It builds the demo store (`gpu-tracker demo --keep`, the recorded answers replayed on
loopback), serves it with `gpu-tracker serve` on a free loopback port, and has headless
Chromium (Debian's /usr/bin/chromium, no download) take the screenshot of the Now panel
filtered to H100, at 1,280 x 820 px. Nothing leaves the machine.

    python docs/screenshot.py [--out docs/dashboard.png] [--path "/?gpu=H100"]
                              [--width 1280] [--height 820] [--chromium /usr/bin/chromium]

Run it from a checkout with the package installed (`pip install -e .`) after a change to what
the Now panel shows or to the demo's recordings (docs/web.md, "The README's screenshot").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
# A container without a display, a GPU or a network: nothing starts by itself.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
LISTENING = "serving the dashboard of "  # the line `serve` says once it answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "dashboard.png")
    parser.add_argument("--path", default="/?gpu=H100", help="the page and its filters")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=820)
    parser.add_argument("--chromium", type=Path, default=Path("/usr/bin/chromium"))
    args = parser.parse_args()
    if not args.chromium.exists():
        sys.exit(f"{args.chromium} is absent (apt-get install chromium, or --chromium PATH)")
    with tempfile.TemporaryDirectory(prefix="gpu-tracker-screenshot-") as work:
        store = Path(work) / "demo.duckdb"
        tracker = [sys.executable, "-m", "tracker"]
        demo = subprocess.run([*tracker, "demo", "--keep", str(store)], capture_output=True,
                              text=True)  # fmt: skip
        if demo.returncode != 0:
            sys.exit(f"gpu-tracker demo failed (exit {demo.returncode}):\n{demo.stderr}")
        serve = [*tracker, "--db", str(store), "serve", "--listen", "127.0.0.1:0"]
        with subprocess.Popen(serve, stderr=subprocess.PIPE, text=True) as server:
            try:
                url = _listening(server)
                _check(url)
                shot = Path(work) / "dashboard.png"
                _shoot(args, url.rstrip("/") + args.path, Path(work) / "profile", shot)
            finally:
                server.terminate()
                server.wait()
        _small(shot, args.out)
    print(f"wrote {args.out} ({args.width} x {args.height} px of {args.path})")
    return 0


def _listening(server: subprocess.Popen[str]) -> str:
    """The URL `serve` says it answers on (port 0: the one it was given)."""
    assert server.stderr is not None
    for line in server.stderr:
        if LISTENING in line:
            return line.split(" on ", 1)[1].split()[0]
    sys.exit(f"gpu-tracker serve ended (exit {server.wait()}) before it listened")


def _small(shot: Path, out: Path) -> None:
    """The screenshot in 256 colours: a third of the size, the text as sharp (a page of flat
    colours has few more)."""
    from PIL import Image  # matplotlib's own dependency: installed with the tracker

    out.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(shot) as image:
        image.convert("RGB").quantize(colors=256).save(out, optimize=True)


def _check(url: str) -> None:
    with urllib.request.urlopen(url, timeout=60) as answer:  # the page renders: no error shot
        if answer.status != 200:
            sys.exit(f"{url} answered {answer.status}")


def _shoot(args: argparse.Namespace, url: str, profile: Path, shot: Path) -> None:
    command = [
        str(args.chromium),
        *FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={args.width},{args.height}",
        f"--screenshot={shot}",
        url,
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    if not shot.exists():
        sys.exit(f"chromium took no screenshot of {url}")


if __name__ == "__main__":
    sys.exit(main())
