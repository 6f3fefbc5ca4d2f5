"""Claude Code's own files (settings, plugins) as hook sources."""
