"""``_common.pyx`` exports no Python names: its checks are cimported by the other binding modules."""
