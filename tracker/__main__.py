"""`python -m tracker` does what `gpu-tracker` does."""

from tracker.cli import main

main()
