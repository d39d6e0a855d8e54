"""Job functions the rq end-to-end script enqueues (imported by the worker)."""


def add(a, b):
    return a + b


def fail(message):
    raise ValueError(message)
