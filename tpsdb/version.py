"""The package's version, in a module of its own: tpsdb/__init__.py exports the API (the top floor), so a module
lower down (collect/http.py's User-Agent) takes the version from here, not from the package's door."""

__version__ = "0.1.0"  # as pyproject.toml's [project] version
