"""Hook sources: each file format turned into the same hook specs, and trusting them.

- ``files``: which files a ``load(*paths)`` reads, in which order;
- ``read``: each file read by the reader of its format, the results merged;
- ``orchestra``: orchestra's own format (``orchestra.yaml``, SKILL.md front matter);
- ``claude``: Claude Code's files; ``graph``: the graph executor's (seed 000);
  ``arc``: Arc's TOML (seed 001); ``seed_fields``: what those two share;
- ``budget``: a file's ``budget:``; ``trust`` and ``covered``: the trust store, and the
  files a source runs that its trust covers.

Imports: ``_hooks`` and the layers below; the formats (``claude``, ``arc``, ``graph``)
do not import each other. Held by ``make lint`` (import-linter).
"""
