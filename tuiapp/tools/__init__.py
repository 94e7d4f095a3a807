"""Tool discovery, running and watching. Never imports textual."""
