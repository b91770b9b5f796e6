"""The `accelenv` command line: thin — parse, call the domain or the HTTP client, render, exit."""
