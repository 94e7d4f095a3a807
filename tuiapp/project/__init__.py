"""The opened project: settings and trust decided once, the registry, the session to start."""
