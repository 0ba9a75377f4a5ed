"""The chaos suite (issue 17): real worker processes killed again and again, every message
counted. Slow (marked by the worker fixtures); run apart with `pytest tests/chaos`."""

from tests.worker.conftest import records, start_worker

__all__ = ["records", "start_worker"]  # fixtures, for this folder
