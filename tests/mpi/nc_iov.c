/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nc_iov: noncontiguous MPI messages of a chosen number of pieces, checked byte for byte.
 *
 *   mpiexec -n 2 nc_iov [-pieces 2,4,8,16,32] [-blocks 8,64,1024,4096,16384] [-iters N]
 *
 * For every (pieces P, block length B) rank 0 sends P blocks of B bytes (MPI_Type_vector with
 * stride 2B, then an hindexed type of unequal blocks adding up to the same bytes), rank 1
 * receives them into a differently strided type (P blocks at stride B + 40), then the roles
 * swap.  Canaries between the blocks are checked too.  MPICH ch4:ofi hands a noncontiguous
 * buffer of at most 32 pieces to the provider as one iov list (fi_tsendmsg / fi_trecvmsg); with
 * ddtx and FI_DDTX_STATS=1 the domain statistics printed at MPI_Finalize show iov_entries_max,
 * which util/run-mpi-tests.sh checks: 32 for 32 pieces, no more than a few for 33 or more
 * (MPICH packs those itself).
 *
 * Prints "nc_iov: N messages checked, F failed" on rank 0; exit status 1 on a failure.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_list(const char *s, long *out, int max)
{
	int n = 0;
	while (*s && n < max) {
		char *end;
		out[n++] = strtol(s, &end, 0);
		s = *end == ',' ? end + 1 : end;
		if (end == s && *s)
			break;
	}
	return n;
}

static unsigned char val(long i, int seed) { return (unsigned char)(i * 29 + seed * 7 + (i >> 7)); }

int main(int argc, char **argv)
{
	long pieces[64] = { 2, 4, 8, 16, 31, 32 }, blocks[64] = { 8, 64, 1024, 4096, 16384 };
	int npieces = 6, nblocks = 5, iters = 3;
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-pieces") && i + 1 < argc)
			npieces = parse_list(argv[++i], pieces, 64);
		else if (!strcmp(argv[i], "-blocks") && i + 1 < argc)
			nblocks = parse_list(argv[++i], blocks, 64);
		else if (!strcmp(argv[i], "-iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
	}
	if (size < 2) {
		fprintf(stderr, "nc_iov: needs 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long checked = 0, failed = 0;
	if (rank < 2) {
		int peer = 1 - rank;
		for (int pi = 0; pi < npieces; pi++)
			for (int bi = 0; bi < nblocks; bi++) {
				int P = (int)pieces[pi];
				long B = blocks[bi];
				long sstride = 2 * B, rstride = B + 40;
				size_t sspan = (size_t)sstride * P, rspan = (size_t)rstride * P + 64;
				unsigned char *sb = malloc(sspan), *rb = malloc(rspan);
				MPI_Datatype stype[2], rtype;
				MPI_Type_vector(P, (int)B, (int)sstride, MPI_BYTE, &stype[0]);
				/* unequal pieces with the same total: B/2, 3B/2, B/2, 3B/2, ... (P even) or
				 * B for all when P is odd */
				int *bl = malloc(P * sizeof(int));
				MPI_Aint *dp = malloc(P * sizeof(MPI_Aint));
				MPI_Aint off = 0;
				for (int k = 0; k < P; k++) {
					bl[k] = (P % 2 == 0 && B >= 2) ? (int)(k % 2 ? B + B / 2 : B - B / 2) : (int)B;
					dp[k] = off;
					off += bl[k] + 16;
				}
				MPI_Type_create_hindexed(P, bl, dp, MPI_BYTE, &stype[1]);
				MPI_Type_vector(P, (int)B, (int)rstride, MPI_BYTE, &rtype);
				MPI_Type_commit(&stype[0]);
				MPI_Type_commit(&stype[1]);
				MPI_Type_commit(&rtype);
				unsigned char *sb1 = malloc(off + 16);
				for (int v = 0; v < 2; v++)
					for (int it = 0; it < iters; it++) {
						int seed = pi * 1000 + bi * 10 + it + v * 7;
						/* sender buffers: the stream value of stream byte j is val(j) */
						long j = 0;
						if (v == 0) {
							memset(sb, 0x5A, sspan);
							for (int k = 0; k < P; k++)
								for (long b = 0; b < B; b++)
									sb[k * sstride + b] = val(j++, seed + rank);
						} else {
							memset(sb1, 0x5A, off + 16);
							for (int k = 0; k < P; k++)
								for (long b = 0; b < bl[k]; b++)
									sb1[dp[k] + b] = val(j++, seed + rank);
						}
						memset(rb, 0xC3, rspan);
						MPI_Status st;
						int tag = pi * 100 + bi;
						MPI_Sendrecv(v == 0 ? sb : sb1, 1, stype[v], peer, tag, rb, 1, rtype, peer,
							     tag, MPI_COMM_WORLD, &st);
						int ok = 1;
						j = 0;
						for (int k = 0; k < P && ok; k++) {
							for (long b = 0; b < B; b++)
								if (rb[k * rstride + b] != val(j++, seed + peer)) {
									ok = 0;
									fprintf(stderr,
										"nc_iov: rank %d: %d x %ld B (%s): piece %d byte %ld wrong\n",
										rank, P, B, v ? "hindexed" : "vector", k, b);
									break;
								}
							for (long b = B; ok && b < rstride; b++)
								if (rb[k * rstride + b] != 0xC3) {
									ok = 0;
									fprintf(stderr, "nc_iov: rank %d: %d x %ld B: canary after piece %d overwritten\n",
										rank, P, B, k);
								}
						}
						checked++;
						failed += !ok;
					}
				free(sb1);
				free(bl);
				free(dp);
				MPI_Type_free(&stype[0]);
				MPI_Type_free(&stype[1]);
				MPI_Type_free(&rtype);
				free(sb);
				free(rb);
			}
	}
	long tot[2] = { checked, failed }, all[2];
	MPI_Reduce(tot, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("nc_iov: %ld messages checked, %ld failed (pieces", all[0], all[1]);
	for (int i = 0; rank == 0 && i < npieces; i++)
		printf("%s%ld", i ? "," : " ", pieces[i]);
	if (rank == 0) {
		printf("; blocks");
		for (int i = 0; i < nblocks; i++)
			printf("%s%ld", i ? "," : " ", blocks[i]);
		printf(")\n");
		fflush(stdout);
	}
	MPI_Finalize();
	return rank == 0 && all[1] ? 1 : 0;
}
