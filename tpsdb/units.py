"""The units figures are given in, defined once: the validator (tpsdb.record) and the readers of tool output
(tpsdb.collect) both convert with these, and neither depends on the other for them.

llama-bench prints model sizes in binary units (GiB, MiB: `llama_model_size / 1024.0 / 1024.0 / 1024.0`);
records state decimal GB."""

GIB_IN_GB = 1.073741824  # 2**30 / 10**9
MIB_IN_GB = 0.001048576  # 2**20 / 10**9
