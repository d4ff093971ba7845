"""A corpus of real Java programs from Debian 12 packages, for the tests.

The project's own test programs (tests/java/) never start a G1 concurrent
cycle; these do.  Each entry runs a real program from /usr/share/java on
inputs generated here, deterministically, and checks the program's OWN
output against figures computed here in Python from the same inputs, so a
tracer that changed what the program does would be caught.

Each program has GC settings for three collectors, chosen (and measured, see
docs/validation.md "The corpus") so that under G1 concurrent cycles run
(Pause Remark, Pause Cleanup) with mixed collections, and under Parallel and
Serial the old generation fills (Pause Full).

    for program, gc in corpus_runs():
        work = ...                                  # an empty directory
        program.prepare(work, java_home)            # inputs, expected figures
        argv = program.command(java_home, [*extra_jvm_flags, *program.gc[gc]])
        subprocess.run(argv, cwd=work, stdout=open(work / "stdout.txt", "w"))
        program.check(work, java_home)              # AssertionError if wrong

The command line uses paths relative to the working directory: the program
runs there (HotSpot's -XX:+PauseAtStartup file lands there too).
"""
import json
import random
import shutil
import subprocess
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Tuple

SHARE_JAVA = Path("/usr/share/java")
JAVA_SOURCES = Path(__file__).resolve().parent / "java/corpus"
COLLECTORS = ("G1", "Parallel", "Serial")
STDOUT = "stdout.txt"     # where the runner puts the program's standard output
EXPECTED = "expected.json"


# Where jar() takes jars from: the host's /usr/share/java, or (jars_in) a
# copy a JVM in the Debian 13 root can see.
_jar_dir = None


def jar(pattern):
    """The one jar of /usr/share/java matching pattern (Debian ships some,
    like Lucene's, only under versioned names); under jars_in, its copy."""
    found = sorted(SHARE_JAVA.glob(pattern))
    if len(found) != 1:
        raise AssertionError(f"expected one jar {SHARE_JAVA}/{pattern}, found {[str(f) for f in found]}: "
                             "is the program's Debian package installed (scripts/install-deps.sh)?")
    if _jar_dir is None:
        return str(found[0])
    copy = Path(_jar_dir) / found[0].name
    if not copy.exists():
        shutil.copyfile(found[0].resolve(), copy)  # (Debian's jars are often links to versioned files)
    return str(copy)


@contextmanager
def jars_in(directory):
    """While in it, jar() gives copies in directory: JDK 21 and 25 run in
    the Debian 13 root (build-patched-jdk.sh), which sees the host's /tmp
    but not its /usr/share/java."""
    global _jar_dir
    Path(directory).mkdir(parents=True, exist_ok=True)
    before, _jar_dir = _jar_dir, directory
    try:
        yield
    finally:
        _jar_dir = before


def command(program, home, flags, line, work):
    """program's command line for the JDK of release line at home, run in
    work (a directory under /tmp)."""
    if line == "17":
        return program.command(home, flags)
    with jars_in(Path(work) / "jars"):
        return program.command(home, flags)


def record_held(program, home, line, flags, work, jvmtrace, *record_args):
    """Runs program held at start-up (flags are its JVM flags besides
    -XX:+PauseAtStartup) in work, `jvmtrace record RECORD_ARGS -o
    work/trace.jvmtrace` attached before it is released, waits for both to
    end; returns the recorder's stderr."""
    from helpers import LineReader, wait_until
    flags = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", *flags]
    with open(Path(work) / STDOUT, "w") as out, open(Path(work) / "stderr.txt", "w") as err:
        jvm = subprocess.Popen(command(program, home, flags, line, work), cwd=work, stdout=out, stderr=err,
                               stdin=subprocess.DEVNULL)
    rec = None
    try:
        held = Path(work) / f"vm.paused.{jvm.pid}"
        wait_until(lambda: held.exists() or jvm.poll() is not None, 120, "HotSpot to hold at start-up")
        assert jvm.poll() is None, (Path(work) / "stderr.txt").read_text()[-2000:]
        rec = subprocess.Popen([str(jvmtrace), "record", *record_args, "-p", str(jvm.pid), "-o",
                                str(Path(work) / "trace.jvmtrace")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "jvmtrace record to attach")
        held.unlink()
        assert jvm.wait(600) == 0, (Path(work) / "stderr.txt").read_text()[-2000:]
        rc = rec.wait(120)
        rec_err = "\n".join(err.drain())
        assert rc == 0, f"jvmtrace record exited {rc}: {rec_err[-2000:]}"
        return rec_err
    finally:
        for p in (jvm, rec):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(60)


def java(java_home):
    return str(Path(java_home) / "bin/java")


def write_expected(work, value):
    (Path(work) / EXPECTED).write_text(json.dumps(value, indent=1, sort_keys=True))


def read_expected(work):
    return json.loads((Path(work) / EXPECTED).read_text())


def stdout_lines(work):
    return (Path(work) / STDOUT).read_text().splitlines()


def g1(heap_mb, ihop=35):
    """G1 with a fixed heap and a fixed, low initiating occupancy, so a
    concurrent cycle starts as soon as the live set passes it."""
    return ["-XX:+UseG1GC", f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m",
            f"-XX:InitiatingHeapOccupancyPercent={ihop}", "-XX:-G1UseAdaptiveIHOP"]


def parallel(heap_mb):
    return ["-XX:+UseParallelGC", f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m"]


def serial(heap_mb):
    return ["-XX:+UseSerialGC", f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m"]


@dataclass(frozen=True)
class Program:
    name: str
    packages: Tuple[str, ...]          # Debian packages it needs
    what: str                          # one line: what it does in the test
    prepare: Callable[[Path, str], None]            # (work dir, JAVA_HOME): inputs + expected.json
    command: Callable[[str, List[str]], List[str]]  # (JAVA_HOME, JVM flags) -> argv, cwd = work dir
    check: Callable[[Path, str], None]              # (work dir, JAVA_HOME): raises AssertionError
    gc: Dict[str, List[str]]           # collector -> its JVM flags (heap size included)
    humongous: bool = False            # allocates G1 humongous objects (half a region or more) under G1
    threads: Tuple[str, ...] = ()      # names of the program's own threads that allocate besides main

    def __str__(self):
        return self.name


# --- Saxon-HE: XSLT 2.0 grouping over a big generated document -----------------

REGIONS = ["north", "south", "east", "west", "centre", "coast", "hills"]
NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
SAXON_ORDERS = 150_000

SAXON_XSL = """<xsl:stylesheet version="2.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema" exclude-result-prefixes="xs">
<xsl:output indent="yes"/>
<xsl:template match="/orders">
  <summary>
    <xsl:for-each-group select="order" group-by="@region">
      <xsl:sort select="current-grouping-key()"/>
      <region name="{current-grouping-key()}" orders="{count(current-group())}"
              qty="{sum(current-group()/xs:integer(qty))}"
              value="{sum(for $o in current-group() return xs:integer($o/qty) * xs:integer($o/price))}">
        <xsl:for-each-group select="current-group()" group-by="substring-before(customer, '-')">
          <xsl:sort select="current-grouping-key()"/>
          <customer name="{current-grouping-key()}" orders="{count(current-group())}"
                    words="{sum(current-group()/count(tokenize(note, ' ')))}"/>
        </xsl:for-each-group>
      </region>
    </xsl:for-each-group>
  </summary>
</xsl:template>
</xsl:stylesheet>
"""


def saxon_prepare(work, java_home):
    r = random.Random(1)
    regions = {}
    with open(Path(work) / "in.xml", "w") as f:
        f.write("<orders>\n")
        for i in range(SAXON_ORDERS):
            region = REGIONS[i % len(REGIONS)]
            cust = f"{r.choice(NAMES)}-{r.randrange(1000)}"
            qty, price = r.randrange(1, 50), r.randrange(100, 10000)
            nwords = r.randrange(4, 12)
            note = " ".join(r.choice(NAMES) for _ in range(nwords))
            f.write(f'<order id="{i}" region="{region}"><customer>{cust}</customer><qty>{qty}</qty>'
                    f"<price>{price}</price><note>{note}</note></order>\n")
            g = regions.setdefault(region, {"orders": 0, "qty": 0, "value": 0, "customers": {}})
            g["orders"] += 1
            g["qty"] += qty
            g["value"] += qty * price
            c = g["customers"].setdefault(cust.split("-")[0], [0, 0])
            c[0] += 1
            c[1] += nwords
        f.write("</orders>\n")
    (Path(work) / "group.xsl").write_text(SAXON_XSL)
    write_expected(work, regions)


def saxon_check(work, java_home):
    want = read_expected(work)
    root = ET.parse(Path(work) / "out.xml").getroot()
    got = {}
    for reg in root.findall("region"):
        got[reg.get("name")] = {
            "orders": int(reg.get("orders")), "qty": int(reg.get("qty")), "value": int(reg.get("value")),
            "customers": {c.get("name"): [int(c.get("orders")), int(c.get("words"))] for c in reg.findall("customer")}}
    assert got == want, "Saxon's summary differs from the figures computed from in.xml"
    assert [r.get("name") for r in root.findall("region")] == sorted(want), "regions not in xsl:sort order"


SAXON = Program(
    name="saxon-xslt", packages=("libsaxonhe-java",),
    what=f"Saxon-HE (net.sf.saxon.Transform) groups {SAXON_ORDERS:,} orders of a 24 MB generated XML document "
         "with XSLT 2.0 for-each-group, sorts and sums them; its TinyTree holds the document in a few large arrays",
    prepare=saxon_prepare,
    command=lambda home, flags: [java(home), *flags, "-cp", jar("Saxon-HE.jar"), "net.sf.saxon.Transform",
                                 "-s:in.xml", "-xsl:group.xsl", "-o:out.xml"],
    check=saxon_check,
    gc={"G1": g1(128), "Parallel": parallel(128), "Serial": serial(128)},
    humongous=True,
)


# --- Lucene 8: two threads index one in-heap index, then queries ----------------

LUCENE_DOCS = 25_000
LUCENE_THREADS = 2


def lucene_prepare(work, java_home):
    work = Path(work)
    r = random.Random(7)
    syl = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pe", "da", "fu", "go"]
    vocab = sorted({r.choice(syl) + r.choice(syl) + r.choice(syl) for _ in range(3000)})
    docs = []
    for _ in range(LUCENE_DOCS):
        n = 20 + r.randrange(60)
        # Half the words from a skewed head (common terms, long postings), half uniform.
        docs.append([vocab[min(int(r.paretovariate(1.1)) - 1, len(vocab) - 1)] if r.random() < 0.5
                     else r.choice(vocab) for _ in range(n)])
    (work / "docs.txt").write_text("".join(" ".join(d) + "\n" for d in docs))
    queries = [vocab[0], vocab[1], vocab[5], vocab[100], vocab[-1], f"{vocab[0]} {vocab[3]}",
               f"{vocab[2]} {vocab[7]}", f'"{vocab[0]} {vocab[1]}"', f'"{vocab[4]} {vocab[0]}"']
    (work / "queries.txt").write_text("".join(q + "\n" for q in queries))
    sets = [set(d) for d in docs]
    hits = {}
    for q in queries:
        if q.startswith('"'):
            a, b = q[1:-1].split()
            hits[q] = sum(any(d[k] == a and d[k + 1] == b for k in range(len(d) - 1)) for d in docs)
        else:
            ws = q.split()
            hits[q] = sum(all(w in s for w in ws) for s in sets)
    write_expected(work, {"docs": len(docs), "hits": hits})
    # The driver: Lucene's own IndexWriter (shared by the threads), analyzer,
    # merges and searcher do the work; it only wires them to the files.
    subprocess.run([str(Path(java_home) / "bin/javac"), "-cp", jar("lucene-core-*.jar"), "-d", str(work / "classes"),
                    str(JAVA_SOURCES / "LuceneIndexSearch.java")], check=True, capture_output=True, text=True)


def lucene_check(work, java_home):
    want = read_expected(work)
    lines = stdout_lines(work)
    assert f"docs {want['docs']}" in lines, f"Lucene did not index {want['docs']} documents: {lines[:3]}"
    got = {}
    for l in lines:
        if l.startswith("hits "):
            q, n = l[len("hits "):].rsplit(" ", 1)
            got[q] = int(n)
    assert got == want["hits"], f"Lucene's hit counts differ from the counts computed from docs.txt"


LUCENE = Program(
    name="lucene-index-search", packages=("liblucene8-java",),
    what=f"Lucene 8 (lucene-core): {LUCENE_THREADS} threads add {LUCENE_DOCS:,} generated documents to one "
         "IndexWriter over an in-heap ByteBuffersDirectory (merges on Lucene's merge threads), forceMerge(1), "
         "then term, boolean and phrase queries (driver: tests/java/corpus/LuceneIndexSearch.java)",
    prepare=lucene_prepare,
    command=lambda home, flags: [java(home), *flags, "-cp", f"{jar('lucene-core-*.jar')}:classes",
                                 "LuceneIndexSearch", "docs.txt", str(LUCENE_THREADS), "queries.txt"],
    check=lucene_check,
    gc={"G1": g1(64), "Parallel": parallel(64), "Serial": serial(64)},
    threads=tuple(f"indexer-{t}" for t in range(LUCENE_THREADS)),
)


# --- H2: an in-memory database driven by a SQL script -----------------------------

H2_ROWS = 80_000


def h2_rows():
    return [(x, x % 97, f"item-{x}-" + "x" * (x % 23), x * 7919 % 100003) for x in range(1, H2_ROWS + 1)]


H2_SQL = f"""CREATE TABLE item(id INT PRIMARY KEY, grp INT, name VARCHAR(64), val BIGINT);
INSERT INTO item SELECT X, MOD(X, 97), CONCAT('item-', X, '-', REPEAT('x', MOD(X, 23))), MOD(X * 7919, 100003)
  FROM SYSTEM_RANGE(1, {H2_ROWS});
CREATE TABLE grp(id INT PRIMARY KEY, label VARCHAR(32));
INSERT INTO grp SELECT X, CONCAT('g', X) FROM SYSTEM_RANGE(0, 96);
CREATE INDEX item_val ON item(val);
SELECT COUNT(*), SUM(val), SUM(LENGTH(name)) FROM item;
SELECT g.label, COUNT(*), SUM(i.val) FROM item i JOIN grp g ON i.grp = g.id GROUP BY g.label
  ORDER BY SUM(i.val) DESC, g.label LIMIT 3;
SELECT COUNT(*) FROM item WHERE val BETWEEN 1000 AND 2000;
UPDATE item SET val = val + 1 WHERE MOD(id, 3) = 0;
SELECT SUM(val) FROM item;
DELETE FROM item WHERE MOD(id, 5) = 0;
SELECT COUNT(*), SUM(val) FROM item;
"""


def h2_prepare(work, java_home):
    (Path(work) / "script.sql").write_text(H2_SQL)
    rows = h2_rows()
    out = [f"{len(rows)} {sum(r[3] for r in rows)} {sum(len(r[2]) for r in rows)}"]
    groups = {}
    for _, g, _, v in rows:
        c = groups.setdefault(f"g{g}", [0, 0])
        c[0] += 1
        c[1] += v
    top = sorted(groups.items(), key=lambda kv: (-kv[1][1], kv[0]))[:3]
    out += [f"{label} {n} {s}" for label, (n, s) in top]
    out.append(str(sum(1 for r in rows if 1000 <= r[3] <= 2000)))
    rows = [(x, g, n, v + 1 if x % 3 == 0 else v) for x, g, n, v in rows]
    out.append(str(sum(r[3] for r in rows)))
    rows = [r for r in rows if r[0] % 5 != 0]
    out.append(f"{len(rows)} {sum(r[3] for r in rows)}")
    write_expected(work, out)


def h2_check(work, java_home):
    got = [l[len("--> "):] for l in stdout_lines(work) if l.startswith("--> ")]
    assert got == read_expected(work), "H2's query results differ from the values computed in Python"


H2 = Program(
    name="h2-sql", packages=("libh2-java",),
    what=f"H2 2.1 (org.h2.tools.RunScript) runs a SQL script on an in-memory database: {H2_ROWS:,} rows "
         "inserted in one statement, an index, a join with GROUP BY, an UPDATE and a DELETE of a third and a fifth",
    prepare=h2_prepare,
    command=lambda home, flags: [java(home), *flags, "-cp", jar("h2.jar"), "org.h2.tools.RunScript",
                                 "-url", "jdbc:h2:mem:corpus", "-user", "sa", "-script", "script.sql",
                                 "-showResults"],
    check=h2_check,
    gc={"G1": g1(96), "Parallel": parallel(96), "Serial": serial(96)},
)


# --- ecj: the Eclipse compiler compiles generated Java 17 sources ----------------

ECJ_CLASSES = 150
ECJ_METHODS = 30
ECJ_XS = [i * 7 for i in range(50)]


def ecj_method_value(i, m):
    """What gen.C<i>.m<m>(ECJ_XS) returns (Java long arithmetic; no value here
    comes near 2^63, and every operand is non-negative)."""
    acc = i * 31 + m
    for x in ECJ_XS:
        r = x % 4
        if r == 0:
            acc += x * (m + 1)
        elif r == 1:
            acc ^= x
        elif r == 2:
            acc -= x // (m + 1)
        else:
            acc = acc * 3 + x
    assert 0 <= acc < 1 << 62
    return acc % 1000003 + len(str(acc))


def ecj_prepare(work, java_home):
    src = Path(work) / "src/gen"
    src.mkdir(parents=True)
    total = 0
    for i in range(ECJ_CLASSES):
        methods = "".join(f"""
    static long m{m}(java.util.List<Integer> xs) {{
        long acc = {i * 31 + m};
        for (int x : xs) {{
            switch (x % 4) {{
                case 0 -> acc += x * {m + 1}L;
                case 1 -> acc ^= x;
                case 2 -> acc -= x / {m + 1};
                default -> acc = acc * 3 + x;
            }}
        }}
        java.util.function.LongUnaryOperator f = v -> Math.floorMod(v, 1000003L);
        return f.applyAsLong(acc) + String.valueOf(acc).length();
    }}""" for m in range(ECJ_METHODS))
        calls = " + ".join(f"m{m}(xs)" for m in range(ECJ_METHODS))
        (src / f"C{i}.java").write_text(f"""package gen;
public final class C{i} {{
    public static long value(java.util.List<Integer> xs) {{ return ({calls}) % 1000003L; }}
{methods}
    record Pair{i}(int a, String b) {{ }}
    sealed interface Shape permits Square, Circle {{ }}
    static final class Square implements Shape {{ }}
    static final class Circle implements Shape {{ }}
}}
""")
        total += sum(ecj_method_value(i, m) for m in range(ECJ_METHODS)) % 1000003
    (src / "Main.java").write_text(f"""package gen;
public final class Main {{
    public static void main(String[] args) throws Exception {{
        java.util.List<Integer> xs = new java.util.ArrayList<>();
        for (int i = 0; i < {len(ECJ_XS)}; i++) xs.add(i * 7);
        long sum = 0;
        for (int i = 0; i < {ECJ_CLASSES}; i++)
            sum += (Long) Class.forName("gen.C" + i).getMethod("value", java.util.List.class).invoke(null, xs);
        System.out.println("sum " + sum);
    }}
}}
""")
    # Every top-level class, its record, sealed interface and two finals, and Main.
    classes = sorted([f"gen/C{i}{n}.class" for i in range(ECJ_CLASSES)
                      for n in ("", f"$Pair{i}", "$Shape", "$Square", "$Circle")] + ["gen/Main.class"])
    write_expected(work, {"sum": total, "classes": classes})


def ecj_check(work, java_home):
    want = read_expected(work)
    out = Path(work) / "classes"
    got = sorted(str(p.relative_to(out)) for p in out.rglob("*.class"))
    assert got == want["classes"], f"ecj wrote {len(got)} class files, expected {len(want['classes'])}"
    # The compiled code runs and computes what the sources say.
    r = subprocess.run([java(java_home), "-Xshare:auto", "-cp", str(out), "gen.Main"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["sum", str(want["sum"])], \
        f"the classes ecj compiled print {r.stdout.strip()!r} (exit {r.returncode}), expected sum {want['sum']}"


ECJ = Program(
    name="ecj-compile", packages=("libeclipse-jdt-core-java",),
    what=f"ecj 3.32 (the Eclipse batch compiler) compiles {ECJ_CLASSES} generated Java 17 classes of "
         f"{ECJ_METHODS} methods each (switch expressions, lambdas, records, sealed types)",
    prepare=ecj_prepare,
    command=lambda home, flags: [java(home), *flags, "-cp", jar("eclipse-jdt-core.jar"),
                                 "org.eclipse.jdt.internal.compiler.batch.Main", "-17", "-proc:none", "-nowarn",
                                 "-d", "classes", "src"],
    check=ecj_check,
    gc={"G1": g1(64), "Parallel": parallel(64), "Serial": serial(64)},
)


# --- Rhino: a JavaScript program building, grouping and serialising records --------

RHINO_RECORDS = 150_000
RHINO_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]

RHINO_JS = """// Park-Miller: every product stays below 2^53, so doubles are exact.
var s = 42;
function rnd() { s = (s * 48271) %% 2147483647; return s; }
var words = %(words)s;
var n = %(n)d, total = 0, groups = {};
for (var i = 0; i < n; i++) {
  var rec = { id: i, key: words[rnd() %% 10] + "-" + (rnd() %% 100), val: rnd() %% 1000, tags: [] };
  for (var t = 0; t < 3; t++) rec.tags.push(words[(i + t) %% 10]);
  var g = groups[rec.key];
  if (!g) { g = groups[rec.key] = []; }
  g.push(rec);
  total += rec.val;
}
var keys = Object.keys(groups).sort();
var sums = keys.map(function (k) { return groups[k].reduce(function (a, r) { return a + r.val; }, 0); });
var text = JSON.stringify(groups[keys[0]]);
var back = JSON.parse(text);
print("records " + n + " total " + total + " groups " + keys.length + " first " + keys[0] + " " + sums[0] +
      " max " + Math.max.apply(null, sums) + " json " + text.length + " " + back.length);
"""


def rhino_prepare(work, java_home):
    (Path(work) / "work.js").write_text(RHINO_JS % {"words": json.dumps(RHINO_WORDS), "n": RHINO_RECORDS})
    s, total, groups = 42, 0, {}

    def rnd():
        nonlocal s
        s = s * 48271 % 2147483647
        return s
    for i in range(RHINO_RECORDS):
        key = f"{RHINO_WORDS[rnd() % 10]}-{rnd() % 100}"
        rec = {"id": i, "key": key, "val": rnd() % 1000, "tags": [RHINO_WORDS[(i + t) % 10] for t in range(3)]}
        groups.setdefault(key, []).append(rec)
        total += rec["val"]
    keys = sorted(groups)
    sums = [sum(r["val"] for r in groups[k]) for k in keys]
    text = json.dumps(groups[keys[0]], separators=(",", ":"))
    write_expected(work, f"records {RHINO_RECORDS} total {total} groups {len(keys)} first {keys[0]} {sums[0]} "
                         f"max {max(sums)} json {len(text)} {len(groups[keys[0]])}")


def rhino_check(work, java_home):
    lines = [l for l in stdout_lines(work) if l.startswith("records ")]
    assert lines == [read_expected(work)], "the script's result differs from the one computed in Python"


RHINO = Program(
    name="rhino-js", packages=("librhino-java",),
    what=f"Rhino 1.7.14 (org.mozilla.javascript.tools.shell.Main, compiled mode) runs a script that builds "
         f"{RHINO_RECORDS:,} records, keeps them grouped in objects, reduces, sorts and JSON round-trips a group",
    prepare=rhino_prepare,
    command=lambda home, flags: [java(home), *flags, "-cp", jar("js.jar"), "org.mozilla.javascript.tools.shell.Main",
                                 "-opt", "9", "work.js"],
    check=rhino_check,
    gc={"G1": g1(128), "Parallel": parallel(128), "Serial": serial(112)},
)


PROGRAMS = [SAXON, LUCENE, H2, ECJ, RHINO]


def packages():
    """Every Debian package the corpus needs (scripts/install-deps.sh installs them)."""
    return sorted({p for prog in PROGRAMS for p in prog.packages})


def corpus_runs():
    """(program, collector) for every program and collector: what the tests
    are parametrised over."""
    for prog in PROGRAMS:
        for gc in COLLECTORS:
            yield prog, gc
