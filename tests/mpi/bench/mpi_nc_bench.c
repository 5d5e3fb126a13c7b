/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mpi_nc_bench: MPI-level noncontiguous latency benchmark, for any MPI.
 *
 *   mpiexec -n 2 mpi_nc_bench [-list] [-cases PATTERN[,PATTERN...]] [-vec B:C[:S],...]
 *                             [-batches N] [-min-batch-us U] [-label NAME] [-quick]
 *
 * Two kinds of cases, all between ranks 0 and 1:
 *   - a vector ping-pong like the OSU vector latency test: MPI_Type_vector with block length B
 *     bytes, count C, stride S (default 2B) on both sides ("vec-<B>x<C>"; -vec adds more);
 *   - the application layouts of LAYOUTS.md (DDTBench kernels MILC, NAS_LU, NAS_MG, WRF,
 *     SPECFEM3D, LAMMPS, FFT2D, and SW4Lite, SGRS, dataloop-paper layouts), each built the way
 *     the application builds its datatypes; where send and receive layouts differ each rank
 *     sends with the send type and receives with the receive type.
 * A ping-pong iteration is rank 0 send + rank 1 receive, then back; the reported latency is
 * half a round trip (FFT2D: one MPI_Alltoall).  Each case is timed in batches of at least
 * -min-batch-us microseconds (default 20000), -batches of them (default 7), after a warm-up;
 * the median batch gives the latency.  The data of the first exchange is checked (the receiver
 * packs what it got with its receive type and compares with the sender's packed send type).
 *
 * Output, one line per case on rank 0 (util/mpi-bench.sh collects them):
 *   RESULT stack=<label> case=<name> kind=<vector|app> blocks=<n> bytes=<n> avg_block=<B>
 *          lat_us=<median> min_us=<min> check=<ok|FAIL>
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

struct side {
	void *buf;            /* base passed to MPI (MPI_BOTTOM for absolute types) */
	MPI_Datatype type;
	int count;
	void *mem[12];        /* allocations to fill and free */
	size_t memsz[12];
	int nmem;
};

struct kase {
	char name[64];
	int alltoall;         /* FFT2D */
	long blocks;          /* send-side blocks (typemap order, before merging) */
	struct side s, r;
};

static void *side_alloc(struct side *sd, size_t n)
{
	void *p = aligned_alloc(64, (n + 63) / 64 * 64);
	if (!p) {
		fprintf(stderr, "mpi_nc_bench: out of memory (%zu B)\n", n);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	memset(p, 0, n);
	sd->mem[sd->nmem] = p;
	sd->memsz[sd->nmem++] = n;
	return p;
}

static void side_free(struct side *sd)
{
	for (int i = 0; i < sd->nmem; i++)
		free(sd->mem[i]);
	if (sd->type != MPI_DATATYPE_NULL)
		MPI_Type_free(&sd->type);
	sd->nmem = 0;
}

static void commit(MPI_Datatype *t) { MPI_Type_commit(t); }

/* ---- vector (OSU-like) ------------------------------------------------------------------ */
static void mk_vector(struct kase *k, long B, long C, long S)
{
	if (S <= 0)
		S = 2 * B;
	snprintf(k->name, sizeof(k->name), S == 2 * B ? "vec-%ldx%ld" : "vec-%ldx%ld-s%ld", B, C, S);
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		sd->buf = side_alloc(sd, (size_t)S * C);
		MPI_Type_vector((int)C, (int)B, (int)S, MPI_BYTE, &sd->type);
		commit(&sd->type);
		sd->count = 1;
	}
	k->blocks = C;
}

/* ---- MILC su3_zd -------------------------------------------------------------------------- */
static void mk_milc(struct kase *k, int D2, int D3, int D4, int D5)
{
	snprintf(k->name, sizeof(k->name), "milc-su3zd-%d.%d.%d.%d", D2, D3, D4, D5);
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		sd->buf = side_alloc(sd, (size_t)24 * D2 * D3 * D4 * D5);
		MPI_Datatype su3, tmp;
		MPI_Type_contiguous(6, MPI_FLOAT, &su3);
		MPI_Type_vector(D5, D2 * D3 / 2, D2 * D3 * D4 / 2, su3, &tmp);
		MPI_Type_create_hvector(2, 1, (MPI_Aint)12 * D2 * D3 * D4 * D5, tmp, &sd->type);
		MPI_Type_free(&su3);
		MPI_Type_free(&tmp);
		commit(&sd->type);
		sd->count = 1;
	}
	k->blocks = 2L * D5;
}

/* ---- NAS_LU y ----------------------------------------------------------------------------- */
static void mk_nas_lu_y(struct kase *k, int n)
{
	snprintf(k->name, sizeof(k->name), "nas_lu-y-%d", n);
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		char *a = side_alloc(sd, (size_t)40 * (n + 2) * (n + 2));
		sd->buf = a + (i == 0 ? 80L * (n + 1) : 40L * (n + 2));
		MPI_Type_vector(n, 5, 5 * (n + 2), MPI_DOUBLE, &sd->type);
		commit(&sd->type);
		sd->count = 1;
	}
	k->blocks = n;
}

/* ---- NAS_MG faces ------------------------------------------------------------------------- */
static void mk_nas_mg(struct kase *k, char face, int D1, int D2, int D3)
{
	snprintf(k->name, sizeof(k->name), "nas_mg-%c-%d.%d.%d", face, D1, D2, D3);
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		double *a = side_alloc(sd, (size_t)8 * D1 * D2 * D3);
		long base;
		if (face == 'x') {
			MPI_Datatype inner;
			MPI_Type_vector(D2 - 2, 1, D1, MPI_DOUBLE, &inner);
			MPI_Type_create_hvector(D3 - 2, 1, (MPI_Aint)8 * D1 * D2, inner, &sd->type);
			MPI_Type_free(&inner);
			base = (i == 0 ? D1 - 2 : D1 - 1) + (long)D1 * (1 + (long)D2 * 1);
			k->blocks = (long)(D2 - 2) * (D3 - 2);
		} else if (face == 'y') {
			MPI_Type_vector(D3 - 2, D1 - 2, D1 * D2, MPI_DOUBLE, &sd->type);
			base = 1 + (long)D1 * ((i == 0 ? D2 - 2 : D2 - 1) + (long)D2 * 1);
			k->blocks = D3 - 2;
		} else {
			MPI_Type_vector(D2 - 2, D1 - 2, D1, MPI_DOUBLE, &sd->type);
			base = 1 + (long)D1 * (1 + (long)D2 * (i == 0 ? 1 : 0));
			k->blocks = D2 - 2;
		}
		sd->buf = a + base;
		commit(&sd->type);
		sd->count = 1;
	}
}

/* ---- WRF (x_vec / y_vec) ------------------------------------------------------------------ */
static void mk_wrf(struct kase *k, const char *tag, int ims, int ime, int jms, int jme, int is,
		   int ie, int js, int je)
{
	snprintf(k->name, sizeof(k->name), "wrf-%s", tag);
	int d1 = ime - ims + 1, d2 = 65, d3 = jme - jms + 1;
	int s1 = ie - is + 1, s2 = 65, s3 = je - js + 1;
	int i0 = is - ims, k0 = 0, j0 = js - jms;
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		MPI_Datatype t2d, t3in, t3d, t4d, types[9];
		MPI_Aint disp[9];
		int bl[9];
		MPI_Type_vector(s3, s1, d1, MPI_FLOAT, &t2d);
		MPI_Type_vector(s2, s1, d1, MPI_FLOAT, &t3in);
		MPI_Type_create_hvector(s3, 1, (MPI_Aint)4 * d1 * d2, t3in, &t3d);
		MPI_Type_create_hvector(1, 1, (MPI_Aint)4 * d1 * d2 * d3, t3d, &t4d);
		for (int a = 0; a < 9; a++) {
			size_t n;
			long off;
			if (a < 4) {
				n = (size_t)4 * d1 * d3;
				off = 4L * (i0 + (long)d1 * j0);
				types[a] = t2d;
			} else if (a < 7) {
				n = (size_t)4 * d1 * d2 * d3;
				off = 4L * (i0 + (long)d1 * (k0 + (long)d2 * j0));
				types[a] = t3d;
			} else {
				n = (size_t)4 * d1 * d2 * d3 * 2;
				off = 4L * (i0 + (long)d1 * (k0 + (long)d2 * j0)) + 4L * d1 * d2 * d3 * 1;
				types[a] = t3d;
			}
			char *p = side_alloc(sd, n);
			MPI_Get_address(p + off, &disp[a]);
			bl[a] = 1;
		}
		MPI_Type_create_struct(9, bl, disp, types, &sd->type);
		MPI_Type_free(&t2d);
		MPI_Type_free(&t3in);
		MPI_Type_free(&t3d);
		MPI_Type_free(&t4d);
		commit(&sd->type);
		sd->buf = MPI_BOTTOM;
		sd->count = 1;
	}
	k->blocks = (long)s3 * (4 + 5L * s2);
}

/* ---- random index lists (SPECFEM3D oc/cm, LAMMPS) ------------------------------------------ */
static uint64_t rng_state;
static uint32_t rng(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33);
}
static int *random_list(int G, int L, uint64_t seed)
{
	int *all = malloc(sizeof(int) * G);
	rng_state = seed;
	for (int i = 0; i < G; i++)
		all[i] = i + 1;
	for (int i = 0; i < G; i++) {
		int j = (int)(rng() % (uint32_t)G);
		int t = all[i];
		all[i] = all[j];
		all[j] = t;
	}
	int *l = malloc(sizeof(int) * L);
	for (int i = 0; i < L; i++)
		l[i] = all[i] - 1;
	free(all);
	return l;
}

/* ---- SPECFEM3D mt / oc / cm --------------------------------------------------------------- */
static void mk_specfem_mt(struct kase *k, int D1, int D2, int D3)
{
	snprintf(k->name, sizeof(k->name), "specfem3d_mt-%d.%d.%d", D1, D2, D3);
	MPI_Datatype c;
	k->s.buf = side_alloc(&k->s, (size_t)4 * D1 * D2 * D3);
	MPI_Type_contiguous(D1, MPI_FLOAT, &c);
	MPI_Type_vector(D3, 1, D2, c, &k->s.type);
	MPI_Type_free(&c);
	commit(&k->s.type);
	k->s.count = 1;
	k->r.buf = side_alloc(&k->r, (size_t)4 * D1 * D3);
	MPI_Type_contiguous(D1 * D3, MPI_FLOAT, &k->r.type);
	commit(&k->r.type);
	k->r.count = 1;
	k->blocks = D3;
}

static void mk_specfem_oc(struct kase *k, int G, int L)
{
	snprintf(k->name, sizeof(k->name), "specfem3d_oc-%d.%d", G, L);
	int *p = random_list(G, L, 1234567);
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		sd->buf = side_alloc(sd, (size_t)4 * G);
		MPI_Type_create_indexed_block(L, 1, p, MPI_FLOAT, &sd->type);
		commit(&sd->type);
		sd->count = 1;
	}
	free(p);
	k->blocks = L;
}

static void mk_specfem_cm(struct kase *k, int Gcm, int Gic, int Lcm, int Lic)
{
	snprintf(k->name, sizeof(k->name), "specfem3d_cm-%d.%d", Lcm, Lic);
	int *p = random_list(Gcm, Lcm, 7654321), *q = random_list(Gic, Lic, 1111111);
	for (int j = 0; j < Lcm; j++)
		p[j] *= 3;
	for (int j = 0; j < Lic; j++)
		q[j] *= 3;
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		float *cm = side_alloc(sd, (size_t)12 * Gcm), *ic = side_alloc(sd, (size_t)12 * Gic);
		MPI_Datatype t[2];
		MPI_Type_create_indexed_block(Lcm, 3, p, MPI_FLOAT, &t[0]);
		MPI_Type_create_indexed_block(Lic, 3, q, MPI_FLOAT, &t[1]);
		MPI_Aint d[2];
		int bl[2] = { 1, 1 };
		MPI_Get_address(cm, &d[0]);
		MPI_Get_address(ic, &d[1]);
		MPI_Type_create_struct(2, bl, d, t, &sd->type);
		MPI_Type_free(&t[0]);
		MPI_Type_free(&t[1]);
		commit(&sd->type);
		sd->buf = MPI_BOTTOM;
		sd->count = 1;
	}
	free(p);
	free(q);
	k->blocks = Lcm + Lic;
}

/* ---- LAMMPS full / atomic ----------------------------------------------------------------- */
static void mk_lammps(struct kase *k, int full, int G, int L)
{
	snprintf(k->name, sizeof(k->name), "lammps_%s-%d.%d", full ? "full" : "atomic", G, L);
	int A = full ? 6 : 4;
	int *p = random_list(G, L, 424242), *p3 = malloc(sizeof(int) * L);
	for (int j = 0; j < L; j++)
		p3[j] = 3 * p[j];
	/* send: struct of indexed_blocks over the A arrays */
	{
		struct side *sd = &k->s;
		MPI_Datatype t[6];
		MPI_Aint d[6];
		int bl[6];
		for (int a = 0; a < A; a++) {
			char *arr = side_alloc(sd, (size_t)(a == 0 ? 24 : 8) * (G + L));
			if (a == 0)
				MPI_Type_create_indexed_block(L, 3, p3, MPI_DOUBLE, &t[a]);
			else
				MPI_Type_create_indexed_block(L, 1, p, MPI_DOUBLE, &t[a]);
			MPI_Get_address(arr, &d[a]);
			bl[a] = 1;
		}
		MPI_Type_create_struct(A, bl, d, t, &sd->type);
		for (int a = 0; a < A; a++)
			MPI_Type_free(&t[a]);
		commit(&sd->type);
		sd->buf = MPI_BOTTOM;
		sd->count = 1;
	}
	/* receive: the contiguous tails of the same arrays */
	{
		struct side *sd = &k->r;
		MPI_Datatype t[6];
		MPI_Aint d[6];
		int bl[6];
		for (int a = 0; a < A; a++) {
			size_t el = a == 0 ? 24 : 8;
			char *arr = side_alloc(sd, el * (G + L));
			MPI_Type_contiguous(a == 0 ? 3 * L : L, MPI_DOUBLE, &t[a]);
			MPI_Get_address(arr + el * G, &d[a]);
			bl[a] = 1;
		}
		MPI_Type_create_struct(A, bl, d, t, &sd->type);
		for (int a = 0; a < A; a++)
			MPI_Type_free(&t[a]);
		commit(&sd->type);
		sd->buf = MPI_BOTTOM;
		sd->count = 1;
	}
	free(p);
	free(p3);
	k->blocks = (long)A * L;
}

/* ---- SGRS columns of an M x 4096 int array ------------------------------------------------ */
static void mk_sgrs(struct kase *k, int M, int cols)
{
	snprintf(k->name, sizeof(k->name), "sgrs-col-%dx%d", M, cols);
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		sd->buf = side_alloc(sd, (size_t)4 * 4096 * M);
		MPI_Type_vector(M, cols, 4096, MPI_INT, &sd->type);
		commit(&sd->type);
		sd->count = 1;
	}
	k->blocks = M;
}

/* ---- SW4Lite (block counts/sizes of the paper; stride assumed twice the block) -------------- */
static void mk_sw4(struct kase *k, const char *tag, long nb, long B)
{
	mk_vector(k, B, nb, 2 * B);
	snprintf(k->name, sizeof(k->name), "sw4lite-%s", tag);
}

/* ---- dataloop-paper layouts --------------------------------------------------------------- */
static void mk_dl_vector(struct kase *k, long n)
{
	snprintf(k->name, sizeof(k->name), "dataloop-vec-%ldf-s2", n);
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		sd->buf = side_alloc(sd, (size_t)8 * n);
		MPI_Type_vector((int)n, 1, 2, MPI_FLOAT, &sd->type);
		commit(&sd->type);
		sd->count = 1;
	}
	k->blocks = n;
}

static void mk_cube_face(struct kase *k, const char *face, int N)
{
	snprintf(k->name, sizeof(k->name), "cube%d-%s", N, face);
	struct side *sds[2] = { &k->s, &k->r };
	for (int i = 0; i < 2; i++) {
		struct side *sd = sds[i];
		float *a = side_alloc(sd, (size_t)4 * N * N * N);
		/* x fastest: (x,y,z) -> x + N*(y + N*z); faces in the middle of the cube */
		if (!strcmp(face, "xy")) {
			MPI_Type_contiguous(N * N, MPI_FLOAT, &sd->type);
			sd->buf = a + (size_t)N * N * (N / 2);
			k->blocks = 1;
		} else if (!strcmp(face, "xz")) {
			MPI_Type_vector(N, N, N * N, MPI_FLOAT, &sd->type);
			sd->buf = a + (size_t)N * (N / 2);
			k->blocks = N;
		} else {
			MPI_Type_vector(N * N, 1, N, MPI_FLOAT, &sd->type);
			sd->buf = a + N / 2;
			k->blocks = (long)N * N;
		}
		commit(&sd->type);
		sd->count = 1;
	}
}

/* ---- FFT2D (alltoall transpose, P = 2) ---------------------------------------------------- */
static void mk_fft2d(struct kase *k, int N)
{
	int P = size;
	snprintf(k->name, sizeof(k->name), "fft2d-%d-p%d", N, P);
	k->alltoall = 1;
	N = N + N % P;
	int n = N / P;
	MPI_Datatype cplx, v, v1, v1r;
	MPI_Type_contiguous(2, MPI_DOUBLE, &cplx);
	k->s.buf = side_alloc(&k->s, (size_t)16 * N * n);
	MPI_Type_vector(n, n, N, cplx, &v);
	MPI_Type_create_resized(v, 0, (MPI_Aint)16 * n, &k->s.type);
	commit(&k->s.type);
	k->s.count = 1;
	k->r.buf = side_alloc(&k->r, (size_t)16 * N * n);
	MPI_Type_vector(n, 1, N, cplx, &v1);
	MPI_Type_create_resized(v1, 0, 16, &v1r);
	MPI_Type_contiguous(n, v1r, &k->r.type);
	commit(&k->r.type);
	k->r.count = 1;
	MPI_Type_free(&cplx);
	MPI_Type_free(&v);
	MPI_Type_free(&v1);
	MPI_Type_free(&v1r);
	k->blocks = n; /* blocks sent to each peer (bytes below are per peer too) */
}

/* ---- the case list ------------------------------------------------------------------------ */
#define MAXCASES 96
struct spec {
	const char *name;     /* filled in at build time for matching */
	int id;
	long a, b, c, d;
};

enum { K_VEC, K_MILC, K_LU, K_MGX, K_MGY, K_MGZ, K_WRFY, K_WRFX, K_SFMT, K_SFOC, K_SFCM,
       K_LMPF, K_LMPA, K_SGRS, K_SW4A, K_SW4B, K_DLV, K_CXY, K_CXZ, K_CYZ, K_FFT };

static struct spec specs[MAXCASES];
static int nspecs;

static void add(int id, long a, long b, long c, long d)
{
	if (nspecs < MAXCASES)
		specs[nspecs++] = (struct spec){ NULL, id, a, b, c, d };
}

static void default_cases(int quick)
{
	/* OSU-style vector sweep: 4 KiB x 32 is the headline case */
	static const long vb[] = { 64, 1024, 2048, 4096 };
	for (int i = 0; i < 4; i++)
		add(K_VEC, vb[i], 32, 0, 0);
	if (!quick) {
		add(K_VEC, 4096, 16, 0, 0);
		add(K_VEC, 4096, 64, 0, 0);
		add(K_VEC, 4096, 256, 0, 0);
		add(K_VEC, 64, 1024, 0, 0);
		add(K_VEC, 1024, 1024, 0, 0);
	}
	add(K_MILC, 16, 16, 16, 16);
	if (!quick)
		add(K_MILC, 32, 32, 32, 32);
	add(K_LU, 162, 0, 0, 0);
	add(K_MGX, 34, 18, 18, 0);
	add(K_MGY, 130, 66, 66, 0);
	if (!quick)
		add(K_MGZ, 258, 130, 130, 0);
	add(K_WRFY, 0, 0, 0, 0);
	add(K_WRFX, 0, 0, 0, 0);
	add(K_SFMT, 3, 2, 7600, 0);
	add(K_SFOC, 88881, 3225, 0, 0);
	if (!quick)
		add(K_SFCM, 0, 0, 0, 0);
	add(K_LMPF, 1, 3534, 3062, 0);
	add(K_LMPA, 0, 4084, 243, 0);
	add(K_SGRS, 64, 256, 0, 0);
	if (!quick)
		add(K_SGRS, 128, 1024, 0, 0);
	add(K_SW4A, 0, 0, 0, 0);
	add(K_SW4B, 0, 0, 0, 0);
	if (!quick) {
		add(K_DLV, 1048576, 0, 0, 0);
		add(K_CXY, 256, 0, 0, 0);
		add(K_CXZ, 256, 0, 0, 0);
		add(K_CYZ, 256, 0, 0, 0);
	}
	add(K_FFT, 256, 0, 0, 0);
}

static void build(struct spec *sp, struct kase *k)
{
	memset(k, 0, sizeof(*k));
	k->s.type = k->r.type = MPI_DATATYPE_NULL;
	switch (sp->id) {
	case K_VEC: mk_vector(k, sp->a, sp->b, sp->c); break;
	case K_MILC: mk_milc(k, (int)sp->a, (int)sp->b, (int)sp->c, (int)sp->d); break;
	case K_LU: mk_nas_lu_y(k, (int)sp->a); break;
	case K_MGX: mk_nas_mg(k, 'x', (int)sp->a, (int)sp->b, (int)sp->c); break;
	case K_MGY: mk_nas_mg(k, 'y', (int)sp->a, (int)sp->b, (int)sp->c); break;
	case K_MGZ: mk_nas_mg(k, 'z', (int)sp->a, (int)sp->b, (int)sp->c); break;
	case K_WRFY: mk_wrf(k, "y-2x2", -4, 27, 34, 85, 1, 23, 41, 43); break;
	case K_WRFX: mk_wrf(k, "x-2x2", -4, 27, 34, 85, 18, 20, 38, 81); break;
	case K_SFMT: mk_specfem_mt(k, (int)sp->a, (int)sp->b, (int)sp->c); break;
	case K_SFOC: mk_specfem_oc(k, (int)sp->a, (int)sp->b); break;
	case K_SFCM: mk_specfem_cm(k, 834917, 51153, 11797, 3009); break;
	case K_LMPF: mk_lammps(k, 1, (int)sp->b, (int)sp->c); break;
	case K_LMPA: mk_lammps(k, 0, (int)sp->b, (int)sp->c); break;
	case K_SGRS: mk_sgrs(k, (int)sp->a, (int)sp->b); break;
	case K_SW4A: mk_sw4(k, "55x5KB", 55, 5120); break;
	case K_SW4B: mk_sw4(k, "3000x48B", 3000, 48); break;
	case K_DLV: mk_dl_vector(k, sp->a); break;
	case K_CXY: mk_cube_face(k, "xy", (int)sp->a); break;
	case K_CXZ: mk_cube_face(k, "xz", (int)sp->a); break;
	case K_CYZ: mk_cube_face(k, "yz", (int)sp->a); break;
	case K_FFT: mk_fft2d(k, (int)sp->a); break;
	}
}

static int matches(const char *name, const char *patterns)
{
	if (!patterns)
		return 1;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", patterns);
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
		if (strstr(name, tok))
			return 1;
	return 0;
}

/* ---- timing ------------------------------------------------------------------------------- */
static void one_iter(struct kase *k)
{
	if (k->alltoall) {
		MPI_Alltoall(k->s.buf, k->s.count, k->s.type, k->r.buf, k->r.count, k->r.type,
			     MPI_COMM_WORLD);
		return;
	}
	if (rank == 0) {
		MPI_Send(k->s.buf, k->s.count, k->s.type, 1, 1, MPI_COMM_WORLD);
		MPI_Recv(k->r.buf, k->r.count, k->r.type, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else if (rank == 1) {
		MPI_Recv(k->r.buf, k->r.count, k->r.type, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(k->s.buf, k->s.count, k->s.type, 0, 1, MPI_COMM_WORLD);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Packs through a send to self: MPICH 4.0.2's MPI_Pack refuses MPI_BOTTOM as its input buffer,
 * which the absolute-address layouts (WRF, SPECFEM3D_cm, LAMMPS) need. */
static void pack_self(void *buf, int count, MPI_Datatype t, char *out, int outsz, int *pos)
{
	int sz;
	MPI_Type_size(t, &sz);
	MPI_Status st;
	MPI_Sendrecv(buf, count, t, 0, 77, out, outsz, MPI_BYTE, 0, 77, MPI_COMM_SELF, &st);
	*pos = sz * count;
}

/* Fill the send side with a pattern, do one exchange, compare packed streams. */
static int check(struct kase *k)
{
	for (int i = 0; i < k->s.nmem; i++) {
		unsigned char *p = k->s.mem[i];
		for (size_t j = 0; j < k->s.memsz[i]; j++)
			p[j] = (unsigned char)(j * 31 + i * 101 + rank * 7 + (j >> 10));
	}
	for (int i = 0; i < k->r.nmem; i++)
		memset(k->r.mem[i], 0, k->r.memsz[i]);
	int ssz, rsz, bad = 0;
	/* alltoall: the elements for/from every peer follow each other (resized extents) */
	int sc = k->s.count * (k->alltoall ? size : 1), rc = k->r.count * (k->alltoall ? size : 1);
	MPI_Pack_size(sc, k->s.type, MPI_COMM_SELF, &ssz);
	MPI_Pack_size(rc, k->r.type, MPI_COMM_SELF, &rsz);
	char *sp = malloc(ssz), *rp = malloc(rsz), *peer = malloc(ssz);
	int spos = 0, rpos = 0;
	pack_self(k->s.buf, sc, k->s.type, sp, ssz, &spos);
	one_iter(k);
	pack_self(k->r.buf, rc, k->r.type, rp, rsz, &rpos);
	if (k->alltoall) {
		/* my block for peer q went to q's block for me: exchange packed halves */
		MPI_Alltoall(sp, spos / size, MPI_BYTE, peer, spos / size, MPI_BYTE, MPI_COMM_WORLD);
		bad = rpos != spos || memcmp(rp, peer, rpos);
	} else if (rank < 2) {
		MPI_Sendrecv(sp, spos, MPI_BYTE, 1 - rank, 2, peer, ssz, MPI_BYTE, 1 - rank, 2,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		bad = rpos != spos || memcmp(rp, peer, rpos);
	}
	free(sp);
	free(rp);
	free(peer);
	int anybad;
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return !anybad;
}

int main(int argc, char **argv)
{
	const char *patterns = NULL, *label = "mpi";
	int batches = 7, quick = 0, list = 0;
	double min_batch = 20000e-6;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-cases") && i + 1 < argc)
			patterns = argv[++i];
		else if (!strcmp(argv[i], "-label") && i + 1 < argc)
			label = argv[++i];
		else if (!strcmp(argv[i], "-batches") && i + 1 < argc)
			batches = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-min-batch-us") && i + 1 < argc)
			min_batch = atof(argv[++i]) * 1e-6;
		else if (!strcmp(argv[i], "-quick"))
			quick = 1;
		else if (!strcmp(argv[i], "-list"))
			list = 1;
		else if (!strcmp(argv[i], "-vec") && i + 1 < argc) {
			char buf[512];
			snprintf(buf, sizeof(buf), "%s", argv[++i]);
			for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
				long B = 0, C = 0, S = 0;
				if (sscanf(tok, "%ld:%ld:%ld", &B, &C, &S) >= 2)
					add(K_VEC, B, C, S, 0);
			}
			if (!patterns)
				patterns = "vec-";
		}
	}
	if (size < 2) {
		fprintf(stderr, "mpi_nc_bench: needs 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (batches < 1)
		batches = 1;
	if (batches > 64)
		batches = 64;
	if (nspecs == 0 || patterns == NULL || strcmp(patterns, "vec-"))
		default_cases(quick);
	int failures = 0;
	for (int c = 0; c < nspecs; c++) {
		struct kase k;
		build(&specs[c], &k);
		if (!matches(k.name, patterns)) {
			side_free(&k.s);
			side_free(&k.r);
			continue;
		}
		/* skip duplicates (e.g. -vec repeating a default) */
		int dup = 0;
		for (int d = 0; d < c; d++)
			if (specs[d].id == specs[c].id && specs[d].a == specs[c].a &&
			    specs[d].b == specs[c].b && specs[d].c == specs[c].c && specs[d].d == specs[c].d)
				dup = 1;
		if (dup) {
			side_free(&k.s);
			side_free(&k.r);
			continue;
		}
		int tsize;
		MPI_Type_size(k.s.type, &tsize);
		long bytes = (long)tsize * k.s.count;
		if (list) {
			if (rank == 0)
				printf("%-28s blocks %-8ld bytes %ld\n", k.name, k.blocks, bytes);
			side_free(&k.s);
			side_free(&k.r);
			continue;
		}
		int ok = check(&k);
		failures += !ok;
		/* warm-up and calibration: iterations per batch so that a batch lasts min_batch */
		int iters = 1;
		for (;;) {
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			for (int it = 0; it < iters; it++)
				one_iter(&k);
			double dt = MPI_Wtime() - t0;
			MPI_Bcast(&dt, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
			if (dt >= min_batch / 2 || iters >= (1 << 20))
				break;
			iters *= dt < min_batch / 64 ? 8 : 2;
		}
		double t[64];
		for (int b = 0; b < batches; b++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			for (int it = 0; it < iters; it++)
				one_iter(&k);
			t[b] = (MPI_Wtime() - t0) / iters;
			MPI_Bcast(&t[b], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		}
		qsort(t, batches, sizeof(double), cmp_double);
		double med = t[batches / 2], mn = t[0];
		if (!k.alltoall) {
			med /= 2;
			mn /= 2;
		}
		if (rank == 0) {
			printf("RESULT stack=%s case=%s kind=%s blocks=%ld bytes=%ld avg_block=%.1f "
			       "lat_us=%.3f min_us=%.3f iters=%d check=%s\n",
			       label, k.name, specs[c].id == K_VEC ? "vector" : "app", k.blocks, bytes,
			       k.blocks ? (double)bytes / k.blocks : 0.0,
			       med * 1e6, mn * 1e6, iters, ok ? "ok" : "FAIL");
			fflush(stdout);
		}
		side_free(&k.s);
		side_free(&k.r);
	}
	MPI_Finalize();
	return failures ? 1 : 0;
}
