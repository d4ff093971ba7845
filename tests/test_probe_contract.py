"""The probe contract (usdt/jvmtrace.d), its catalogue (docs/probes.md) and
the probes really compiled into the patched libjvm.so and the fixture agree."""
import re

import pytest

from helpers import REPO, TYPE_NOTE_SIZE, contract_probes, note_arg_size, usdt_notes

NOP5 = bytes.fromhex("0f1f440000")


def catalogue_probes(path=REPO / "docs/probes.md"):
    """{probe: [(type, arg_name), ...]} from the '### `probe`' tables."""
    probes, cur = {}, None
    for line in path.read_text().splitlines():
        m = re.match(r"### `(\w+)`", line)
        if m:
            cur = probes.setdefault(m.group(1), [])
            continue
        m = re.match(r"\| (\d+) \| (\w+) \| ([^|]+?) \|", line)
        if m and cur is not None:
            assert int(m.group(1)) == len(cur), f"argument numbering in docs/probes.md: {line}"
            cur.append((m.group(3).replace(" *", "*"), m.group(2)))
        elif line.startswith("## ") or line.startswith("#### "):
            cur = None
    return probes


def catalogue_record(probe, path=REPO / "docs/probes.md"):
    """[(offset, field, type)] from the table under "#### `probe`'s record"."""
    fields, inside = [], False
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            inside = line.startswith(f"#### `{probe}`'s record")
            continue
        m = re.match(r"\| (\d+) \| (\w+) \| ([^|]+?) \|", line)
        if inside and m:
            fields.append((int(m.group(1)), m.group(2), m.group(3).strip()))
    return fields


def contract_record(probe, path=REPO / "usdt/jvmtrace.d"):
    """[(offset, field, type)], size from the record layout in the comment
    just above the probe's declaration."""
    text = path.read_text()
    decl = text.index(f"probe {probe}(")
    comment = text[text.rindex("/*", 0, decl):decl]
    fields, off = [], 0
    for m in re.finditer(r"\*\s+(uint64_t|int32_t|uint32_t|uint8_t)\s+(\w+)(\[(\d+)\])?;", comment):
        typ, name, n = m.group(1), m.group(2), int(m.group(4) or 1)
        size = {"uint64_t": 8, "int32_t": 4, "uint32_t": 4, "uint8_t": 1}[typ] * n
        fields.append((off, name, typ if n == 1 else f"{n} bytes"))
        off += size
    return fields, off


def c_struct_fields(struct, path=REPO / "bpf/jvmtrace_events.h"):
    """[(offset, field)], size of a struct of __uN/__sN fields in the header."""
    body = re.search(rf"struct {struct} \{{(.*?)\}};", path.read_text(), re.S).group(1)
    fields, off = [], 0
    for m in re.finditer(r"__([us])(\d+) (\w+)(\[(\d+)\])?;", body):
        bits, name, n = int(m.group(2)), m.group(3), int(m.group(5) or 1)
        fields.append((off, name))
        off += bits // 8 * n
    return fields, off


def vm_struct_fields(struct, path=REPO / "usdt/hotspot/shared/utilities/jvmtraceProbes.hpp"):
    """[(offset, field, type)], size of the struct the VM fills (the header
    every release line's patch shares)."""
    body = re.search(rf"struct {struct} \{{(.*?)\}};", path.read_text(), re.S).group(1)
    fields, off = [], 0
    for m in re.finditer(r"(uint64_t|int32_t|uint32_t|uint8_t)\s+(\w+)(\[(\d+)\])?;", body):
        typ, name, n = m.group(1), m.group(2), int(m.group(4) or 1)
        fields.append((off, name, typ if n == 1 else f"{n} bytes"))
        off += {"uint64_t": 8, "int32_t": 4, "uint32_t": 4, "uint8_t": 1}[typ] * n
    return fields, off


@pytest.mark.parametrize("probe,struct,vm_struct,size", [("plab__batch", "jt_plab_record", "JvmtracePlabRecord", 48),
                                                         ("alloc__batch", "jt_alloc_record", "JvmtraceAllocRecord", 72)])
def test_batch_record_layout_agrees(probe, struct, vm_struct, size):
    """A batch record's layout: the contract's comment, the catalogue, the
    struct the VM fills (usdt/hotspot/shared, every release line) and the
    BPF/user-space struct (bpf/jvmtrace_events.h) say the same, field for
    field and offset for offset."""
    contract, contract_size = contract_record(probe)
    assert contract_size == size
    assert catalogue_record(probe) == contract
    assert vm_struct_fields(vm_struct) == (contract, size)
    c_fields, c_size = c_struct_fields(struct)
    assert c_size == size
    assert c_fields == [(o, f) for o, f, _ in contract]



def test_contract_parses_and_has_the_required_probes():
    probes = contract_probes()
    required = {"tlab__refill", "alloc__slow__enter", "alloc__slow__exit", "gc__start", "gc__end",
                "plab__alloc", "plab__retire", "promote__direct", "alloc__batch", "alloc__drain"}
    assert required <= set(probes), f"missing from usdt/jvmtrace.d: {required - set(probes)}"
    for name, args in probes.items():
        for typ, arg in args:
            assert typ in TYPE_NOTE_SIZE, f"{name}.{arg}: type {typ!r} outside the contract's types"


def test_catalogue_matches_contract():
    assert catalogue_probes() == contract_probes()


def check_notes(notes, where):
    contract = contract_probes()
    ours = [p for p in notes if p.provider == "jvmtrace"]
    names = {p.name for p in ours}
    assert names == set(contract), f"{where}: probes {sorted(names)} != contract {sorted(contract)}"
    for p in ours:
        want = [TYPE_NOTE_SIZE[t] for t, _ in contract[p.name]]
        got = [note_arg_size(a) for a in p.args]
        assert got == want, f"{where}: {p.name} at {p.location:#x} args {p.args}, contract sizes {want}"
        assert p.semaphore != 0, f"{where}: {p.name} at {p.location:#x} has no semaphore"
    return ours


def nop_at(path, vaddr):
    """The 5 bytes at a virtual address of an ELF file (via its section table)."""
    from subprocess import run
    out = run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if not m:
            continue
        addr, off, size = (int(g, 16) for g in m.groups()[1:])
        if addr <= vaddr < addr + size and m.group(1) == ".text":
            with open(path, "rb") as f:
                f.seek(off + vaddr - addr)
                return f.read(5)
    raise AssertionError(f"{vaddr:#x} is not in .text of {path}")


def test_fixture_notes_match_contract(usdt_fixture):
    ours = check_notes(usdt_notes(usdt_fixture), "usdt_fixture")
    for p in ours:
        assert nop_at(usdt_fixture, p.location) == NOP5, f"{p.name}: not a 5-byte nop"


def test_patched_libjvm_notes_match_contract(patched_libjvm):
    ours = check_notes(usdt_notes(patched_libjvm), "patched libjvm.so")
    # Every site is the 5-byte nop the kernel can optimise (not sdt.h's 1-byte nop).
    for p in ours:
        assert nop_at(patched_libjvm, p.location) == NOP5, f"{p.name} at {p.location:#x}: not a 5-byte nop"
    # HotSpot's own probes are untouched: still there, still without semaphores.
    stock = [p for p in usdt_notes(patched_libjvm) if p.provider == "hotspot"]
    assert any(p.name == "gc__begin" for p in stock)
    assert all(p.semaphore == 0 for p in stock)


def test_unpatched_libjvm_has_no_jvmtrace_probes(unpatched_libjvm):
    notes = usdt_notes(unpatched_libjvm)
    assert [p for p in notes if p.provider == "jvmtrace"] == []
    assert any(p.provider == "hotspot" and p.name == "gc__begin" for p in notes), \
        "the unpatched baseline should still carry HotSpot's own probes (same --enable-dtrace)"
