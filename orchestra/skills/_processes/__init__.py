"""The processes hooks run in: spawning, the reaper, the sandbox, the environment."""
