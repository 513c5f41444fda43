"""The one compiled part: the checker's event loop in C (checker/_scan.c, why there).
Everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("checker._scan", ["checker/_scan.c"], extra_compile_args=["-O2"])])
