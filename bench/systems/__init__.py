"""The systems that bench/peers.py compares: tablequeue and its peers, one module each.

Every system answers the same small interface (`common.System`); its consumer runs as a
subprocess: `python -m bench.systems.MODULE consume URL QUEUE BATCH READY_FILE [LATENCY_FILE]`.
"""
