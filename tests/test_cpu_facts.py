"""Host CPU facts: detected from LLVM and sysfs, consistent with each other."""

from lamina.target.cpu_facts import host_cpu_facts


def test_host_facts_are_consistent() -> None:
    facts = host_cpu_facts()
    assert facts.vector_bits in (128, 256, 512)
    assert facts.vector_registers == (32 if "avx512f" in facts.features else 16)
    assert facts.lanes(32) == facts.vector_bits // 32
    assert 0 < facts.l1d_bytes <= facts.l2_bytes <= facts.l3_bytes
    assert facts.cores >= 1


def test_replace_overrides_one_fact() -> None:
    narrow = host_cpu_facts().replace(vector_bits=256)
    assert narrow.lanes(32) == 8
    assert narrow.cpu_name == host_cpu_facts().cpu_name
