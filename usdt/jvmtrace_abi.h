/* The values and record layouts of the jvmtrace probe contract
 * (usdt/jvmtrace.d): the one declaration, compiled into all three sides.
 *   - the patched HotSpot: scripts/build-patched-jdk.sh installs this file
 *     as src/hotspot/share/utilities/jvmtraceAbi.h, and jvmtraceProbes.hpp
 *     includes it (part of the image's cache key);
 *   - the BPF programs (bpf/jvmtrace_events.h includes it after vmlinux.h);
 *   - user space (through bpf/jvmtrace_events.h).
 * Valid C (BPF, clang -target bpf) and C++ (HotSpot, user space).  Values
 * are only ever appended: a trace file stores them, and an old trace must
 * read the same.  tests/test_probe_contract.py checks this file against the
 * contract's and docs/probes.md's words. */
#ifndef JVMTRACE_ABI_H
#define JVMTRACE_ABI_H

#ifndef __VMLINUX_H__ /* BPF programs have __u64 and friends from vmlinux.h */
#include <linux/types.h>
#endif

/* alloc__slow__exit's, alloc__slow's and an alloc__batch record's outcome. */
enum jvmtrace_slow_outcome {
	JVMTRACE_SLOW_FAILED = 0,                /* OutOfMemoryError follows */
	JVMTRACE_SLOW_NEW_TLAB = 1,              /* object placed in a new TLAB */
	JVMTRACE_SLOW_OUTSIDE_TLAB = 2,          /* object allocated outside TLABs */
	JVMTRACE_SLOW_NEW_TLAB_AFTER_GC = 3,     /* as 1, after this thread waited for a GC */
	JVMTRACE_SLOW_OUTSIDE_TLAB_AFTER_GC = 4, /* as 2, after a GC */
	JVMTRACE_SLOW_CURRENT_TLAB = 5,          /* fitted the current TLAB after all (sampling) */
	JVMTRACE_SLOW_OUTCOME_COUNT
};

/* What an outcome says, for every reader of one. */
static inline int jvmtrace_slow_new_tlab(unsigned long long o)
{
	return o == JVMTRACE_SLOW_NEW_TLAB || o == JVMTRACE_SLOW_NEW_TLAB_AFTER_GC;
}
static inline int jvmtrace_slow_outside_tlab(unsigned long long o)
{
	return o == JVMTRACE_SLOW_OUTSIDE_TLAB || o == JVMTRACE_SLOW_OUTSIDE_TLAB_AFTER_GC;
}
static inline int jvmtrace_slow_after_gc(unsigned long long o)
{
	return o == JVMTRACE_SLOW_NEW_TLAB_AFTER_GC || o == JVMTRACE_SLOW_OUTSIDE_TLAB_AFTER_GC;
}

/* Every probe of the contract (usdt/jvmtrace.d), X(name) each, in the order
 * the .d file declares them: the VM and the USDT fixture define one
 * semaphore per entry from this list, so a probe added to the .d file
 * without it fails their link, and tests/test_probe_contract.py checks the
 * list against the .d file. */
#define JVMTRACE_PROBES(X) \
	X(tlab__refill) X(alloc__slow__enter) X(alloc__slow__exit) X(alloc__slow) \
	X(alloc__batch) X(alloc__drain) X(gc__start) X(gc__end) X(plab__alloc) \
	X(plab__retire) X(promote__direct) X(plab__batch) X(gc__pause__start) \
	X(gc__pause__end) X(safepoint__begin) X(safepoint__end) X(alloc__sample) \
	X(sample__fates)

/* gc__start/gc__end's kind. */
enum jvmtrace_gc_kind {
	JVMTRACE_GC_YOUNG = 0,      /* a young pause */
	JVMTRACE_GC_FULL = 1,       /* a full pause */
	JVMTRACE_GC_CONCURRENT = 2, /* a concurrent cycle (G1's marking) */
	JVMTRACE_GC_KIND_COUNT
};

/* The kind of a collection by its collector, as HotSpot names collectors
 * (enum GCName, whose values GCNameHelper spells the same): X(name) for each
 * young and each full collector; every other one is concurrent.  The VM
 * switches on GCName with these, stock mode compares the names it reads. */
#define JVMTRACE_YOUNG_COLLECTORS(X) X(ParallelScavenge) X(DefNew) X(G1New)
#define JVMTRACE_FULL_COLLECTORS(X) X(ParallelOld) X(SerialOld) X(G1Full)

/* gc__pause__start/gc__pause__end's kind. */
enum jvmtrace_pause_kind {
	JVMTRACE_PAUSE_YOUNG = 0,   /* every young pause (G1: Normal, Concurrent Start, Prepare Mixed, Mixed) */
	JVMTRACE_PAUSE_FULL = 1,
	JVMTRACE_PAUSE_REMARK = 2,  /* G1 */
	JVMTRACE_PAUSE_CLEANUP = 3, /* G1 */
	/* A pause of a concurrent collection: every pause of single-generation
	 * ZGC (17, 21 -XX:-ZGenerational), generational ZGC's young-generation
	 * pauses (the log's "y:" and "Y:"), Shenandoah's Init/Final Mark,
	 * Init/Final Update Refs and (Verify) Final Roots. */
	JVMTRACE_PAUSE_CONCURRENT = 4,
	/* The same for an old generation: generational ZGC's "O:" pauses,
	 * generational Shenandoah's "Pause Final Mark (Old)" (25). */
	JVMTRACE_PAUSE_CONCURRENT_OLD = 5,
	/* Shenandoah's "Pause Degenerated GC (...)": a concurrent cycle
	 * finished stop-the-world (Shenandoah's "Pause Full" is 1). */
	JVMTRACE_PAUSE_DEGENERATED = 6,
	JVMTRACE_PAUSE_KIND_COUNT
};

/* plab__alloc, plab__retire, promote__direct's dest. */
enum jvmtrace_plab_dest {
	JVMTRACE_DEST_YOUNG = 0, /* young or survivor space */
	JVMTRACE_DEST_OLD = 1,
	JVMTRACE_DEST_COUNT
};

/* A plab__batch record's kind: the probe it stands for. */
enum jvmtrace_plab_record_kind {
	JVMTRACE_PLAB_REC_ALLOC = 0,  /* plab__alloc */
	JVMTRACE_PLAB_REC_RETIRE = 1, /* plab__retire */
	JVMTRACE_PLAB_REC_DIRECT = 2, /* promote__direct */
	/* A copy outside any PLAB (a promote__direct's) that lost the race to
	 * forward its object: the VM filled it (address, bytes as the direct
	 * record's), so that record's bytes hold no object. */
	JVMTRACE_PLAB_REC_UNDO = 3,
	JVMTRACE_PLAB_REC_KIND_COUNT
};

/* plab__batch: a GC thread's PLAB events, one record each.  Readers step by
 * the batch's record_bytes argument: fields are only ever appended. */
struct jvmtrace_plab_record {
	__u64 ts_ns;      /* CLOCK_MONOTONIC */
	__u64 address;    /* PLAB start, or the copied object */
	__u64 bytes;      /* PLAB size, or the object's size */
	__u64 used_bytes; /* retire: used (wasted = bytes - used_bytes) */
	__u32 gc_id;
	__s32 tid;
	__u8 kind;        /* enum jvmtrace_plab_record_kind */
	__u8 dest;        /* enum jvmtrace_plab_dest */
	__u8 pad[6];
};
#define JVMTRACE_PLAB_RECORD_BYTES 48

/* alloc__batch: a mutator thread's slow paths, one record each. */
struct jvmtrace_alloc_record {
	__u64 start_ns;            /* CLOCK_MONOTONIC at slow-path entry; 0: not measured */
	__u64 end_ns;              /* CLOCK_MONOTONIC at its end */
	__u64 address;
	__u64 alloc_bytes;
	__u64 tlab_bytes;          /* outcomes 1 and 3 */
	__u64 retired_waste_bytes; /* outcomes 1 and 3 */
	__u64 class_name;          /* the name's address (not NUL-terminated) */
	__u32 gcs;
	__s32 tid;                 /* the allocating thread */
	__u32 class_name_len;
	__u8 outcome;              /* enum jvmtrace_slow_outcome */
	__u8 pad[3];
};
#define JVMTRACE_ALLOC_RECORD_BYTES 72

/* alloc__sample: the sampled thread's Java frames, leaf first, one record
 * each, as the VM itself walks them (inlined frames included). */
enum jvmtrace_frame_kind {
	JVMTRACE_FRAME_INTERPRETED = 0,
	JVMTRACE_FRAME_C1 = 1,      /* the outermost scope of a C1 nmethod */
	JVMTRACE_FRAME_JIT = 2,     /* the outermost scope of a C2 (or JVMCI) nmethod */
	JVMTRACE_FRAME_INLINED = 3, /* inlined into the frame after it */
	JVMTRACE_FRAME_NATIVE = 4,  /* a Java native method */
	JVMTRACE_FRAME_KIND_COUNT
};
/* A frame's flags. */
#define JVMTRACE_FRAME_HIDDEN_CLASS 0x01  /* its class is hidden (a lambda proxy, ...) */
#define JVMTRACE_FRAME_HIDDEN_METHOD 0x02 /* Method::is_hidden() (LambdaForms, @Hidden) */
#define JVMTRACE_FRAME_IN_C1 0x04         /* inlined: into C1 code */
#define JVMTRACE_FRAME_TRUNCATED 0x80     /* the last frame: the stack went on below it */
struct jvmtrace_frame {
	__u64 method; /* the Method* (named by reading the VM's memory) */
	__s32 bci;    /* bytecode index; 0 for a native method, may be -1 (method entry) */
	__u16 line;   /* source line, 0 when unknown */
	__u8 kind;    /* enum jvmtrace_frame_kind */
	__u8 flags;   /* JVMTRACE_FRAME_* */
};
#define JVMTRACE_FRAME_BYTES 16
/* Frames an alloc__sample carries at most (the leaf-most ones). */
#define JVMTRACE_SAMPLE_MAX_FRAMES 128

/* sample__fates: what became of the objects of tracked samples (an
 * alloc__sample whose sample_id is not 0), one record each. */
enum jvmtrace_fate_kind {
	JVMTRACE_FATE_DIED = 0,      /* its weak handle was cleared: dead at collection gc_id */
	JVMTRACE_FATE_THINNED = 1,   /* no longer tracked: dropped by a thinning of the table */
	JVMTRACE_FATE_UNTRACKED = 2, /* never tracked: no handle or no room could be had */
	JVMTRACE_FATE_PROMOTED = 3,  /* first seen in the old generation (Serial, Parallel, G1) */
	/* Not a sample's: sample_id holds how many fate records the VM could
	 * not queue (each a THINNED or UNTRACKED record, of ids now unknown). */
	JVMTRACE_FATE_LOST = 4,
	JVMTRACE_FATE_KIND_COUNT
};
/* A fate record's flags. */
#define JVMTRACE_FATE_AMBIGUOUS 0x01 /* several collections reported deaths since the last scan:
                                        DIED at one of them, after the previous batch's gc_id */
struct jvmtrace_fate_record {
	__u64 sample_id;
	__u32 gc_id;  /* DIED, PROMOTED: the collection whose weak processing saw it */
	__u8 kind;    /* enum jvmtrace_fate_kind */
	__u8 flags;   /* JVMTRACE_FATE_* */
	__u8 pad[2];
};
#define JVMTRACE_FATE_RECORD_BYTES 16
/* Fate records a sample__fates hit carries at most. */
#define JVMTRACE_FATE_BATCH_RECORDS 256

/* The layouts, checked wherever this file is compiled; the structs of
 * bpf/'s headers that cross the kernel/user boundary use the same checks. */
#ifdef __cplusplus
#define JVMTRACE_ABI_ASSERT(c, m) static_assert(c, m)
#else
#define JVMTRACE_ABI_ASSERT(c, m) _Static_assert(c, m)
#endif
#define JVMTRACE_ABI_OFFSET(t, f) __builtin_offsetof(struct t, f)
JVMTRACE_ABI_ASSERT(sizeof(struct jvmtrace_plab_record) == JVMTRACE_PLAB_RECORD_BYTES, "plab__batch record size");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_plab_record, used_bytes) == 24, "plab record: used_bytes");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_plab_record, gc_id) == 32, "plab record: gc_id");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_plab_record, tid) == 36, "plab record: tid");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_plab_record, kind) == 40, "plab record: kind");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_plab_record, dest) == 41, "plab record: dest");
JVMTRACE_ABI_ASSERT(sizeof(struct jvmtrace_alloc_record) == JVMTRACE_ALLOC_RECORD_BYTES, "alloc__batch record size");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_alloc_record, class_name) == 48, "alloc record: class_name");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_alloc_record, gcs) == 56, "alloc record: gcs");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_alloc_record, tid) == 60, "alloc record: tid");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_alloc_record, class_name_len) == 64, "alloc record: class_name_len");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_alloc_record, outcome) == 68, "alloc record: outcome");
JVMTRACE_ABI_ASSERT(sizeof(struct jvmtrace_frame) == JVMTRACE_FRAME_BYTES, "alloc__sample frame size");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_frame, bci) == 8, "frame: bci");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_frame, line) == 12, "frame: line");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_frame, kind) == 14, "frame: kind");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_frame, flags) == 15, "frame: flags");
JVMTRACE_ABI_ASSERT(sizeof(struct jvmtrace_fate_record) == JVMTRACE_FATE_RECORD_BYTES, "sample__fates record size");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_fate_record, gc_id) == 8, "fate record: gc_id");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_fate_record, kind) == 12, "fate record: kind");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jvmtrace_fate_record, flags) == 13, "fate record: flags");

#endif /* JVMTRACE_ABI_H */
