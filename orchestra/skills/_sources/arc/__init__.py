"""Arc's TOML ``[[hooks]]`` files (seed 001) as hook sources."""
