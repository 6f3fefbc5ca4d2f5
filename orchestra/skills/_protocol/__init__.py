"""What passes between orchestra and a hook: the events, what a hook gets, what it answers."""
