"""One module per `kep` subcommand; cli.py imports them lazily."""
