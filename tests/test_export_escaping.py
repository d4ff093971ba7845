"""Names the target chose reach no export raw (issue 33, item 4).

A JVM's class, method and thread names are the target's text: the JVM
specification forbids only `. ; [ / < >` in them, so a patched JVM can hand
the recorder ESC, BEL, CR, LF, DEL, C1 controls and (modified UTF-8's NUL,
c0 80) bytes that are not UTF-8.  Here a trace made without a JVM
(`trace_edit - OUT hostile-names HEX`: every name of every table holds the
bytes below, with events of every probe an export draws) goes through every
writer of jvmtrace, and each output is read the way its consumer reads it:
pprof's gunzipped protobuf string by string and through `go tool pprof
-top`, Perfetto's deflated packets field by field, JSON decoded, SVG as XML,
text as it would reach a terminal.  No output may hold one of the raw bytes;
each must show the name, escaped as printable() escapes it.  Before the fix
the pprof profile, both Perfetto forms and the JSON outputs (DEL and C1
controls) carried them raw."""
import gzip
import json
import os
import re
import subprocess
import zlib
import xml.etree.ElementTree as ET

import pytest

from conftest import BUILD_DIR

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
TRACE_EDIT = BUILD_DIR / "tests/fixtures/trace_edit"

# A window-title write, CR LF, DEL, C1's CSI and NEL, a byte that is never
# UTF-8, modified UTF-8's NUL (an overlong form), a cut 3-byte sequence.
NAME = b"\x1b]2;PWNED\x07\r\n\x7f\xc2\x9b31m\xc2\x85\xff\xc0\x80\xe2\x82"
# The same as printable() writes it (the flame graph's frames have ':' for ';').
ESCAPED = "\\x1b]2;PWNED\\x07\\x0d\\x0a\\x7f\\xc2\\x9b31m\\xc2\\x85\\xff\\xc0\\x80\\xe2\\x82"
# What a terminal acts on, or what is not UTF-8: C0 but the tools' own tab
# and newline, DEL, C1 (U+0080..U+009F as UTF-8).
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def assert_clean(what, data, structural=b"\n\t"):
    """data (bytes) holds no control character but those the format itself
    puts between its parts, and is UTF-8."""
    raw = RAW.search(data.translate(None, structural) if structural else data)
    assert not raw, f"{what}: raw {raw.group()!r} at {raw.start()}: {data[max(0, raw.start() - 80):raw.start() + 80]!r}"
    if not structural:
        assert b"\n" not in data and b"\t" not in data, f"{what}: a raw newline or tab in {data[:200]!r}"
    data.decode("utf-8")  # (raises on bytes that are not UTF-8)


def assert_shows_name(what, text, escaped=ESCAPED):
    assert escaped in text, f"{what} does not show the name escaped: {text[:3000]!r}"


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("names") / "names.jvmtrace"
    subprocess.run([str(TRACE_EDIT), "-", str(path), "hostile-names", NAME.hex()], check=True, timeout=30)
    return path


@pytest.fixture(scope="module")
def damaged_trace(hostile_trace):
    """The same with its TLAB refill (event 1) for other bytes than its slow
    path's: `report --check` reports it, naming the class."""
    path = hostile_trace.with_name("damaged.jvmtrace")
    subprocess.run([str(TRACE_EDIT), str(hostile_trace), str(path), "set", "1", "2", "999"], check=True, timeout=30)
    return path


def trace_for(argv, hostile_trace, damaged_trace):
    return damaged_trace if "--check" in argv else hostile_trace


def run(*args, ok=(0,)):
    r = subprocess.run([str(JVMTRACE), *map(str, args)], capture_output=True, timeout=120)
    assert r.returncode in ok, r.stderr.decode(errors="replace")
    return r


# --- protobuf, read without a schema where there is none ----------------------------------------------


def proto_fields(data):
    """A protobuf message's fields as (number, wire type, value): varints as
    ints, length-delimited fields as bytes (fixed ones as bytes too)."""
    out, i = [], 0

    def varint():
        nonlocal i
        v, shift = 0, 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < len(data):
        key = varint()
        num, wt = key >> 3, key & 7
        if wt == 0:
            out.append((num, wt, varint()))
        elif wt == 2:
            n = varint()
            out.append((num, wt, data[i:i + n]))
            i += n
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            out.append((num, wt, data[i:i + n]))
            i += n
        else:
            raise AssertionError(f"wire type {wt} at {i}")
    assert i == len(data), "a field runs past the message"
    return out


@pytest.mark.no_root
def test_pprof_profile_holds_no_raw_name(hostile_trace, tmp_path):
    """The profile's string table (profile.proto field 6: every function
    name, system name, file name, label) holds only printable text, and
    `go tool pprof -top` prints the name escaped (before, it printed the
    escape sequence raw: the terminal's title changed)."""
    out = tmp_path / "names.pb.gz"
    run("export", "--pprof", hostile_trace, "-o", out)
    profile = gzip.decompress(out.read_bytes())
    strings = [v for num, wt, v in proto_fields(profile) if num == 6 and wt == 2]
    assert len(strings) > 10, strings
    for s in strings:
        assert_clean("a pprof string", s, structural=b"")
    table = [s.decode() for s in strings]
    # (the VM's frames above the Java ones are left out of a profile)
    for name in (f"p.C{ESCAPED}.m{ESCAPED}", f"p/F{ESCAPED}.java", f"p/C{ESCAPED}"):
        assert name in table, (name, table)
    env = {**os.environ, "HOME": str(tmp_path), "PPROF_TMPDIR": str(tmp_path)}
    top = subprocess.run(["go", "tool", "pprof", "-top", "-sample_index=alloc_space", str(out)], capture_output=True,
                         timeout=300, env=env)
    assert top.returncode == 0, top.stderr
    assert_clean("go tool pprof -top", top.stdout)
    assert_shows_name("go tool pprof -top", top.stdout.decode(), f"p.C{ESCAPED}.m{ESCAPED}")


def perfetto_strings(msg):
    """Every string and bytes field in a decoded Perfetto message, at any depth."""
    for field, value in msg.ListFields():
        values = value if field.label == field.LABEL_REPEATED else [value]
        for v in values:
            if field.type == field.TYPE_MESSAGE:
                yield from perfetto_strings(v)
            elif field.type in (field.TYPE_STRING, field.TYPE_BYTES) and field.name != "compressed_packets":
                yield v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape")


@pytest.mark.no_root
def test_perfetto_protobuf_holds_no_raw_name(hostile_trace, tmp_path):
    """Every string of every packet, the deflated ones decoded, is printable
    text: track names (threads, the process), interned event names and
    annotation values (classes, causes, operations, the stack)."""
    import perfetto_trace
    out = tmp_path / "names.pftrace"
    run("export", "--perfetto", hostile_trace, "-o", out)
    # The packets are deflated: the raw bytes would not show in the file.
    assert zlib.decompress(perfetto_trace.parse(out).packet[0].compressed_packets)
    strings = [s for p in perfetto_trace.packets(perfetto_trace.parse(out)) for s in perfetto_strings(p)]
    assert len(strings) > 10
    for s in strings:
        assert_clean("a Perfetto string", s, structural=b"\n")  # (a stack's frames are lines)
    text = b"\0".join(strings).decode()
    for name in (f"T{ESCAPED}", f"W{ESCAPED} old-gen PLABs", f"p/C{ESCAPED}", f"cause{ESCAPED}",
                 f"Safepoint op{ESCAPED}", f"p.C{ESCAPED}.m{ESCAPED}:9_[j]"):
        assert_shows_name("the Perfetto trace", text, name)
    # And it still reads as the timeline it was: what the UI shows.
    names = {e["name"] for e in perfetto_trace.trace_events(out)}
    assert f"Safepoint op{ESCAPED}" in names, names


@pytest.mark.no_root
def test_perfetto_json_holds_no_raw_name(hostile_trace, tmp_path):
    """The Trace Event JSON form carries the same printable names as the
    protobuf form (the UI shows them; both forms are the same timeline)."""
    out = tmp_path / "names.json"
    run("export", "--perfetto", hostile_trace, "-o", out)
    data = out.read_bytes()
    assert_clean("the Trace Event JSON", data)
    doc = json.loads(data)
    strings = []

    def walk(v):
        if isinstance(v, str):
            strings.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(doc)
    for s in strings:
        assert_clean("a Trace Event string", s.encode(), structural=b"\n")
    assert_shows_name("the Trace Event JSON", "\0".join(strings), f"Safepoint op{ESCAPED}")
    assert_shows_name("the Trace Event JSON", "\0".join(strings), f"T{ESCAPED}")


@pytest.mark.no_root
@pytest.mark.parametrize("form", ["folded", "svg", "html"])
def test_flame_graph_holds_no_raw_name(hostile_trace, tmp_path, form):
    """The folded stacks (read by other tools and people), the SVG (which must
    stay XML: XML 1.0 allows no control character) and the HTML page."""
    out = tmp_path / f"names.{form}"
    run("flame", "--threads", hostile_trace, "-o", out)
    data = out.read_bytes()
    assert_clean(f"flame graph ({form})", data)
    text = data.decode()
    if form == "svg":
        ET.fromstring(text.split("\n", 1)[1])  # (after the XML declaration)
    folded = ESCAPED.replace(";", ":")
    for name in (f"T{folded}", f"p.C{folded}.m{folded}_[j]", f"p/C{folded}_[i]"):
        assert_shows_name(f"flame graph ({form})", text, name)


@pytest.mark.no_root
def test_html_report_holds_no_raw_name(hostile_trace, tmp_path):
    out = tmp_path / "names.html"
    run("report", "--html", hostile_trace, "-o", out)
    data = out.read_bytes()
    assert_clean("report --html", data)
    assert_shows_name("report --html", data.decode(), f"G1{ESCAPED}")
    assert_shows_name("report --html", data.decode(), f"Main{ESCAPED}")


@pytest.mark.no_root
@pytest.mark.parametrize("argv", [["dump"], ["report"], ["report", "--check"]], ids=" ".join)
def test_text_outputs_hold_no_raw_name(hostile_trace, damaged_trace, argv):
    r = run(*argv, trace_for(argv, hostile_trace, damaged_trace), ok=(4,) if "--check" in argv else (0,))  # (report --check: 4 when it finds something)
    assert_clean(" ".join(argv), r.stdout)
    assert_shows_name(" ".join(argv), r.stdout.decode())


@pytest.mark.no_root
@pytest.mark.parametrize("argv", [["dump", "--json"], ["report", "--json"], ["report", "--check", "--json"]],
                         ids=" ".join)
def test_json_outputs_hold_no_raw_byte_and_keep_the_name(hostile_trace, damaged_trace, argv):
    """jvmtrace's own JSON is data (docs/decisions.md 127): a name decodes to
    itself (bytes that are not UTF-8 as U+FFFD), and every control character
    in it, DEL and C1 included, is a JSON escape: the text holds none raw
    (nlohmann escapes only U+0000..U+001F; DEL and C1 went out raw)."""
    r = run(*argv, trace_for(argv, hostile_trace, damaged_trace), ok=(4,) if "--check" in argv else (0,))
    assert_clean(" ".join(argv), r.stdout)
    decoded = NAME.decode("utf-8", "replace")
    values = []
    for line in r.stdout.decode().splitlines():
        json.loads(line, object_hook=lambda o: values.extend(v for v in o.values() if isinstance(v, str)) or o)
    assert any(decoded in v for v in values), (decoded, values[:50])
