"""Exporters: write a tradebench dataset in another tool's on-disk format."""
