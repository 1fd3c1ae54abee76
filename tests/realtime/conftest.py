"""The real-time tests' fixtures from elsewhere: the page tests' headless Chromium."""

from chromium import browser  # noqa: F401
