"""Maintenance tools of the repository; see tools/README.md."""
