"""Reading one hook entry of a config: YAML with lines, an entry's fields, matchers, rules."""
