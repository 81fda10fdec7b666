"""The daemon's durable state: one SQLite database in the state directory."""
