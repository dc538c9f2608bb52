"""Shared builders for the input-layer tests (issue 10)."""
