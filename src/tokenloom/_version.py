"""The package version, in a leaf module so that library code can record it without importing the API root."""

__version__ = "0.1.0"
