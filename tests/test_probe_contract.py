"""The probe contract (usdt/jvmtrace.d), its catalogue (docs/probes.md) and
the probes really compiled into the patched libjvm.so and the fixture agree."""
import os
import re
from pathlib import Path

import pytest

from helpers import REPO, TYPE_NOTE_SIZE, abi_enums, contract_probes, note_arg_size, usdt_notes

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


def abi_struct_fields(struct, path=REPO / "usdt/jvmtrace_abi.h"):
    """[(offset, field)], size of a struct of __uN/__sN fields in the ABI
    header (what the VM fills, BPF reads and user space decodes)."""
    body = re.search(rf"struct {struct} \{{(.*?)\}};", path.read_text(), re.S).group(1)
    fields, off = [], 0
    for m in re.finditer(r"__([us])(\d+) (\w+)(\[(\d+)\])?;", body):
        bits, name, n = int(m.group(2)), m.group(3), int(m.group(5) or 1)
        fields.append((off, name))
        off += bits // 8 * n
    return fields, off


@pytest.mark.parametrize("probe,struct,size", [("plab__batch", "jvmtrace_plab_record", 48),
                                               ("alloc__batch", "jvmtrace_alloc_record", 72)])
@pytest.mark.no_root
def test_batch_record_layout_agrees(probe, struct, size):
    """A batch record's layout: the contract's comment, the catalogue and the
    ABI header's struct (which the VM fills, every release line, and BPF and
    user space read) say the same, field for field and offset for offset."""
    contract, contract_size = contract_record(probe)
    assert contract_size == size
    assert catalogue_record(probe) == contract
    fields, abi_size = abi_struct_fields(struct)
    assert abi_size == size
    assert fields == [(o, f) for o, f, _ in contract]


# --- the contract's values: declared once, in usdt/jvmtrace_abi.h -----------

def without_parentheses(text):
    out, depth = "", 0
    for c in text:
        depth += c == "("
        if depth == 0:
            out += c
        depth -= c == ")" and depth > 0
    return out


def documented_values(text, enum):
    """{ENUMERATOR: value} from prose such as "0 failed (...), 1 new TLAB":
    each "N words" names the enumerator of `enum` whose suffix begins or ends
    its words (the longest such suffix)."""
    values = [n for n in abi_enums()[enum] if not n.endswith("_COUNT")]
    prefix = os.path.commonprefix(values)
    prefix = prefix[:prefix.rindex("_") + 1]  # JVMTRACE_SLOW_
    names = {n: n[len(prefix):].lower() for n in values}
    found = {}
    for part in without_parentheses(text).split(","):
        m = re.fullmatch(r"\s*(\d+) (.+?)\s*", part.replace("`", ""))
        assert m, f"not a 'N words' value: {part!r} in {text!r}"
        words = re.sub(r"[^a-z_]+", "_", re.sub(r"\b(a|an|the)\b", "", m.group(2).lower())).strip("_")
        words = re.sub(r"_+", "_", words)
        fits = [n for n, suffix in names.items() if words.startswith(suffix) or words.endswith(suffix)]
        assert fits, f"{m.group(2)!r} names no value of enum {enum}"
        found[max(fits, key=lambda n: len(names[n]))] = int(m.group(1))
    return found


def contract_words(probe, marker, path=REPO / "usdt/jvmtrace.d"):
    """The values after `marker` in the comment above probe's declaration,
    up to the sentence's end."""
    text = path.read_text()
    decl = text.index(f"probe {probe}(")
    comment = text[text.rindex("/*", 0, decl) + 2:decl]
    comment = re.sub(r"\s*\n\s*\*\s*", " ", comment).replace("*/", "")
    after = without_parentheses(comment[comment.index(marker) + len(marker):])
    return re.split(r"\.|\buint\d+_t\b|\bint\d+_t\b", after)[0]


def catalogue_words(probe, arg, path=REPO / "docs/probes.md"):
    """The description cell of arg's row under probe's heading (its table of
    arguments, or of its record's fields), after any "as ...'s:" lead-in."""
    inside = False
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            inside = line.startswith(f"### `{probe}`") or line.startswith(f"#### `{probe}`'s record")
            continue
        m = re.match(rf"\| \d+ \| {arg} \| [^|]+ \| (.+) \|$", line)
        if inside and m:
            return m.group(1).split(":", 1)[-1]
    raise AssertionError(f"docs/probes.md has no row {arg} under {probe}")


ABI_WORDS = [
    ("jvmtrace_slow_outcome", [contract_words("alloc__slow__exit", "outcome:"),
                               catalogue_words("alloc__slow__exit", "outcome"),
                               catalogue_words("alloc__slow", "outcome")]),
    ("jvmtrace_gc_kind", [contract_words("gc__start", "kind:"), catalogue_words("gc__start", "kind")]),
    ("jvmtrace_pause_kind", [contract_words("gc__pause__start", "kind:"),
                             catalogue_words("gc__pause__start", "kind")]),
    ("jvmtrace_plab_dest", [contract_words("plab__alloc", "dest:"), catalogue_words("plab__alloc", "dest"),
                            catalogue_words("plab__retire", "dest"), catalogue_words("promote__direct", "dest"),
                            catalogue_words("plab__batch", "dest")]),
    ("jvmtrace_plab_record_kind", [contract_words("plab__batch", "kind;"), catalogue_words("plab__batch", "kind")]),
]


@pytest.mark.no_root
@pytest.mark.parametrize("enum,texts", ABI_WORDS, ids=[e for e, _ in ABI_WORDS])
def test_abi_values_are_the_contracts_words(enum, texts):
    """Every value of the ABI header, which the VM, the BPF programs and user
    space compile, is the number the contract (usdt/jvmtrace.d) and the
    catalogue (docs/probes.md) give it in words: a value changed in the
    header alone, or in the words alone, fails here."""
    declared = {n: v for n, v in abi_enums()[enum].items() if not n.endswith("_COUNT")}
    for text in texts:
        assert documented_values(text, enum) == declared, f"{enum}: {text!r}"


ABI_NAMES = re.compile(r"\b(JVMTRACE_(SLOW|GC|PAUSE|DEST|PLAB_REC)_[A-Z_]+)\s*=\s*\d")
LITERAL_USE = re.compile(r"\b(outcome|kind|dest)\s*(==|!=|<=|>=|<|>)\s*\d|\b\d\s*(==|!=)\s*(outcome|kind|dest)\b")


@pytest.mark.no_root
def test_the_abi_values_are_declared_nowhere_else():
    """No other source declares a contract value or compares an outcome, a
    kind or a destination with a bare number: the patch's site changes (its
    added lines), the files it shares, the BPF programs and user space."""
    sources = [p for d in ("bpf", "userspace", "usdt/hotspot/shared", "tests/fixtures", "tests/fuzz")
               for p in (REPO / d).rglob("*") if p.suffix in (".c", ".h", ".cpp", ".hpp")]
    patches = sorted((REPO / "usdt/hotspot").glob("jdk*.patch"))
    assert sources and len(patches) == 3
    found = []
    for p in sources + patches:
        lines = p.read_text().splitlines()
        if p.suffix == ".patch":
            lines = [ln[1:] for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
        for n, ln in enumerate(lines, 1):
            code = ln.split("//")[0]
            if ABI_NAMES.search(code) or LITERAL_USE.search(code):
                found.append(f"{p.relative_to(REPO)}:{n}: {ln.strip()}")
    assert not found, "the contract's values belong in usdt/jvmtrace_abi.h:\n" + "\n".join(found)


@pytest.mark.no_root
def test_contract_parses_and_has_the_required_probes():
    probes = contract_probes()
    required = {"tlab__refill", "alloc__slow__enter", "alloc__slow__exit", "gc__start", "gc__end",
                "plab__alloc", "plab__retire", "promote__direct", "alloc__batch", "alloc__drain"}
    assert required <= set(probes), f"missing from usdt/jvmtrace.d: {required - set(probes)}"
    for name, args in probes.items():
        for typ, arg in args:
            assert typ in TYPE_NOTE_SIZE, f"{name}.{arg}: type {typ!r} outside the contract's types"


def abi_probe_list(path=REPO / "usdt/jvmtrace_abi.h"):
    """The X(name) entries of JVMTRACE_PROBES, in order."""
    m = re.search(r"#define JVMTRACE_PROBES\(X\)((?:[^\n]*\\\n)*[^\n]*)", Path(path).read_text())
    assert m, f"{path}: no JVMTRACE_PROBES list"
    return re.findall(r"X\((\w+)\)", m.group(1))


@pytest.mark.no_root
def test_abi_probe_list_is_the_contracts():
    # The VM and the fixture define their semaphores from this list: a probe
    # the .d file gains without it would have no semaphore to link against.
    assert abi_probe_list() == list(contract_probes())


@pytest.mark.no_root
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
        # A global as an operand is "sym(%rip)", which libbpf cannot read
        # ("unrecognized arg spec"): the probe would not attach at all.
        rip = [a for a in p.args if "(%rip)" in a]
        assert not rip, f"{where}: {p.name} at {p.location:#x} has RIP-relative arguments {rip}"
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


@pytest.mark.no_root
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


def test_stock_libjvm_has_no_jvmtrace_probes(stock_libjvm):
    notes = usdt_notes(stock_libjvm)
    assert [p for p in notes if p.provider == "jvmtrace"] == []
    assert any(p.provider == "hotspot" and p.name == "gc__begin" for p in notes), \
        "Debian's own libjvm.so should carry HotSpot's own probes (Debian builds with --enable-dtrace)"
