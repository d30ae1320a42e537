"""tpsdb: LLM inference speed figures (tokens per second) kept with their conditions and provenance."""

__version__ = "0.1.0"
