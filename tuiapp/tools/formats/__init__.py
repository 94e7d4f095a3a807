"""One module per on-disk tool format."""
