"""``_common.pyx`` exports one Python name, :data:`MAX_THREADS`; its checks are cimported by the other binding
modules."""

MAX_THREADS: int
