"""`python -m streams_rt.cli ...`, the same as the `streams-rt` script."""

from streams_rt.cli import main

main()
