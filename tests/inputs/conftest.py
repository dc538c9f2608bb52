"""Shared builders for the input-layer tests (docs/cli.md#bad-input)."""
