/*
 * jvmtrace probe contract: the USDT probes the jvmtrace HotSpot patch
 * declares, provider "jvmtrace".  systemtap-sdt-dev's `dtrace -h` turns this
 * file into the header HotSpot and the test fixture include.
 *
 * The argument types below are the contract: every probe site casts each
 * argument to exactly this type, so the ELF note reads the same width and
 * signedness everywhere (tests/test_probe_contract.py checks the notes of
 * libjvm.so and of the fixture against this file, and docs/probes.md
 * against both).  Units are bytes unless a name says otherwise; "tid" is the
 * kernel thread id (what BPF's bpf_get_current_pid_tgid() >> 0 & 0xffffffff
 * returns), never a JVM-internal thread index.
 *
 * bpftrace before 0.24 (Debian 12 ships 0.17) reads only arg0..arg5 of a
 * USDT probe.  So every argument a bpftrace tool needs is among the first
 * six, and tid, where a probe has one, comes last: it is always the firing
 * thread's own tid, which bpftrace has as its `tid` builtin anyway.
 *
 * Every probe has a semaphore: HotSpot computes the arguments only while a
 * tracer is attached, so a detached probe costs a 5-byte nop and one
 * predictable load.
 */

provider jvmtrace {
	/* Mutator allocation --------------------------------------------- */

	/* A thread retired its TLAB and got a new one; the allocation that
	 * caused it is placed at the start of the new TLAB. */
	probe tlab__refill(uint64_t tlab_start, uint64_t tlab_bytes,
	    uint64_t alloc_bytes, const char *class_name, uint32_t class_name_len,
	    uint64_t retired_waste_bytes, int32_t tid);

	/* An allocation missed the TLAB fast path (bump pointer) and entered
	 * the slow path: TLAB refill, allocation outside any TLAB, or GC. */
	probe alloc__slow__enter(uint64_t alloc_bytes, const char *class_name,
	    uint32_t class_name_len, int32_t tid);

	/* The same slow path returned.  outcome: 0 failed (OutOfMemoryError
	 * follows), 1 new TLAB, 2 outside TLAB, 3 new TLAB after a GC,
	 * 4 outside TLAB after a GC, 5 current TLAB (JVMTI sampler end).
	 * gcs: collections started while this thread was in the slow path. */
	probe alloc__slow__exit(uint64_t address, uint64_t alloc_bytes,
	    uint32_t outcome, uint32_t gcs, int32_t tid);

	/* One allocation slow path, reported once as it returns: what
	 * alloc__slow__enter, tlab__refill and alloc__slow__exit report
	 * together, and its duration measured inside the VM.  Fires where
	 * alloc__slow__exit fires, on the allocating thread.  stat and record
	 * attach this one probe instead of those three (one hit, not three).
	 * outcome, gcs, address: as alloc__slow__exit.
	 * tlab_bytes: the new TLAB's size for outcomes 1 and 3 (the object is
	 *   its first, at address), else 0.
	 * duration_ns: the slow path's time, end - start_ns, both read with
	 *   os::javaTimeNanos() (CLOCK_MONOTONIC: the clock of
	 *   bpf_ktime_get_ns() and bpftrace's nsecs); 0 when start_ns is 0.
	 * retired_waste_bytes: as tlab__refill's, for outcomes 1 and 3, else 0.
	 * start_ns: CLOCK_MONOTONIC at slow-path entry, read only if this
	 *   probe was attached then; 0 if not (attached mid-slow-path). */
	probe alloc__slow(uint64_t alloc_bytes, const char *class_name,
	    uint32_t class_name_len, uint32_t outcome, uint64_t tlab_bytes,
	    uint64_t duration_ns, uint64_t address, uint64_t retired_waste_bytes,
	    uint32_t gcs, uint64_t start_ns, int32_t tid);

	/* Allocation slow paths of one thread, batched in the VM: what
	 * alloc__slow reports, one record per slow path, count records of
	 * record_bytes bytes at address records, valid only while the probe
	 * fires.  stat and record attach this instead of alloc__slow (one hit
	 * per batch, not per slow path).  A record (fields are only ever
	 * appended; a reader steps by record_bytes):
	 *     uint64_t start_ns;            CLOCK_MONOTONIC at slow-path entry;
	 *                                   0 if not attached then
	 *     uint64_t end_ns;              CLOCK_MONOTONIC at its end (always)
	 *     uint64_t address;             as alloc__slow
	 *     uint64_t alloc_bytes;
	 *     uint64_t tlab_bytes;          outcomes 1 and 3, else 0
	 *     uint64_t retired_waste_bytes; outcomes 1 and 3, else 0
	 *     uint64_t class_name;          address of the name (not NUL-ended)
	 *     uint32_t gcs;
	 *     int32_t  tid;                 the allocating thread
	 *     uint32_t class_name_len;
	 *     uint8_t  outcome;             as alloc__slow__exit
	 *     uint8_t  pad[3];              72 bytes in all
	 * Records are kept only while this probe is attached.  A thread's
	 * records are flushed by the thread itself when it holds 128, after a
	 * failed allocation (outcome 0), when its oldest is 100 ms old at its
	 * next slow path, and as it exits (safepoint_id 0, last 0).  At every
	 * safepoint the VM thread takes every thread's buffer (a swap: nothing
	 * per thread while the world is stopped) and, once the safepoint has
	 * ended, fires what they held, several threads' records in one batch,
	 * in end_ns order: safepoint_id is that safepoint's, and its last batch
	 * (possibly empty, fired after every safepoint while this probe is
	 * attached) has last 1.  So a tracer that holds what follows a
	 * safepoint__begin until that safepoint's last batch can put every
	 * record before the gc__start and gc__pause__start of any collection
	 * after it.  Only a safepoint that ends the VM fires its records while
	 * the world is stopped.  tid is the flushing thread. */
	probe alloc__batch(uint64_t records, uint32_t count,
	    uint32_t record_bytes, int32_t tid, uint64_t safepoint_id,
	    uint32_t last);

	/* Every alloc__batch record made before flushed_ns has been reported.
	 * Fires on the VM thread after each safepoint's last alloc__batch while
	 * it is attached.  Attaching it also asks the VM for a safepoint: a
	 * periodic task notices it within 200 ms and the ServiceThread runs a
	 * "ForceSafepoint" (on every line, whatever ServiceThreadCleanupInterval
	 * and GuaranteedSafepointInterval are): a tracer attaches it just before
	 * it detaches, waits for one hit after its own end, and so has every
	 * record up to its end. */
	probe alloc__drain(uint64_t flushed_ns);

	/* Collections ----------------------------------------------------- */

	/* kind: 0 young pause, 1 full pause, 2 concurrent cycle.
	 * name: HotSpot's collector name (G1New, G1Full, ParallelScavenge, ...).
	 * heap_used / heap_committed: the whole heap, at this instant. */
	probe gc__start(uint32_t gc_id, const char *name, const char *cause,
	    uint32_t kind, uint64_t heap_used, uint64_t heap_committed);
	probe gc__end(uint32_t gc_id, const char *name, const char *cause,
	    uint32_t kind, uint64_t heap_used, uint64_t heap_committed);

	/* Promotion (copying) during a collection ------------------------- */

	/* A GC worker got a new PLAB.  dest: 0 young/survivor, 1 old. */
	probe plab__alloc(uint32_t gc_id, uint64_t plab_start, uint64_t plab_bytes,
	    uint32_t dest, int32_t tid);

	/* A GC worker retired a PLAB: used_bytes + wasted_bytes == plab_bytes;
	 * the waste is filled with a dummy object. */
	probe plab__retire(uint32_t gc_id, uint64_t plab_start, uint64_t plab_bytes,
	    uint64_t used_bytes, uint64_t wasted_bytes, uint32_t dest, int32_t tid);

	/* An object was copied outside any PLAB (too large for one, or no new
	 * PLAB could be had). */
	probe promote__direct(uint32_t gc_id, uint64_t address, uint64_t bytes,
	    uint32_t dest, int32_t tid);

	/* PLAB events of one GC thread, batched in the VM: what plab__alloc,
	 * plab__retire and promote__direct report, one record each, count
	 * records of record_bytes bytes at address records, valid only while
	 * the probe fires.  A record (fields are only ever appended; a reader
	 * steps by record_bytes):
	 *     uint64_t ts_ns;        CLOCK_MONOTONIC when the event happened
	 *     uint64_t address;      PLAB start, or the copied object
	 *     uint64_t bytes;        PLAB size, or the object's size
	 *     uint64_t used_bytes;   retire: used (wasted = bytes - used_bytes)
	 *     uint32_t gc_id;
	 *     int32_t  tid;          the thread that handed out/retired/copied
	 *     uint8_t  kind;         0 plab__alloc, 1 plab__retire,
	 *                            2 promote__direct, 3 undo (a direct
	 *                            copy that lost the race to forward its
	 *                            object, filled; address and bytes as
	 *                            its promote__direct's)
	 *     uint8_t  dest;         0 young/survivor, 1 old
	 *     uint8_t  pad[6];       48 bytes in all
	 * Nothing is fired while the world is stopped (but past 256 extra
	 * batches in one safepoint, and at the safepoint that ends the VM): a
	 * thread whose batch holds 256 records starts another, and once the
	 * safepoint has ended
	 * the VM thread fires every batch with records (before that
	 * safepoint's alloc__batch records), safepoint_id being that
	 * safepoint's.  So a collection's records arrive after its gc__end and
	 * gc__pause__end; their ts_ns say where they belong, and a tracer that
	 * holds what follows a safepoint__begin until that safepoint's last
	 * alloc__batch (or, without alloc__batch, until that safepoint's last
	 * plab__batch) puts them in place.  The last plab__batch of each
	 * safepoint (possibly empty, fired after every safepoint while this
	 * probe is attached) has last 1.
	 * Where no batch can be had (malloc failed) a record is fired alone at
	 * once, in the pause, with safepoint_id 0, as is a full batch past the
	 * 256 extra ones (64k records) a safepoint may start.  Records are kept only while
	 * this probe is attached; tid is the firing thread. */
	probe plab__batch(uint64_t records, uint32_t count,
	    uint32_t record_bytes, int32_t tid, uint64_t safepoint_id,
	    uint32_t last);

	/* Stop-the-world pauses ------------------------------------------- */

	/* A stop-the-world pause as -Xlog:gc* reports it: one start/end pair
	 * per "GC(n) ... Pause ..." line, for every pause of every collector,
	 * whether logging is on or not: G1 (Young, Remark, Cleanup, Full),
	 * Parallel (Young, Full), Serial (Young, Full), ZGC ("Pause Mark
	 * Start", "Pause Mark End", "Pause Relocate Start"; generational ZGC's
	 * young and old ones, which the log tags "y:", "Y:" and "O:"), and
	 * Shenandoah ("Pause Init Mark", "Pause Final Mark", "Pause Init/Final
	 * Update Refs", "Pause Final Roots", "Pause Degenerated GC (...)",
	 * "Pause Full").  Fired on the VM thread, at the safepoint, within that
	 * safepoint's safepoint__begin/end.
	 * gc_id: the log line's GC(n); for G1 Remark and Cleanup the concurrent
	 *   cycle's id (that of gc__start/gc__end kind 2).  Several pauses may
	 *   share one safepoint, each with its own id (a young pause that gives
	 *   up, then a full one).  Generational ZGC's minor collections run
	 *   during a major one's old phase: consecutive pauses' ids interleave.
	 * name: HotSpot's title, verbatim: "Pause Young", "Pause Young
	 *   (Concurrent Start)", "Pause Remark", "Pause Full", "Pause Mark
	 *   Start (Major)", "Pause Init Mark (unload classes)", ... (without
	 *   ZGC's "y:"/"Y:"/"O:" tag, which is the log's GC-id prefix).  Valid
	 *   only while the probe fires: copy it.
	 * cause: "Allocation Failure", "G1 Evacuation Pause", "System.gc()", ...;
	 *   "" for G1 Remark and Cleanup (join on gc_id with gc__start kind 2);
	 *   ZGC's and Shenandoah's pauses carry their collection's cause (their
	 *   log lines print none).
	 * kind: 0 young (every G1 young type, Mixed too), 1 full, 2 remark,
	 *   3 cleanup, 4 concurrent (a pause of a concurrent collection: ZGC,
	 *   generational ZGC's young ones, Shenandoah), 5 concurrent old (the
	 *   same of an old generation: generational ZGC's "O:" pauses,
	 *   generational Shenandoah's "Pause Final Mark" of the old
	 *   generation), 6 degenerated (Shenandoah's degenerated collection).
	 * heap_used / heap_committed: the whole heap at this instant; at the
	 *   start the log's "before", at the end its "after(committed)". */
	probe gc__pause__start(uint32_t gc_id, const char *name, const char *cause,
	    uint32_t kind, uint64_t heap_used, uint64_t heap_committed);
	probe gc__pause__end(uint32_t gc_id, const char *name, const char *cause,
	    uint32_t kind, uint64_t heap_used, uint64_t heap_committed);

	/* Safepoints ------------------------------------------------------ */

	/* Every safepoint, whatever stops the world (a collection, a
	 * deoptimisation, a thread dump, the attach mechanism, a cleanup), on
	 * every collector: one begin/end pair per "Safepoint ..." line of
	 * -Xlog:safepoint, whether logging is on or not, the end carrying that
	 * line's figures exactly.  Fired on the VM thread.  A safepoint that
	 * ends the VM ("Halt" at the end of main, "Exit" from System.exit)
	 * has a begin and no end, as it has no log line.
	 * operation: the VM operation's type name as the log prints it
	 *   ("G1CollectForAllocation", "ZMarkStartYoung", "ShenandoahInitMark",
	 *   "Cleanup", "ForceSafepoint", ...); static text, valid for the
	 *   JVM's life.
	 * safepoint_id: HotSpot's safepoint id (JFR's safepointId).
	 * begin_ns: the log's begin stamp (CLOCK_MONOTONIC).
	 * since_last_ns: the log's "Time since last".
	 * reaching_ns: "Reaching safepoint" (from the begin until every Java
	 *   thread stopped); cleanup_ns: "Cleanup" (0 on 25, which has none);
	 *   at_safepoint_ns: "At safepoint" (17: from the end of the cleanup
	 *   to the end, leaving included; 21: to leaving; 25: from reaching
	 *   to leaving); total_ns: "Total"; leaving is total_ns - reaching_ns
	 *   - cleanup_ns - at_safepoint_ns (0 on 17).
	 * threads: the Java threads to stop; running: of those, still running
	 *   when the safepoint was armed (25 prints both).
	 * A collection's gc__pause__start/end lie within its safepoint's pair;
	 * they are never fired at a safepoint nested in another. */
	probe safepoint__begin(const char *operation, uint64_t safepoint_id,
	    uint64_t begin_ns, uint64_t since_last_ns);
	probe safepoint__end(const char *operation, uint64_t reaching_ns,
	    uint64_t at_safepoint_ns, uint64_t total_ns, uint32_t threads,
	    uint32_t running, uint64_t cleanup_ns, uint64_t safepoint_id);

	/* Allocation sites ------------------------------------------------ */

	/* An allocation slow path of this thread, sampled by bytes: the Java
	 * stack the VM itself walked (vframes: interpreted, C1, C2 and inlined
	 * frames with their bytecode index), for a tracer that wants allocation
	 * sites.  Fires on the allocating thread at the end of its slow path,
	 * before that slow path's alloc__slow/alloc__batch record is reported.
	 * Each thread counts down a random interval (exponential, of a mean the
	 * VM sets) in the bytes its slow paths hand out (a new TLAB's size, an
	 * object's outside TLABs), counted only while this probe is attached;
	 * the slow path where it runs out is a candidate.  The VM aims at
	 * JvmtraceSampleRate samples a second (a manageable flag, default 250;
	 * 0: every slow path, each of weight its bytes): it sets the mean from
	 * the byte rate it estimates over windows of 100 ms, and a token bucket
	 * (1.8 x the rate a second, 0.2 x the rate deep) keeps any second near
	 * twice the rate at most: a candidate that finds the bucket empty is
	 * kept with probability 2^-k (k: candidates in a row that found it
	 * empty, at most 16), weighs 2^k times as much and takes the bucket into
	 * debt, so no slow path is left out for certain and the weights stay
	 * unbiased.
	 * method: the leaf-most Java frame, "package.Class.method",
	 *   NUL-terminated; valid only while the probe fires.
	 * weight_bytes: the bytes this sample stands for, B / (1 - e^(-B/mean))
	 *   / q (B for a slow path far over the mean, about the mean for a small
	 *   one; q the bucket's coin): summed by method, an unbiased estimate of
	 *   each method's bytes.
	 * class_name, class_name_len, alloc_bytes, outcome: as alloc__slow.
	 * frames, depth, frame_bytes: depth frames of frame_bytes bytes at
	 *   frames, leaf first, valid only while the probe fires; a frame
	 *   (fields are only ever appended; a reader steps by frame_bytes):
	 *     uint64_t method;  the Method* (name it through gHotSpotVMStructs)
	 *     int32_t  bci;     0 for a native method; may be -1 (method entry)
	 *     uint16_t line;    always 0: a tracer maps bci to a line through the
	 *                       method's line table, as it reads its name
	 *     uint8_t  kind;    0 interpreted, 1 C1, 2 C2/JIT, 3 inlined into
	 *                       the frame after it, 4 native method
	 *     uint8_t  flags;   0x01 a hidden class's, 0x02 a hidden method,
	 *                       0x04 inlined into C1 code, 0x80 (the last
	 *                       frame) the stack went on below it
	 *   16 bytes in all; at most 128 frames, the leaf-most.
	 * end_ns: the slow path's end_ns (CLOCK_MONOTONIC), as its record's.
	 * epoch_addr: the address of a uint64_t the VM increments before it
	 *   frees any class metadata (class unloading, the methods a class
	 *   redefinition made obsolete): a Method* named while it still holds
	 *   the value it had when the probe fired names that method.
	 * sample_id: not 0 when the VM tracks this sample's object for
	 *   sample__fates (only while that probe is attached): unique for the
	 *   JVM's life; the allocating thread is the firing thread (tid). */
	probe alloc__sample(const char *method, uint64_t weight_bytes,
	    const char *class_name, uint32_t class_name_len, uint64_t alloc_bytes,
	    uint32_t outcome, uint64_t frames, uint32_t depth, uint32_t frame_bytes,
	    uint64_t end_ns, uint64_t epoch_addr, uint64_t sample_id);

	/* What became of tracked samples' objects since the last batch.  While
	 * this probe is attached the VM keeps the object of each alloc__sample it
	 * admits (sample_id not 0) by a weak handle in its own weak OopStorage,
	 * "jvmtrace Samples Weak", which every collector's weak processing
	 * clears when the object dies; nothing keeps it alive.  Fired by the
	 * ServiceThread, never inside a pause: after the weak processing of a
	 * collection that cleared handles, after the table was thinned, and
	 * when tracking could not be set up.  The table holds at most
	 * JvmtraceLiveSamples entries (a manageable flag, default 65,536); as it
	 * fills, it is thinned: each entry is kept with probability 1/2 and the
	 * level rises by one, and new samples are admitted with probability
	 * 2^-level; so every tracked sample still alive stands for its
	 * weight_bytes x 2^level.
	 * records, count, record_bytes: count records of record_bytes bytes
	 *   (fields are only ever appended; a reader steps by record_bytes),
	 *   valid only while the probe fires; at most 256:
	 *     uint64_t sample_id;
	 *     uint32_t gc_id;   DIED, PROMOTED: the collection that saw it
	 *     uint8_t  kind;    0 died, 1 thinned, 2 untracked, 3 promoted (to
	 *                       the old generation: Serial, Parallel, G1),
	 *                       4 lost (sample_id: how many records of ids
	 *                       now unknown the VM could not queue)
	 *     uint8_t  flags;   0x01 ambiguous: several collections reported
	 *                       deaths since the last batch, this one the last
	 *     uint8_t  pad[2];  16 bytes in all
	 * gc_id: the collection whose weak processing last reported deaths.
	 * level: the table's thinning level after this batch.
	 * tracked: entries in the table after this batch. */
	probe sample__fates(uint64_t records, uint32_t count, uint32_t record_bytes,
	    uint32_t gc_id, uint32_t level, uint32_t tracked);
};
