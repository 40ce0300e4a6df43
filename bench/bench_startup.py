"""Start-up time of the command-line tools, against the 0.5 s target (lit
runs `tidu-opt` once per RUN line, so its start-up is most of lit's time).

    python bench/bench_startup.py [--repeat 10]

Each command runs `--repeat` times as a fresh process; the table gives the
best and the median wall time and the ratio to `xdsl-opt` on the same input
(the xDSL driver tidu-opt extends: its imports are the floor tidu-opt sits on).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from progress import progress

ROOT = Path(__file__).resolve().parents[1]
TOOLS = Path(sys.executable).parent
EXAMPLE = str(ROOT / "examples" / "square.mlir")
AD_PIPELINE = "linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}"

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "xdsl-opt (empty module)": [str(TOOLS / "xdsl-opt")],
    "tidu-opt (empty module)": [str(TOOLS / "tidu-opt")],
    "tidu-opt square.mlir": [str(TOOLS / "tidu-opt"), EXAMPLE],
    "tidu-opt square.mlir, AD passes": [str(TOOLS / "tidu-opt"), EXAMPLE, "-p", AD_PIPELINE],
}


def wall_times(command: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(
            command, input="builtin.module {}\n", capture_output=True, text=True, check=True
        )
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    rows = {
        name: wall_times(cmd, args.repeat) for name, cmd in progress(COMMANDS.items(), "startup")
    }
    floor = min(rows["xdsl-opt (empty module)"])
    print(f"{'command':34s} {'best s':>8s} {'median s':>9s} {'/xdsl-opt':>10s}")
    for name, times in rows.items():
        best = min(times)
        print(f"{name:34s} {best:8.3f} {statistics.median(times):9.3f} {best / floor:10.2f}")


if __name__ == "__main__":
    main()
