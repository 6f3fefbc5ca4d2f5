"""Claude Code's own files (settings, plugins' ``hooks.json``) as hook sources.

``reader`` reads one file as Claude Code does; ``settings`` applies what holds across the
files of one ``load`` (``disableAllHooks``, allowed URLs) and ``hooks import``;
``grants`` the network grants the user gave. Imports no other format (``make lint``).
"""
