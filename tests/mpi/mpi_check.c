/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mpi_check: a point-to-point and datatype test set that checks every byte it moves.  Works with
 * any MPI (built with MPICH's and Open MPI's mpicc by tests/mpi/build.sh) and 2 or more ranks.
 *
 *   mpiexec -n 2 mpi_check [-v] [-only NAME] [-mt]
 *
 * -mt initialises with MPI_THREAD_MULTIPLE and adds a test where 4 threads per rank exchange
 * messages concurrently.
 * Rank 0 prints one line per test, "PASS name" or "FAIL name: detail", and at the end
 * "mpi_check: P passed, F failed"; the exit status is 1 when anything failed.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, verbose;
static const char *only;
static int npass, nfail;
static char detail[256];

static void fail(const char *fmt, ...)
{
	if (detail[0])
		return; /* keep the first */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
}

/* Runs one test on every rank and combines the outcome. */
static void run(const char *name, void (*fn)(void))
{
	if (only && strcmp(only, name))
		return;
	detail[0] = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	fn();
	int bad = detail[0] != 0, anybad = 0;
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	/* bring the first failing rank's detail to rank 0 */
	int who = bad ? rank : size, first = size;
	MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (anybad && first != 0) {
		if (rank == first)
			MPI_Send(detail, sizeof(detail), MPI_CHAR, 0, 999, MPI_COMM_WORLD);
		if (rank == 0)
			MPI_Recv(detail, sizeof(detail), MPI_CHAR, first, 999, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
	}
	if (rank == 0) {
		if (anybad)
			printf("FAIL %s: rank %d: %s\n", name, first, detail);
		else
			printf("PASS %s%s", name, verbose ? "" : "\n");
		if (verbose && !anybad)
			printf(" (%.3f s)\n", MPI_Wtime() - t0);
		fflush(stdout);
	}
	if (anybad)
		nfail++;
	else
		npass++;
}

static unsigned char pat(size_t i, int seed) { return (unsigned char)(i * 13 + seed * 71 + (i >> 9)); }

static void fillb(void *p, size_t n, int seed)
{
	unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		c[i] = pat(i, seed);
}

static int checkb(const void *p, size_t n, int seed, const char *what)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i] != pat(i, seed)) {
			fail("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, c[i], pat(i, seed));
			return 0;
		}
	return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Blocking contiguous messages of many sizes in a ring (eager, rendezvous, large). */
static void t_sizes(void)
{
	static const size_t sizes[] = { 0, 1, 7, 64, 4095, 4096, 4097, 16383, 16384, 16385, 65536,
					1 << 20, (8 << 20) + 3 };
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		unsigned char *s = malloc(n + 1), *r = malloc(n + 1);
		fillb(s, n, rank + (int)k);
		memset(r, 0, n + 1);
		MPI_Status st;
		MPI_Sendrecv(s, (int)n, MPI_BYTE, to, (int)k, r, (int)n, MPI_BYTE, from, (int)k,
			     MPI_COMM_WORLD, &st);
		int cnt;
		MPI_Get_count(&st, MPI_BYTE, &cnt);
		if ((size_t)cnt != n || st.MPI_SOURCE != from || st.MPI_TAG != (int)k)
			fail("size %zu: count %d source %d tag %d", n, cnt, st.MPI_SOURCE, st.MPI_TAG);
		char what[64];
		snprintf(what, sizeof(what), "size %zu", n);
		checkb(r, n, from + (int)k, what);
		free(s);
		free(r);
	}
}

/* Many outstanding nonblocking messages, wildcards, unexpected messages, ordering. */
static void t_nonblocking(void)
{
	const int nmsg = 64;
	const size_t n = 20000; /* above a 16 KiB eager limit */
	if (rank == 0) {
		/* receive from everybody with MPI_ANY_SOURCE / MPI_ANY_TAG after they were sent */
		MPI_Barrier(MPI_COMM_WORLD);
		unsigned char *r = malloc(n);
		int *seen = calloc(size, sizeof(int));
		for (int i = 0; i < nmsg * (size - 1); i++) {
			MPI_Status st;
			MPI_Recv(r, (int)n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			int src = st.MPI_SOURCE;
			if (st.MPI_TAG != seen[src])
				fail("from %d: tag %d arrived, expected %d (order)", src, st.MPI_TAG, seen[src]);
			int cnt;
			MPI_Get_count(&st, MPI_BYTE, &cnt);
			size_t len = (size_t)(st.MPI_TAG % 2 ? n : 100);
			if ((size_t)cnt != len)
				fail("from %d tag %d: count %d", src, st.MPI_TAG, cnt);
			checkb(r, len, src * 1000 + st.MPI_TAG, "any-source payload");
			seen[src]++;
		}
		free(r);
		free(seen);
	} else {
		unsigned char **s = malloc(nmsg * sizeof(*s));
		MPI_Request *rq = malloc(nmsg * sizeof(*rq));
		for (int i = 0; i < nmsg; i++) {
			size_t len = i % 2 ? n : 100;
			s[i] = malloc(len);
			fillb(s[i], len, rank * 1000 + i);
			MPI_Isend(s[i], (int)len, MPI_BYTE, 0, i, MPI_COMM_WORLD, &rq[i]);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Waitall(nmsg, rq, MPI_STATUSES_IGNORE);
		for (int i = 0; i < nmsg; i++)
			free(s[i]);
		free(s);
		free(rq);
	}
	/*
	 * Rank 0's wildcard receives above must not meet the messages below: rank 1 may finish
	 * sending first (with MPICH's shared memory between ranks 0 and 1 it does, while ranks 2
	 * and 3 on another host are still sending), and its tag 0 below was taken as the 65th
	 * message of the loop, leaving a message of rank 2 and the receive below waiting forever.
	 */
	MPI_Barrier(MPI_COMM_WORLD);
	/* pre-posted irecvs matched out of order by tag */
	if (rank < 2) {
		int peer = 1 - rank;
		int bufs[8][256];
		MPI_Request rq[16];
		for (int i = 0; i < 8; i++)
			MPI_Irecv(bufs[i], 256, MPI_INT, peer, 7 - i, MPI_COMM_WORLD, &rq[i]);
		int sb[8][256];
		for (int i = 0; i < 8; i++) {
			for (int j = 0; j < 256; j++)
				sb[i][j] = i * 1000 + j + rank;
			MPI_Isend(sb[i], 256, MPI_INT, peer, i, MPI_COMM_WORLD, &rq[8 + i]);
		}
		MPI_Waitall(16, rq, MPI_STATUSES_IGNORE);
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < 256; j++)
				if (bufs[i][j] != (7 - i) * 1000 + j + peer) {
					fail("tag-matched irecv %d element %d", i, j);
					break;
				}
	}
}

/* Synchronous, buffered and ready sends. */
static void t_modes(void)
{
	if (rank >= 2)
		return;
	int peer = 1 - rank;
	const int n = 5000;
	int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
	for (int i = 0; i < n; i++)
		s[i] = i * 3 + rank;
	/* ssend */
	if (rank == 0) {
		MPI_Ssend(s, n, MPI_INT, peer, 1, MPI_COMM_WORLD);
		MPI_Recv(r, n, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(r, n, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Ssend(s, n, MPI_INT, peer, 1, MPI_COMM_WORLD);
	}
	for (int i = 0; i < n; i++)
		if (r[i] != i * 3 + peer) {
			fail("ssend element %d", i);
			break;
		}
	/* bsend */
	int bsz = n * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
	void *bb = malloc(bsz);
	MPI_Buffer_attach(bb, bsz);
	MPI_Bsend(s, n, MPI_INT, peer, 2, MPI_COMM_WORLD);
	MPI_Recv(r, n, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Buffer_detach(&bb, &bsz);
	free(bb);
	for (int i = 0; i < n; i++)
		if (r[i] != i * 3 + peer) {
			fail("bsend element %d", i);
			break;
		}
	/* rsend: the receive is posted before the barrier */
	MPI_Request rq;
	MPI_Irecv(r, n, MPI_INT, peer, 3, MPI_COMM_WORLD, &rq);
	MPI_Sendrecv(NULL, 0, MPI_INT, peer, 4, NULL, 0, MPI_INT, peer, 4, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	MPI_Rsend(s, n, MPI_INT, peer, 3, MPI_COMM_WORLD);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	for (int i = 0; i < n; i++)
		if (r[i] != i * 3 + peer) {
			fail("rsend element %d", i);
			break;
		}
	free(s);
	free(r);
}

/* Probe, iprobe, mprobe/mrecv, improbe. */
static void t_probe(void)
{
	if (rank >= 2)
		return;
	int peer = 1 - rank;
	size_t sizes[] = { 10, 30000 };
	for (int k = 0; k < 2; k++) {
		size_t n = sizes[k];
		unsigned char *s = malloc(n), *r = malloc(n);
		fillb(s, n, rank + k);
		MPI_Request rq;
		MPI_Isend(s, (int)n, MPI_BYTE, peer, 10 + k, MPI_COMM_WORLD, &rq);
		MPI_Status st;
		int flag = 0;
		/* iprobe for an unused tag must say no */
		MPI_Iprobe(peer, 99, MPI_COMM_WORLD, &flag, &st);
		if (flag)
			fail("iprobe found a message with an unused tag");
		MPI_Probe(peer, 10 + k, MPI_COMM_WORLD, &st);
		int cnt;
		MPI_Get_count(&st, MPI_BYTE, &cnt);
		if ((size_t)cnt != n || st.MPI_TAG != 10 + k || st.MPI_SOURCE != peer)
			fail("probe: count %d tag %d source %d", cnt, st.MPI_TAG, st.MPI_SOURCE);
		/* probe again: still there */
		do
			MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
		while (!flag);
		MPI_Message msg;
		MPI_Mprobe(peer, 10 + k, MPI_COMM_WORLD, &msg, &st);
		MPI_Mrecv(r, (int)n, MPI_BYTE, &msg, &st);
		checkb(r, n, peer + k, "mprobe/mrecv");
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		/* improbe */
		MPI_Isend(s, (int)n, MPI_BYTE, peer, 20 + k, MPI_COMM_WORLD, &rq);
		flag = 0;
		while (!flag)
			MPI_Improbe(peer, 20 + k, MPI_COMM_WORLD, &flag, &msg, &st);
		memset(r, 0, n);
		MPI_Request mr;
		MPI_Imrecv(r, (int)n, MPI_BYTE, &msg, &mr);
		MPI_Wait(&mr, &st);
		checkb(r, n, peer + k, "improbe/imrecv");
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		free(s);
		free(r);
	}
}

/* Cancel a posted receive; truncation is reported as MPI_ERR_TRUNCATE. */
static void t_cancel_trunc(void)
{
	int buf[4];
	MPI_Request rq;
	MPI_Status st;
	MPI_Irecv(buf, 4, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &rq);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	int c = 0;
	MPI_Test_cancelled(&st, &c);
	if (!c)
		fail("receive not cancelled");
	MPI_Comm comm; /* collective: every rank */
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	if (rank >= 2) {
		MPI_Comm_free(&comm);
		return;
	}
	int peer = 1 - rank;
	int big[100];
	for (int i = 0; i < 100; i++)
		big[i] = i;
	MPI_Isend(big, 100, MPI_INT, peer, 5, comm, &rq);
	int err = MPI_Recv(buf, 4, MPI_INT, peer, 5, comm, &st);
	int cls = 0;
	MPI_Error_class(err, &cls);
	if (cls != MPI_ERR_TRUNCATE)
		fail("truncated receive: error class %d, expected MPI_ERR_TRUNCATE", cls);
	/* (the buffer's contents after a truncation are not defined by MPI) */
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	MPI_Comm_free(&comm);
}

/* Persistent requests. */
static void t_persistent(void)
{
	if (rank >= 2)
		return;
	int peer = 1 - rank;
	double s[1000] = { 0 }, r[1000];
	MPI_Request rq[2];
	MPI_Send_init(s, 1000, MPI_DOUBLE, peer, 6, MPI_COMM_WORLD, &rq[0]);
	MPI_Recv_init(r, 1000, MPI_DOUBLE, peer, 6, MPI_COMM_WORLD, &rq[1]);
	for (int it = 0; it < 10; it++) {
		for (int i = 0; i < 1000; i++)
			s[i] = it * 1e6 + i + rank * 0.5;
		MPI_Startall(2, rq);
		MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
		for (int i = 0; i < 1000; i++)
			if (r[i] != it * 1e6 + i + peer * 0.5) {
				fail("iteration %d element %d", it, i);
				break;
			}
	}
	MPI_Request_free(&rq[0]);
	MPI_Request_free(&rq[1]);
}

/* ------------------------------------------------------------------------------------------ */
/* Datatypes: each layout is sent with the derived type and received (a) with the same type into
 * a buffer of canaries, (b) as contiguous bytes; the result is checked against MPI_Pack. */

typedef MPI_Datatype (*mktype)(size_t *extent_bytes);

static MPI_Datatype mk_vector_small(size_t *ext) /* 100 x 8 B, stride 24 B */
{
	MPI_Datatype t;
	MPI_Type_vector(100, 2, 6, MPI_INT, &t);
	*ext = 100 * 24;
	return t;
}
static MPI_Datatype mk_vector_32x4k(size_t *ext) /* 32 x 4 KiB, stride 8 KiB */
{
	MPI_Datatype t;
	MPI_Type_vector(32, 1024, 2048, MPI_FLOAT, &t);
	*ext = 32 * 8192;
	return t;
}
static MPI_Datatype mk_vector_many(size_t *ext) /* 4096 x 64 B */
{
	MPI_Datatype t;
	MPI_Type_vector(4096, 8, 16, MPI_DOUBLE, &t);
	*ext = 4096 * 128;
	return t;
}
static MPI_Datatype mk_hvector_of_vector(size_t *ext) /* NAS_MG-like x face of 34x18x18 */
{
	MPI_Datatype inner, t;
	MPI_Type_vector(16, 1, 34, MPI_DOUBLE, &inner);
	MPI_Type_create_hvector(16, 1, 8 * 34 * 18, inner, &t);
	MPI_Type_free(&inner);
	*ext = 8 * 34 * 18 * 18;
	return t;
}
static MPI_Datatype mk_indexed(size_t *ext) /* irregular blocks, unsorted displacements */
{
	int bl[7] = { 1, 3, 200, 5, 1024, 2, 17 };
	int dp[7] = { 5000, 0, 10, 300, 1200, 2400, 2600 };
	MPI_Datatype t;
	MPI_Type_indexed(7, bl, dp, MPI_INT, &t);
	*ext = 5001 * 4;
	return t;
}
static MPI_Datatype mk_struct(size_t *ext) /* ints, doubles, chars with gaps */
{
	int bl[3] = { 3, 2, 11 };
	MPI_Aint dp[3] = { 0, 16, 40 };
	MPI_Datatype ty[3] = { MPI_INT, MPI_DOUBLE, MPI_CHAR }, s, t;
	MPI_Type_create_struct(3, bl, dp, ty, &s);
	MPI_Type_create_resized(s, 0, 64, &t);
	MPI_Type_free(&s);
	MPI_Datatype c;
	MPI_Type_contiguous(50, t, &c);
	MPI_Type_free(&t);
	*ext = 50 * 64;
	return c;
}
static MPI_Datatype mk_subarray(size_t *ext) /* 3-D face: 40x30x20 doubles, 40x30x1 plane */
{
	int sz[3] = { 20, 30, 40 }, sub[3] = { 18, 1, 38 }, st[3] = { 1, 15, 1 };
	MPI_Datatype t;
	MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t);
	*ext = 20 * 30 * 40 * 8;
	return t;
}
static MPI_Datatype mk_resized_column(size_t *ext) /* columns of a 64x256 int matrix, 4 cols */
{
	MPI_Datatype col, t;
	MPI_Type_vector(64, 4, 256, MPI_INT, &col);
	MPI_Type_create_resized(col, 0, 16, &t);
	MPI_Type_free(&col);
	*ext = 64 * 256 * 4;
	return t;
}
static MPI_Datatype mk_hindexed_large(size_t *ext) /* 24 blocks of 40 KiB */
{
	int bl[24];
	MPI_Aint dp[24];
	for (int i = 0; i < 24; i++) {
		bl[i] = 40960;
		dp[i] = (MPI_Aint)(23 - i) * 50000;
	}
	MPI_Datatype t;
	MPI_Type_create_hindexed(24, bl, dp, MPI_BYTE, &t);
	*ext = 24 * 50000;
	return t;
}

static struct {
	const char *name;
	mktype mk;
} layouts[] = {
	{ "vector-100x8B", mk_vector_small },
	{ "vector-32x4KiB", mk_vector_32x4k },
	{ "vector-4096x64B", mk_vector_many },
	{ "hvector-of-vector", mk_hvector_of_vector },
	{ "indexed-unsorted", mk_indexed },
	{ "struct-resized", mk_struct },
	{ "subarray-3d", mk_subarray },
	{ "resized-columns", mk_resized_column },
	{ "hindexed-24x40KiB", mk_hindexed_large },
};

static void dt_one(int li)
{
	if (rank >= 2)
		return;
	int peer = 1 - rank;
	size_t ext;
	MPI_Datatype t = layouts[li].mk(&ext);
	MPI_Type_commit(&t);
	int tsize;
	MPI_Type_size(t, &tsize);
	int count = li == 7 ? 3 : 1; /* resized columns: 3 consecutive instances */
	size_t span = ext + 64;
	unsigned char *s = malloc(span), *r = malloc(span), *exp = malloc(span);
	fillb(s, span, rank + li);
	/* expected: what the peer's buffer would hold where the type selects it, canaries else */
	unsigned char *peers = malloc(span);
	fillb(peers, span, peer + li);
	int psz;
	MPI_Pack_size(count, t, MPI_COMM_SELF, &psz);
	unsigned char *packed = malloc(psz), *ppk = malloc(psz);
	int pos = 0;
	MPI_Pack(peers, count, t, packed, psz, &pos, MPI_COMM_SELF);
	memset(exp, 0xA5, span);
	pos = 0;
	MPI_Unpack(packed, psz, &pos, exp, count, t, MPI_COMM_SELF);
	size_t bytes = (size_t)tsize * count;

	/* (a) type to type */
	memset(r, 0xA5, span);
	MPI_Status st;
	MPI_Sendrecv(s, count, t, peer, 30, r, count, t, peer, 30, MPI_COMM_WORLD, &st);
	int cnt;
	MPI_Get_count(&st, t, &cnt);
	if (cnt != count)
		fail("%s: MPI_Get_count %d", layouts[li].name, cnt);
	if (memcmp(r, exp, span)) {
		size_t i = 0;
		while (r[i] == exp[i])
			i++;
		fail("%s: type->type: byte %zu is 0x%02x, expected 0x%02x", layouts[li].name, i, r[i],
		     exp[i]);
	}
	/* (b) type to contiguous bytes, and contiguous bytes to type */
	memset(ppk, 0, psz);
	MPI_Sendrecv(s, count, t, peer, 31, ppk, (int)bytes, MPI_BYTE, peer, 31, MPI_COMM_WORLD, &st);
	if (memcmp(ppk, packed, bytes))
		fail("%s: type->bytes differs from MPI_Pack", layouts[li].name);
	memset(r, 0xA5, span);
	pos = 0;
	unsigned char *mine = malloc(psz);
	MPI_Pack(s, count, t, mine, psz, &pos, MPI_COMM_SELF);
	MPI_Sendrecv(mine, (int)bytes, MPI_BYTE, peer, 32, r, count, t, peer, 32, MPI_COMM_WORLD, &st);
	if (memcmp(r, exp, span))
		fail("%s: bytes->type differs", layouts[li].name);
	/* (c) nonblocking, 4 in flight with different tags */
	unsigned char *rs[4];
	MPI_Request rq[8];
	for (int k = 0; k < 4; k++) {
		rs[k] = malloc(span);
		memset(rs[k], 0xA5, span);
		MPI_Irecv(rs[k], count, t, peer, 40 + k, MPI_COMM_WORLD, &rq[k]);
	}
	for (int k = 0; k < 4; k++)
		MPI_Isend(s, count, t, peer, 43 - k, MPI_COMM_WORLD, &rq[4 + k]);
	MPI_Waitall(8, rq, MPI_STATUSES_IGNORE);
	for (int k = 0; k < 4; k++) {
		if (memcmp(rs[k], exp, span))
			fail("%s: nonblocking copy %d differs", layouts[li].name, k);
		free(rs[k]);
	}
	free(mine);
	free(s);
	free(r);
	free(exp);
	free(peers);
	free(packed);
	free(ppk);
	MPI_Type_free(&t);
}

static int cur_layout;
static void t_dt(void) { dt_one(cur_layout); }

/* Collectives with derived types (all ranks). */
static void t_coll_dt(void)
{
	/* bcast of a vector from the last rank */
	MPI_Datatype v;
	MPI_Type_vector(40, 3, 7, MPI_INT, &v);
	MPI_Type_commit(&v);
	int *b = malloc(40 * 7 * sizeof(int));
	for (int i = 0; i < 280; i++)
		b[i] = rank == size - 1 ? i : -1;
	MPI_Bcast(b, 1, v, size - 1, MPI_COMM_WORLD);
	for (int i = 0; i < 40; i++)
		for (int j = 0; j < 7; j++)
			if (b[i * 7 + j] != (j < 3 ? i * 7 + j : rank == size - 1 ? i * 7 + j : -1)) {
				fail("bcast vector element %d", i * 7 + j);
				i = 40;
				break;
			}
	free(b);
	MPI_Type_free(&v);
	/* alltoall with a column type (FFT-style transpose) */
	int n = 8;
	int N = n * size;
	double *A = malloc(sizeof(double) * n * N), *B = malloc(sizeof(double) * n * N);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < N; j++)
			A[i * N + j] = (rank * n + i) * 1000 + j;
	MPI_Datatype col, colr, blk;
	MPI_Type_vector(n, 1, N, MPI_DOUBLE, &col);
	MPI_Type_create_resized(col, 0, sizeof(double), &colr);
	MPI_Type_contiguous(n, colr, &blk);
	MPI_Type_commit(&blk);
	MPI_Datatype sv, svr;
	MPI_Type_vector(n, n, N, MPI_DOUBLE, &sv);
	MPI_Type_create_resized(sv, 0, n * sizeof(double), &svr);
	MPI_Type_commit(&svr);
	MPI_Alltoall(A, 1, svr, B, 1, blk, MPI_COMM_WORLD);
	/* B is the transpose: B[i][j] = A_global[j][rank*n+i] */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < N; j++)
			if (B[i * N + j] != j * 1000 + rank * n + i) {
				fail("alltoall transpose B[%d][%d] = %g", i, j, B[i * N + j]);
				i = n;
				break;
			}
	free(A);
	free(B);
	MPI_Type_free(&col);
	MPI_Type_free(&colr);
	MPI_Type_free(&blk);
	MPI_Type_free(&sv);
	MPI_Type_free(&svr);
	/* allreduce on a large buffer */
	int m = 300000;
	long *x = malloc(m * sizeof(long)), *y = malloc(m * sizeof(long));
	for (int i = 0; i < m; i++)
		x[i] = i + rank;
	MPI_Allreduce(x, y, m, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < m; i++)
		if (y[i] != (long)i * size + (long)size * (size - 1) / 2) {
			fail("allreduce element %d", i);
			break;
		}
	free(x);
	free(y);
}

/* A little one-sided traffic (put/get/accumulate with fence and lock). */
static void t_rma(void)
{
	const int n = 4096;
	int *wbuf;
	MPI_Win win;
	MPI_Win_allocate(n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wbuf, &win);
	for (int i = 0; i < n; i++)
		wbuf[i] = -1;
	MPI_Win_fence(0, win);
	int to = (rank + 1) % size;
	int *src = malloc(n * sizeof(int));
	for (int i = 0; i < n; i++)
		src[i] = rank * n + i;
	MPI_Put(src, n / 2, MPI_INT, to, 0, n / 2, MPI_INT, win);
	MPI_Win_fence(0, win);
	int from = (rank + size - 1) % size;
	for (int i = 0; i < n / 2; i++)
		if (wbuf[i] != from * n + i) {
			fail("put element %d = %d", i, wbuf[i]);
			break;
		}
	int *g = malloc(n * sizeof(int));
	MPI_Win_lock(MPI_LOCK_SHARED, to, 0, win);
	MPI_Get(g, n / 2, MPI_INT, to, 0, n / 2, MPI_INT, win);
	MPI_Win_unlock(to, win);
	for (int i = 0; i < n / 2; i++)
		if (g[i] != rank * n + i) {
			fail("get element %d = %d", i, g[i]);
			break;
		}
	MPI_Win_fence(0, win);
	int one = 1;
	for (int i = 0; i < 10; i++)
		MPI_Accumulate(&one, 1, MPI_INT, 0, n - 1, 1, MPI_INT, MPI_SUM, win);
	MPI_Win_fence(0, win);
	if (rank == 0 && wbuf[n - 1] != -1 + 10 * size)
		fail("accumulate: %d, expected %d", wbuf[n - 1], -1 + 10 * size);
	MPI_Win_free(&win);
	free(src);
	free(g);
}

/* Threads of ranks 0 and 1 exchange messages concurrently (MPI_THREAD_MULTIPLE). */
#define NTHREADS 4
static void *thread_body(void *arg)
{
	int id = (int)(intptr_t)arg, peer = 1 - rank;
	size_t n = id % 2 ? 40000 : 256;
	unsigned char *s = malloc(n), *r = malloc(n);
	for (int it = 0; it < 50; it++) {
		fillb(s, n, rank * 100 + id + it);
		MPI_Sendrecv(s, (int)n, MPI_BYTE, peer, id, r, (int)n, MPI_BYTE, peer, id,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (!checkb(r, n, peer * 100 + id + it, "threaded exchange"))
			break;
	}
	free(s);
	free(r);
	return NULL;
}

static void t_threads(void)
{
	if (rank >= 2)
		return;
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, thread_body, (void *)(intptr_t)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
}

int main(int argc, char **argv)
{
	int mt = 0, provided = MPI_THREAD_SINGLE;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-mt"))
			mt = 1;
	if (mt)
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	else
		MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = 1;
		else if (!strcmp(argv[i], "-mt"))
			;
		else if (!strcmp(argv[i], "-only") && i + 1 < argc)
			only = argv[++i];
	}
	if (size < 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	run("pt2pt-sizes", t_sizes);
	run("pt2pt-nonblocking-anysource", t_nonblocking);
	run("pt2pt-ssend-bsend-rsend", t_modes);
	run("pt2pt-probe-mprobe", t_probe);
	run("pt2pt-cancel-truncate", t_cancel_trunc);
	run("pt2pt-persistent", t_persistent);
	for (unsigned li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
		char name[64];
		snprintf(name, sizeof(name), "dt-%s", layouts[li].name);
		cur_layout = (int)li;
		run(name, t_dt);
	}
	run("coll-derived-types", t_coll_dt);
	run("rma-put-get-acc", t_rma);
	if (mt) {
		if (provided == MPI_THREAD_MULTIPLE)
			run("pt2pt-thread-multiple", t_threads);
		else if (rank == 0)
			printf("SKIP pt2pt-thread-multiple: MPI provides thread level %d\n", provided);
	}
	if (rank == 0)
		printf("mpi_check: %d passed, %d failed (%d ranks)\n", npass, nfail, size);
	MPI_Finalize();
	return nfail ? 1 : 0;
}
