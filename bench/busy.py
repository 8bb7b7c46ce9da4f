"""A busy machine on demand: N processes that keep a CPU each busy for at most a given time, so a test
run can be tried the way a contributor's laptop runs it (beside a build, a browser, another test run).

    python bench/busy.py --processes 4 --minutes 60 &     # then: make test; kill %1

It prints the load average when it starts, every few minutes and when it stops, so a run's figures can
be read next to the load they were taken under. Every worker stops by itself at the deadline, and all
stop when this process gets SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import time


def spin(deadline: float) -> None:
    """Keep one CPU busy until `deadline` (time.monotonic())."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    while time.monotonic() < deadline:
        sum(i * i for i in range(10_000))


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--minutes", type=float, default=60.0, help="the workers stop by themselves after this")
    parser.add_argument("--report-every", type=float, default=300.0, help="seconds between load-average lines")
    args = parser.parse_args()
    began = time.monotonic()
    deadline = began + args.minutes * 60
    workers = [multiprocessing.Process(target=spin, args=(deadline,), daemon=True) for _ in range(args.processes)]
    for worker in workers:
        worker.start()
    print(f"busy: {args.processes} processes for at most {args.minutes:g} min; load average {load_average()}",
          flush=True)

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        reported = began
        while any(worker.is_alive() for worker in workers):
            time.sleep(1.0)
            if time.monotonic() - reported >= args.report_every:
                reported = time.monotonic()
                print(f"busy: {(reported - began) / 60:.1f} min, load average {load_average()}", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()
        print(f"busy: stopped after {(time.monotonic() - began) / 60:.1f} min; load average {load_average()}",
              flush=True)


if __name__ == "__main__":
    main()
