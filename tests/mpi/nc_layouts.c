/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nc_layouts: MPI derived datatypes that MPICH built with util/build-mpich.sh --ddtx-layouts hands
 * to ddtx as layout handles (nested vectors, subarrays and indexed blocks by their loops, a
 * struct and an indexed type by their blocks, a transpose in tiles), and two it must not (a
 * transpose it does not tile, overlapping elements), each checked byte for byte, gaps included.
 *
 *   mpiexec -n 2 nc_layouts [-iters N]
 *
 * For each type T and element count c, rank 0 sends (buffer, c, T) to rank 1 four ways and rank
 * 1 checks what arrived against MPICH's own datatype engine, used without the network: a
 * receive into (c, T) against a receive of the packed bytes sent to itself and unpacked the same
 * way (MPI_Sendrecv on MPI_COMM_SELF, which ch4 does not hand to the provider), a contiguous
 * receive against MPI_Pack, and a short message (a third of the bytes, sent contiguously) into
 * (c, T), whose count must be the bytes sent (whole basic elements: MPI matches those), and a
 * message taken by MPI_Mprobe and MPI_Mrecv into (c, T) (the provider's FI_CLAIM).  Then
 * the roles swap.  Every receive buffer starts filled with a canary, so a byte written outside
 * the type's blocks is a failure too.
 *
 * Prints "nc_layouts: N checks, F failed" on rank 0; exit status 1 on a failure.  With ddtx and
 * FI_DDTX_STATS=1 the statistics printed at MPI_Finalize count the operations that carried a
 * layout handle (handle_ops): tests/mpi/mpich_layouts.sh holds them against the number printed
 * here (every send and typed receive of a described layout, none of the last two's).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY 0xEE

struct layout {
	const char *name;
	MPI_Datatype type;
	int count;
	int unit; /* a short message is a multiple of it: MPI matches whole basic elements */
};

static unsigned char val(long i, int seed)
{
	return (unsigned char)(i * 31 + seed * 11 + (i >> 9));
}

static MPI_Datatype vector_of(int count, int blocklen, int stride, MPI_Datatype old)
{
	MPI_Datatype t;
	MPI_Type_vector(count, blocklen, stride, old, &t);
	return t;
}

/* The datatypes, committed; about the shapes of tests/mpi/bench's application layouts. */
static int make_layouts(struct layout *l)
{
	int n = 0;
	MPI_Datatype t, u;
	l[n++] = (struct layout){ "vector-100x3d", vector_of(100, 3, 7, MPI_DOUBLE), 1, 8 };
	l[n++] = (struct layout){ "vector-64x64B-count3", vector_of(64, 64, 128, MPI_BYTE), 3, 1 };
	/* MILC: hvector of a vector of contig(6, float) */
	MPI_Type_contiguous(6, MPI_FLOAT, &u);
	t = vector_of(16, 4, 12, u);
	MPI_Type_create_hvector(2, 1, 24 * 12 * 16 * 2, t, &l[n].type);
	l[n].name = "milc-hvector-of-vector";
	l[n].unit = 4;
	l[n++].count = 1;
	MPI_Type_free(&u);
	MPI_Type_free(&t);
	/* a 256 x 256 face of 4 B elements, 1 KiB apart: more pieces than MPICH's iov cap */
	l[n++] = (struct layout){ "cube-yz-65536x4B", vector_of(65536, 1, 256, MPI_FLOAT), 1, 4 };
	/* NAS MG x face: an hvector of vectors of doubles */
	t = vector_of(16, 1, 34, MPI_DOUBLE);
	MPI_Type_create_hvector(16, 1, 8 * 34 * 18, t, &l[n].type);
	l[n].name = "nas_mg-x-hvector";
	l[n].unit = 8;
	l[n++].count = 2;
	MPI_Type_free(&t);
	int sizes[3] = { 20, 30, 40 }, subs[3] = { 5, 7, 9 }, starts[3] = { 3, 11, 17 };
	MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &l[n].type);
	l[n].name = "subarray-3d-C";
	l[n].unit = 4;
	l[n++].count = 1;
	MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_DOUBLE, &l[n].type);
	l[n].name = "subarray-2d-Fortran";
	l[n].unit = 8;
	l[n++].count = 1;
	/* SPECFEM3D_oc: indexed blocks of one float, unordered displacements */
	int displs[500];
	for (int i = 0; i < 500; i++)
		displs[i] = (int)((i * 7919L) % 4001);
	MPI_Type_create_indexed_block(500, 1, displs, MPI_FLOAT, &l[n].type);
	l[n].name = "indexed_block-500x4B";
	l[n].unit = 4;
	l[n++].count = 1;
	MPI_Aint hdispls[40];
	for (int i = 0; i < 40; i++)
		hdispls[i] = 8 + (MPI_Aint)i * 100 + (i % 3) * 20;
	MPI_Type_create_hindexed_block(40, 2, hdispls, MPI_INT, &l[n].type);
	l[n].name = "hindexed_block-40x8B-count2";
	l[n].unit = 4;
	l[n++].count = 2;
	/* a vector resized to a larger extent, several elements */
	t = vector_of(10, 2, 5, MPI_INT);
	MPI_Type_create_resized(t, 0, 4 * 60, &l[n].type);
	l[n].name = "resized-vector-count4";
	l[n].unit = 4;
	l[n++].count = 4;
	MPI_Type_free(&t);
	/* contiguous(3, vector): one more dimension */
	t = vector_of(8, 1, 3, MPI_SHORT);
	MPI_Type_contiguous(3, t, &l[n].type);
	l[n].name = "contiguous-of-vector";
	l[n].unit = 2;
	l[n++].count = 1;
	MPI_Type_free(&t);
	/* listed (not loops): a struct of two kinds, an indexed type of unequal blocks */
	int bl[2] = { 3, 5 };
	MPI_Aint sd[2] = { 0, 64 };
	MPI_Datatype st[2] = { MPI_INT, MPI_DOUBLE };
	MPI_Type_create_struct(2, bl, sd, st, &l[n].type);
	l[n].name = "struct-listed";
	l[n].unit = 52;
	l[n++].count = 2;
	int ibl[5] = { 1, 4, 2, 7, 3 }, idis[5] = { 40, 3, 20, 9, 31 };
	MPI_Type_indexed(5, ibl, idis, MPI_DOUBLE, &l[n].type);
	l[n].name = "indexed-listed";
	l[n].unit = 8;
	l[n++].count = 3;
	/* a transpose ddtx takes in tiles (FFT2D's receive type: 16-byte elements, the rows 16
	 * bytes apart; ofi_ddtx_layouts.c) */
	t = vector_of(24, 2, 48, MPI_DOUBLE);
	MPI_Type_create_resized(t, 0, 16, &u);
	MPI_Type_contiguous(24, u, &l[n].type);
	l[n].name = "transpose-tiled";
	l[n].unit = 8;
	l[n++].count = 1;
	MPI_Type_free(&t);
	MPI_Type_free(&u);
	/* not described: a transpose whose rows lie 48 bytes apart (left to MPICH) and a vector
	 * whose elements overlap (count 2) */
	t = vector_of(16, 6, 96, MPI_DOUBLE);
	MPI_Type_create_resized(t, 0, 48, &u);
	MPI_Type_contiguous(16, u, &l[n].type);
	l[n].name = "transpose-not-described";
	l[n].unit = 8;
	l[n++].count = 1;
	MPI_Type_free(&t);
	MPI_Type_free(&u);
	t = vector_of(4, 1, 4, MPI_INT);
	MPI_Type_create_resized(t, 0, 8, &l[n].type);
	l[n].name = "overlapping-elements";
	l[n].unit = 4;
	l[n++].count = 2;
	MPI_Type_free(&t);
	for (int i = 0; i < n; i++)
		MPI_Type_commit(&l[i].type);
	return n - 2; /* described: all but the last two */
}

/* Bytes of count elements at buf from the buffer's start: lb, span (true extent). */
static void span_of(MPI_Datatype t, int count, MPI_Aint *off, MPI_Aint *len)
{
	MPI_Aint lb, extent, tlb, textent;
	MPI_Type_get_extent(t, &lb, &extent);
	MPI_Type_get_true_extent(t, &tlb, &textent);
	*off = tlb;
	*len = textent + (MPI_Aint)(count - 1) * extent;
}

/* The buffers of one layout's check: mem receives, ref is the reference (both of the type's
 * span, buf and refbuf their origins), packed holds the sender's bytes in the type's order. */
struct bufs {
	const struct layout *l;
	unsigned char *mem, *ref, *buf, *refbuf, *packed;
	MPI_Aint len;
};

/* A receive into the type (tag 1 or 3 by MPI_Recv, 4 by MPI_Mprobe + MPI_Mrecv) of `want`
 * bytes, against those bytes unpacked by MPICH on this rank alone.  Returns 1 on a failure. */
static int recv_typed(const struct bufs *b, int from, int tag, long want, const char *what)
{
	const struct layout *l = b->l;
	MPI_Status status;
	int got;
	memset(b->mem, CANARY, (size_t)b->len);
	memset(b->ref, CANARY, (size_t)b->len);
	if (tag == 4) {
		MPI_Message msg;
		MPI_Mprobe(from, tag, MPI_COMM_WORLD, &msg, &status);
		MPI_Mrecv(b->buf, l->count, l->type, &msg, &status);
	} else {
		MPI_Recv(b->buf, l->count, l->type, from, tag, MPI_COMM_WORLD, &status);
	}
	MPI_Sendrecv(b->packed, (int)want, MPI_BYTE, 0, 9, b->refbuf, l->count, l->type, 0, 9,
		     MPI_COMM_SELF, MPI_STATUS_IGNORE);
	MPI_Get_count(&status, MPI_BYTE, &got);
	int bad = memcmp(b->mem, b->ref, (size_t)b->len) != 0;
	if (got == want && !bad)
		return 0;
	fprintf(stderr, "nc_layouts: %s: %s: %d of %ld bytes, %s\n", l->name, what, got, want,
		bad ? "wrong bytes" : "ok");
	return 1;
}

/* One layout, one direction: from `from` to the other rank.  Returns the failed checks. */
static int check_layout(const struct layout *l, int rank, int from, long *checks)
{
	MPI_Aint off, len;
	int size, failed = 0;
	span_of(l->type, l->count, &off, &len);
	MPI_Type_size(l->type, &size);
	long bytes = (long)size * l->count, part = bytes / 3 / l->unit * l->unit;
	unsigned char *mem = malloc((size_t)len), *ref = malloc((size_t)len);
	unsigned char *flat = malloc((size_t)bytes), *packed = malloc((size_t)bytes);
	/* (buf and refbuf: the type's origin) */
	struct bufs b = {l, mem, ref, mem - off, ref - off, packed, len};
	for (MPI_Aint i = 0; i < len; i++)
		mem[i] = val(i, from);
	int pos = 0;
	MPI_Pack(b.buf, l->count, l->type, packed, (int)bytes, &pos, MPI_COMM_SELF);
	if (rank == from) {
		MPI_Send(b.buf, l->count, l->type, 1 - rank, 1, MPI_COMM_WORLD);
		MPI_Send(b.buf, l->count, l->type, 1 - rank, 2, MPI_COMM_WORLD);
		MPI_Send(packed, (int)part, MPI_BYTE, 1 - rank, 3, MPI_COMM_WORLD);
		MPI_Send(b.buf, l->count, l->type, 1 - rank, 4, MPI_COMM_WORLD);
	} else {
		/* 1: into the type */
		failed += recv_typed(&b, from, 1, bytes, "receive into the type");
		/* 2: contiguously; the reference is MPI_Pack's stream */
		memset(flat, CANARY, (size_t)bytes);
		MPI_Recv(flat, (int)bytes, MPI_BYTE, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (memcmp(flat, packed, (size_t)bytes)) {
			fprintf(stderr, "nc_layouts: %s: contiguous receive differs from MPI_Pack\n",
				l->name);
			failed++;
		}
		/* 3: a short message into the type: its first `part` bytes in the type's order */
		failed += recv_typed(&b, from, 3, part, "short message");
		/* 4: MPI_Mprobe, then MPI_Mrecv into the type (the provider's FI_CLAIM receive) */
		failed += recv_typed(&b, from, 4, bytes, "MPI_Mrecv");
		*checks += 4;
	}
	free(mem);
	free(ref);
	free(flat);
	free(packed);
	return failed;
}

int main(int argc, char **argv)
{
	int rank, size, iters = 2;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
	if (size != 2) {
		fprintf(stderr, "nc_layouts: needs 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	struct layout l[32];
	int described = make_layouts(l), n = described + 2;
	long checks = 0, failed = 0;
	/* iterations: the second and later use the handles made by the first */
	for (int it = 0; it < iters; it++)
		for (int i = 0; i < n; i++)
			for (int from = 0; from < 2; from++)
				failed += check_layout(&l[i], rank, from, &checks);
	long all[2] = { checks, failed }, sum[2];
	MPI_Reduce(all, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("nc_layouts: %ld checks, %ld failed (%d layouts, %d iterations)\n", sum[0],
		       sum[1], n, iters);
	/* per described layout and iteration, each rank sends three messages of the type and
	 * receives three into it: what the ddtx statistics must count as operations with a handle */
	if (rank == 0)
		printf("nc_layouts: handle operations expected per rank: %d\n", 6 * described * iters);
	for (int i = 0; i < n; i++)
		MPI_Type_free(&l[i].type);
	MPI_Finalize();
	return rank == 0 && sum[1] ? 1 : 0;
}
