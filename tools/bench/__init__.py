"""The measuring drivers behind BENCHMARKS.md (tools/bench/README.md lists them).

Run each from the repository root as a module: `python3 -m tools.bench.NAME`.
"""
