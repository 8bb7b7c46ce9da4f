"""`python -m streams_rt.config --markdown`: print docs/configuration.md as the registry defines it."""

from __future__ import annotations

import argparse

from streams_rt.config.markdown import REGENERATE, render


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m streams_rt.config", description=__doc__)
    parser.add_argument("--markdown", action="store_true", required=True,
                        help=f"print the configuration page (`{REGENERATE}`)")
    parser.parse_args(argv)
    print(render(), end="")


if __name__ == "__main__":
    main()
