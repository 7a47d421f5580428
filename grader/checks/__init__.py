"""Checks: pure functions from observations (plain data and tensors) to findings.

Child-side helpers that *record* observations live beside the judges that read them, so one
module holds one concept: numerics, allocation, api, policy, tensor state.
"""
