"""The package version, sent in User-Agent (kept equal to pyproject.toml by the tests)."""

VERSION = "0.1.0"
