"""What may run and what may be seen: folder trust, rules, approvals, secrets, the sandbox,
confinement and the display edge. Widgets, commands and built-ins ask this package; none of
them re-implements a check."""
