"""The registry plugged into orchestra's engines: DAG tasks, subagents, guarded tools, steps."""
