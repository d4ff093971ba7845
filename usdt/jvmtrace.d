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
	 * next slow path, and as it exits; every
	 * thread's at every safepoint, by the VM thread (several threads'
	 * records in one batch), before the safepoint's operation runs: a
	 * slow path's record arrives before the gc__start and gc__pause__start
	 * of any collection after it.  tid is the flushing thread. */
	probe alloc__batch(uint64_t records, uint32_t count,
	    uint32_t record_bytes, int32_t tid);

	/* Every alloc__batch record made before flushed_ns has been reported.
	 * Fires on the VM thread at each safepoint while it is attached, after
	 * that safepoint's alloc__batch hits.  Attaching it also asks the VM
	 * for a safepoint once an interval has passed without one (17, 21: a
	 * "Cleanup" safepoint after GuaranteedSafepointInterval, 1 s by
	 * default; 25: a "ForceSafepoint" after at most 1 s): a tracer
	 * attaches it just before it detaches, waits for one hit after its own
	 * end, and so has every record up to its end. */
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
	 *                            2 promote__direct
	 *     uint8_t  dest;         0 young/survivor, 1 old
	 *     uint8_t  pad[6];       48 bytes in all
	 * A thread's batch is flushed when it holds 256 records, and every
	 * batch at the end of each collection (on the VM thread, before its
	 * gc__end and its gc__pause__end): a collection's records all arrive
	 * before its end.  Records are kept only while this probe is attached;
	 * tid is the flushing thread. */
	probe plab__batch(uint64_t records, uint32_t count,
	    uint32_t record_bytes, int32_t tid);

	/* Stop-the-world pauses ------------------------------------------- */

	/* A stop-the-world pause as -Xlog:gc reports it: one start/end pair per
	 * "GC(n) Pause ..." line, for every pause of G1 (Young, Remark, Cleanup,
	 * Full), Parallel (Young, Full) and Serial (Young, Full), whether
	 * logging is on or not.  Fired on the VM thread, at the safepoint.
	 * gc_id: the log line's GC(n); for G1 Remark and Cleanup the concurrent
	 *   cycle's id (that of gc__start/gc__end kind 2).  Several pauses may
	 *   share one safepoint, each with its own id (a young pause that gives
	 *   up, then a full one).
	 * name: HotSpot's title, verbatim: "Pause Young", "Pause Young
	 *   (Concurrent Start)", "Pause Remark", "Pause Full", ...  Valid only
	 *   while the probe fires: copy it.
	 * cause: "Allocation Failure", "G1 Evacuation Pause", "System.gc()", ...;
	 *   "" for Remark and Cleanup (join on gc_id with gc__start kind 2).
	 * kind: 0 young (every G1 young type, Mixed too), 1 full, 2 remark,
	 *   3 cleanup.
	 * heap_used / heap_committed: the whole heap at this instant; at the
	 *   start the log's "before", at the end its "after(committed)". */
	probe gc__pause__start(uint32_t gc_id, const char *name, const char *cause,
	    uint32_t kind, uint64_t heap_used, uint64_t heap_committed);
	probe gc__pause__end(uint32_t gc_id, const char *name, const char *cause,
	    uint32_t kind, uint64_t heap_used, uint64_t heap_committed);
};
