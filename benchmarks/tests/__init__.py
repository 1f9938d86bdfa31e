"""The benchmarks' own tests: ``bash scripts/test.sh benchmarks/tests`` (CI runs it after the
product's suite, which never collects these)."""
