"""``python -m orchestra.cli``: the ``orchestra`` command."""

from orchestra.cli import main

main(prog_name="orchestra")
