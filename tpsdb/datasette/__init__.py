"""Datasette metadata for `tpsdb serve` (package data)."""
