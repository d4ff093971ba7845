/* Kernel/user boundary of `jvmtrace stat`: in-kernel aggregation of the
 * jvmtrace probes.  Shared by bpf/jvmtrace_stat.bpf.c and userspace; map
 * keys and values only, fixed-width types. */
#ifndef JVMTRACE_STAT_H
#define JVMTRACE_STAT_H

#ifndef __VMLINUX_H__ /* user space; BPF programs get these from vmlinux.h */
#include <linux/types.h>
#endif
#include "jvmtrace_abi.h" /* JVMTRACE_ABI_ASSERT */

#define JT_HIST_SLOTS 40 /* log2 slots: slot k counts values in [2^k, 2^(k+1)); 0 counts 0 and 1 */

/* Histograms, index of the `hists` array map. */
enum jt_hist {
	JT_H_TLAB_BYTES = 0,     /* new TLAB sizes */
	JT_H_SLOW_US,            /* allocation slow path, microseconds: alloc__slow's duration
	                          * (the VM's clock), or alloc__slow__enter -> exit per thread */
	JT_H_OUTSIDE_BYTES,      /* objects allocated outside any TLAB */
	JT_H_PAUSE_YOUNG_US,     /* gc__pause__start -> end, kind young, microseconds */
	JT_H_PAUSE_FULL_US,      /* ... kind full */
	JT_H_CONCURRENT_US,      /* gc__start -> gc__end, kind concurrent (a cycle, not a pause) */
	JT_H_PLAB_BYTES,         /* new PLAB sizes */
	JT_H_PAUSE_REMARK_US,    /* gc__pause__start -> end, G1 Remark */
	JT_H_PAUSE_CLEANUP_US,   /* ... G1 Cleanup */
	/* gc__start -> gc__end of young and full collections: the pauses' stand-in
	 * where there are no pause probes (stock mode, a JVM patched before them);
	 * user space shows them as the young and full pauses then. */
	JT_H_GC_YOUNG_US,
	JT_H_GC_FULL_US,
	/* gc__pause__start -> end of ZGC's and Shenandoah's pauses (kinds 4 and
	 * 5: a concurrent collection's, young or old), and Shenandoah's
	 * degenerated ones (kind 6) */
	JT_H_PAUSE_CONCURRENT_US,
	JT_H_PAUSE_DEGENERATED_US,
	/* safepoint__end: the time to reach the safepoint, and the time at it
	 * (the VM's own figures, the same as -Xlog:safepoint's), microseconds */
	JT_H_SAFEPOINT_REACH_US,
	JT_H_SAFEPOINT_AT_US,
	JT_HIST_COUNT,
};

struct jt_hist_val {
	__u64 slots[JT_HIST_SLOTS];
	__u64 sum;               /* of the values counted, for means and Prometheus' _sum */
};

/* Counters, index of the `counters` array map. */
enum jt_counter {
	JT_C_TLAB_REFILLS = 0,
	JT_C_TLAB_BYTES,
	JT_C_TLAB_WASTE_BYTES,
	JT_C_SLOW_PATHS,
	JT_C_SLOW_FAILED,
	JT_C_SLOW_AFTER_GC,
	JT_C_OUTSIDE_ALLOCS,
	JT_C_OUTSIDE_BYTES,
	JT_C_GC_STARTS,
	JT_C_GC_ENDS,
	JT_C_PLABS,
	JT_C_PLAB_BYTES,
	JT_C_PLAB_WASTE_BYTES,
	JT_C_PROMOTED_DIRECT,
	JT_C_PROMOTED_DIRECT_BYTES,
	JT_C_MAP_FULL,           /* per-thread/per-class entries that did not fit: a drop */
	JT_C_NAMES_LOST,         /* new-key notices the ring buffer had no room for */
	JT_C_GC_INFLIGHT_FULL,   /* gc__start not remembered (gc_inflight full): its pause not measured */
	JT_C_GC_END_UNPAIRED,    /* gc__end with no remembered start: its pause not measured */
	JT_C_SLOW_EXIT_UNPAIRED, /* alloc__slow__exit with no remembered enter: its latency not measured */
	JT_C_PAUSES,             /* gc__pause__end: stop-the-world pauses that ended */
	JT_C_PAUSE_END_UNPAIRED, /* gc__pause__end with no remembered start: its length not measured */
	JT_C_PLAB_BATCHES,       /* plab__batch hits: PLAB events reported together */
	JT_C_PLAB_RECORDS_LOST,  /* batch records that could not be read: a drop */
	JT_C_ALLOC_BATCHES,      /* alloc__batch hits: slow paths reported together */
	JT_C_ALLOC_RECORDS_LOST, /* alloc__batch records that could not be read: a drop */
	JT_C_ALLOC_RECORDS_OUTSIDE, /* alloc__batch records of slow paths that ended before the
	                          * attach or after the end: not counted (not a drop) */
	JT_C_SAFEPOINTS,         /* safepoint__end: safepoints that ended */
	JT_C_SAFEPOINT_NS,       /* their total time (begin to end), ns */
	JT_C_SAFEPOINT_OPS_FULL, /* safepoints of an operation not remembered (safepoint_ops full) */
	JT_COUNTER_COUNT,
};

/* Per safepoint operation, keyed by the address of its name (HotSpot's
 * static VM_Operation name table: stable for the JVM's life); each name
 * comes with the notice of its first safepoint (struct jt_new_op). */
struct jt_safepoint_val {
	__u64 count;
	__u64 reach_ns;          /* sums */
	__u64 at_ns;
	__u64 total_ns;
	__u64 reach_max_ns;      /* and maxima */
	__u64 total_max_ns;
};

/* Per allocating thread. */
struct jt_thread_val {
	__u64 tlab_refills;
	__u64 tlab_bytes;
	__u64 outside_allocs;
	__u64 outside_bytes;
};

/* Per class, keyed by the address of the class name's bytes (a HotSpot
 * Symbol body: stable while the class is loaded), so no string is copied per
 * event; userspace reads each name once from the process (length in value). */
struct jt_class_val {
	__u64 tlab_refills;      /* refills this class's allocation caused */
	__u64 tlab_bytes;        /* bytes of those TLABs: a byte-weighted sample */
	__u64 outside_allocs;
	__u64 outside_bytes;     /* exact */
	__u32 name_len;
	__u32 pad;
};

/* A per-thread or per-class entry was just created: sent through the
 * `new_keys` ring buffer so user space names it at once (a thread's name from
 * /proc, a class name from the JVM's memory) while both surely still exist. */
enum jt_key_kind { JT_KEY_THREAD = 0, JT_KEY_CLASS = 1, JT_KEY_SAFEPOINT_OP = 2 };
struct jt_new_key {
	__u64 key;               /* tid, or the class name's address */
	__u32 kind;              /* enum jt_key_kind */
	__u32 name_len;          /* classes: the name's length */
	char comm[16];           /* threads: the name, read by the thread itself
				  * (a thread that has exited by the time user
				  * space reads /proc keeps its name); empty when
				  * a batch names another thread */
};

/* A safepoint operation's first safepoint: its name, copied in the kernel
 * at the probe (a report read as the JVM exits, or after, still names it;
 * user space read it at the report before, and after the JVM's exit every
 * operation was "<unreadable>").  The same first three fields as
 * jt_new_key. */
#define JT_OP_NAME_MAX 64
struct jt_new_op {
	__u64 key;               /* the name's address */
	__u32 kind;              /* JT_KEY_SAFEPOINT_OP */
	__u32 name_len;          /* bytes of name[] before its NUL; 0: not
				  * readable in the kernel (user space reads
				  * it), JT_OP_NAME_MAX - 1: perhaps cut */
	char name[JT_OP_NAME_MAX];
};

/* stat --live (alloc__sample, sample__fates; bpf/jvmtrace_stat.bpf.c): the
 * live-heap estimate.  Counters, index of the per-CPU `live_counters` map
 * (apart from `counters`, so stat without --live prints what it did). */
enum jt_live_counter {
	JT_L_SAMPLES = 0,        /* alloc__sample hits */
	JT_L_KEPT,               /* of them with a sample id, kept in live_samples */
	JT_L_MAP_FULL,           /* with a sample id but not kept (live_samples full): missed, a loss */
	JT_L_FATE_BATCHES,       /* sample__fates hits: each one a snapshot */
	JT_L_DIED,               /* fate records by kind */
	JT_L_THINNED,
	JT_L_UNTRACKED,
	JT_L_PROMOTED,
	JT_L_FATES_UNKNOWN,      /* died/thinned/untracked of an id not kept: born before the attach
	                          * (another tracer's), or missed (JT_L_MAP_FULL) */
	JT_L_VM_LOST,            /* fate records the VM could not queue (kind 4's counts): their ids
	                          * stay counted alive, a loss */
	JT_L_RECORDS_LOST,       /* fate records that could not be read: a loss */
	JT_LIVE_COUNTER_COUNT,
};

/* A kept sample, by its sample_id. */
struct jt_live_sample {
	__u64 weight;            /* alloc__sample's weight_bytes */
	__u64 born_seq;          /* gc__start hits before it (since the attach) */
};

/* The estimate as of the last sample__fates batch, written by that probe
 * (one writer: the VM's ServiceThread) between two increments of seq, so a
 * reader retries while seq is odd or moved. */
struct jt_live_snapshot {
	__u64 seq;
	__u64 estimate_bytes;    /* (alive_bytes - young_bytes) << level */
	__u64 alive_bytes;       /* weights of the kept samples not reported gone */
	__u64 young_bytes;       /* of those, born since the last gc__start: too young, left out */
	__u64 batches;           /* snapshots taken */
	__u64 ts_ns;             /* the batch's CLOCK_MONOTONIC time */
	__u32 level;             /* the VM table's thinning level */
	__u32 tracked;           /* entries in the VM's table */
	__u32 gc_id;             /* the collection that last reported deaths */
	__u32 pad;
};

JVMTRACE_ABI_ASSERT(sizeof(struct jt_hist_val) == 8 * (JT_HIST_SLOTS + 1), "jt_hist_val");
JVMTRACE_ABI_ASSERT(sizeof(struct jt_thread_val) == 32, "jt_thread_val");
JVMTRACE_ABI_ASSERT(sizeof(struct jt_class_val) == 40, "jt_class_val");
JVMTRACE_ABI_ASSERT(sizeof(struct jt_new_key) == 32, "jt_new_key");
JVMTRACE_ABI_ASSERT(sizeof(struct jt_safepoint_val) == 48, "jt_safepoint_val");
JVMTRACE_ABI_ASSERT(sizeof(struct jt_new_op) == 80, "jt_new_op");
JVMTRACE_ABI_ASSERT(sizeof(struct jt_live_sample) == 16, "jt_live_sample");
JVMTRACE_ABI_ASSERT(sizeof(struct jt_live_snapshot) == 64, "jt_live_snapshot");

#endif /* JVMTRACE_STAT_H */
