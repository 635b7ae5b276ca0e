"""Real text available offline, for tests, benchmarks, measurements and the demo: nothing that
tokenizes imports this package."""
