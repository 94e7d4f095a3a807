"""Reading and writing config files, and where kep keeps things.

Knows nothing of trust or of tool formats: which project settings apply is decided by
tuiapp.project."""
