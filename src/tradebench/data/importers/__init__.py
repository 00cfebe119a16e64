"""Importers that turn external layouts into tradebench datasets."""
