/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nc_crossover: the crossover map of the LAH paper on this machine.
 *
 * For every block length B (default 64 B to 64 KiB, powers of 4) and every layout reuse r
 * (default 1, 10, 100, 1000), two fresh processes move `size` bytes (default 1 MiB) per transfer
 * as size/B blocks of B bytes, stride 2B, on both sides, once per scheme (FI_DDTX_SCHEME = pack,
 * sgl, umr and auto).  Reuse r: the same buffers (same layout at the same address) are sent r
 * times in a row, then both sides move to fresh buffers at new addresses, so the layout and
 * registration caches miss once per r transfers (see nc_common.h for the loop).
 *
 * Printed per cell: time per transfer of each scheme, the winning fixed scheme and its margin
 * (second-best fixed time / best), and auto's time relative to the best fixed scheme (target of
 * the engine issue: within 5%).  --json writes every figure; util/plot_crossover.py draws the
 * heat maps.  Never fails on a timing, only on bad options or wrong data.
 */
#include "nc_common.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_B 16
#define MAX_R 16
#define MAX_S 8

struct cell_cfg {
	size_t block, count, stride;
	const char *scheme;
	struct nc_loop_cfg loop;
	bool pin;
};

struct cell_res {
	int status;
	char err[256];
	double t;                  /* seconds per transfer (median or min over repeats, --stat) */
	double t_med, t_min;
	double runs[100];
	int nruns;
	double t_first, t_rest;
	long groups, transfers;
	bool extrapolated;
	char used[64];
	struct fi_ddtx_stats rx, tx;
	size_t msgs;
};

static int rank_main(struct ft_ctx *ctx, void *varg)
{
	const struct cell_cfg *c = ((void **)varg)[0];
	struct nc_loop_shared *sh = ((void **)varg)[1];
	struct nc_fab f;
	if (nc_rank_open(ctx, c->pin, c->scheme, &f, sh->err, sizeof(sh->err))) {
		sh->status = 1;
		return 1;
	}
	struct nc_layout l;
	nc_layout_strided(&l, c->block, c->count, c->stride);
	int rc = nc_loop(ctx, &f, &l, 1, &c->loop, sh);
	nc_layout_free(&l);
	ft_barrier(ctx);
	nc_fab_close(&f);
	return rc;
}

static void usage(const char *prog)
{
	printf("Usage: %s [options]\n"
	       "Crossover map: time per transfer of every ddtx scheme for block length x layout\n"
	       "reuse, two processes, fresh buffers at new addresses every `reuse` transfers.\n\n"
	       "  -b, --blocks LIST     block lengths (default 64,256,1K,4K,16K,64K)\n"
	       "  -r, --reuse LIST      transfers per buffer/layout (default 1,10,100,1000)\n"
	       "  -s, --size BYTES      payload per transfer (default 1M)\n"
	       "  -c, --schemes LIST    of pack,sgl,umr,auto (default all four)\n"
	       "  -t, --time SEC        timed seconds per cell at least (default 0.3)\n"
	       "      --max-group SEC   a group projected longer than this is cut after 20+20\n"
	       "                        transfers and extrapolated from the last 20 (default 1.5;\n"
	       "                        0: never)\n"
	       "      --stride-factor F stride = F x block (default 2)\n"
	       "      --repeat N        run every cell N times (default 1)\n"
	       "      --stat median|min statistic over the repeats (default median; min is the\n"
	       "                        figure least disturbed by other work on the machine)\n"
	       "      --json FILE       write every figure as JSON\n"
	       "      --no-pin          do not pin the two processes to different CPUs\n"
	       "  -h, --help\n",
	       prog);
}

static const char *status_name(int st)
{
	return st == 0 ? "ok" : st == 2 ? "data-mismatch" : st == FT_SKIP ? "skipped" : "error";
}

static void json_stats(FILE *f, const char *name, const struct fi_ddtx_stats *s)
{
	fprintf(f, "\"%s\": {\"layout_hits\": %llu, \"layout_misses\": %llu, \"reg_hits\": %llu, "
		   "\"reg_misses\": %llu, \"mkey_hits\": %llu, \"mkey_misses\": %llu, "
		   "\"rmkey_hits\": %llu, \"rmkey_misses\": %llu, \"regthread_layouts\": %llu, "
		   "\"zcopy_not_ready\": %llu, \"umr_fallbacks\": %llu, \"explorations\": %llu, "
		   "\"learned_threshold\": %llu}",
		name, (unsigned long long)s->layout_hits, (unsigned long long)s->layout_misses,
		(unsigned long long)s->reg_hits, (unsigned long long)s->reg_misses,
		(unsigned long long)s->mkey_hits, (unsigned long long)s->mkey_misses,
		(unsigned long long)s->rmkey_hits, (unsigned long long)s->rmkey_misses,
		(unsigned long long)s->regthread_layouts, (unsigned long long)s->zcopy_not_ready,
		(unsigned long long)s->umr_fallbacks, (unsigned long long)s->explorations,
		(unsigned long long)s->learned_threshold);
}

/* One cell's configuration: block length, scheme, reuse and the timing loop's limits. */
static struct cell_cfg cell_config(size_t block, size_t size, const char *scheme, bool pin,
				   double stride_factor, size_t reuse, double tmin, double max_group,
				   int b, int r)
{
	struct cell_cfg c = {.block = block, .count = size / block, .scheme = scheme, .pin = pin};
	c.stride = (size_t)(stride_factor * (double)block);
	if (c.stride < c.block)
		c.stride = c.block;
	int ru = (int)reuse;
	c.loop = (struct nc_loop_cfg){
		.reuse = ru, .min_s = tmin,
		.min_groups = ru <= 10 ? 5 : ru <= 100 ? 2 : 1,
		.max_groups = 100000, .max_group_s = max_group, .head = 20,
		.sample = 20, .warmup_groups = 2, .warmup_len = 3,
		.seed = (uint64_t)(b * 1000 + r * 10 + 1)};
	return c;
}

int main(int argc, char **argv)
{
	size_t blocks[MAX_B], reuses[MAX_R], size = 1u << 20;
	int nb, nr;
	bool ok = true, pin = true;
	double tmin = 0.3, max_group = 1.5, stride_factor = 2;
	int repeat = 1;
	const char *json = NULL;
	char blocks_s[256] = "64,256,1K,4K,16K,64K", reuse_s[256] = "1,10,100,1000",
	     schemes_s[256] = "pack,sgl,umr,auto";

	enum { O_JSON = 256, O_NOPIN, O_MAXG, O_SF, O_REP, O_STAT };
	bool use_min = false;
	static const struct option lopts[] = {
		{"blocks", required_argument, NULL, 'b'}, {"reuse", required_argument, NULL, 'r'},
		{"size", required_argument, NULL, 's'},   {"schemes", required_argument, NULL, 'c'},
		{"time", required_argument, NULL, 't'},   {"max-group", required_argument, NULL, O_MAXG},
		{"stride-factor", required_argument, NULL, O_SF},
		{"repeat", required_argument, NULL, O_REP}, {"json", required_argument, NULL, O_JSON},
		{"stat", required_argument, NULL, O_STAT},
		{"no-pin", no_argument, NULL, O_NOPIN},   {"help", no_argument, NULL, 'h'},
		{0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "b:r:s:c:t:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'b': snprintf(blocks_s, sizeof(blocks_s), "%s", optarg); break;
		case 'r': snprintf(reuse_s, sizeof(reuse_s), "%s", optarg); break;
		case 's': size = nc_parse_size(optarg, &ok); break;
		case 'c': snprintf(schemes_s, sizeof(schemes_s), "%s", optarg); break;
		case 't': tmin = atof(optarg); ok &= tmin >= 0; break;
		case O_MAXG: max_group = atof(optarg); ok &= max_group >= 0; break;
		case O_SF: stride_factor = atof(optarg); ok &= stride_factor >= 1; break;
		case O_REP: repeat = atoi(optarg); ok &= repeat > 0 && repeat < 100; break;
		case O_JSON: json = optarg; break;
		case O_NOPIN: pin = false; break;
		case O_STAT:
			use_min = !strcmp(optarg, "min");
			ok &= use_min || !strcmp(optarg, "median");
			break;
		case 'h': usage(argv[0]); return 0;
		default: ok = false;
		}
	}
	nb = nc_parse_sizes(blocks_s, blocks, MAX_B, &ok);
	nr = nc_parse_sizes(reuse_s, reuses, MAX_R, &ok);
	char *schemes[MAX_S], sbuf[256];
	snprintf(sbuf, sizeof(sbuf), "%s", schemes_s);
	int ns = 0;
	for (char *tok = strtok(sbuf, ","); tok && ns < MAX_S; tok = strtok(NULL, ","))
		schemes[ns++] = tok;
	for (int b = 0; b < nb; b++)
		ok &= blocks[b] > 0 && blocks[b] <= size;
	for (int r = 0; r < nr; r++)
		ok &= reuses[r] > 0 && reuses[r] <= 100000;
	if (!ok || optind < argc || !nb || !nr || !ns) {
		fprintf(stderr, "nc_crossover: bad arguments (see --help)\n");
		return 2;
	}
	struct nc_loop_shared *sh = nc_bench_start(sizeof(*sh));
	if (!sh)
		return 1;
	static struct cell_res res[MAX_B][MAX_R][MAX_S];
	int auto_idx = -1;
	for (int s = 0; s < ns; s++)
		if (!strcmp(schemes[s], "auto"))
			auto_idx = s;

	char sz[16];
	nc_fmt_bytes(sz, sizeof(sz), size);
	printf("nc_crossover: %s per transfer, stride %.3g x block, %ld CPUs, FI_PROVIDER_PATH=%s\n",
	       sz, stride_factor, sysconf(_SC_NPROCESSORS_ONLN),
	       getenv("FI_PROVIDER_PATH") ? getenv("FI_PROVIDER_PATH") : "(unset)");
	printf("time = microseconds per transfer (post -> receiver's acknowledgement), mean over "
	       "groups of `reuse` transfers, fresh buffers per group%s%d run(s) per cell\n",
	       repeat > 1 ? (use_min ? ", minimum of " : ", median of ") : ", ", repeat);
	int bad_data = 0, errors = 0;
	double t_start = ft_now();
	for (int b = 0; b < nb; b++) {
		char bs[16];
		nc_fmt_bytes(bs, sizeof(bs), blocks[b]);
		printf("\n# block %s: %zu blocks per transfer\n", bs, size / blocks[b]);
		printf("%6s", "reuse");
		for (int s = 0; s < ns; s++)
			printf(" %10s", schemes[s]);
		printf("  %-6s %7s %9s  %s\n", "winner", "margin", "auto/best", "auto moved by");
		for (int r = 0; r < nr; r++) {
			/* Repeats go round the schemes (pack, sgl, ..., pack, sgl, ...) rather than
			 * one scheme at a time, so that drift on the host hits all of them alike. */
			double ts[MAX_S][100];
			int nts[MAX_S] = {0};
			for (int rep = 0; rep < repeat; rep++) {
				for (int s = 0; s < ns; s++) {
					struct cell_res *cr = &res[b][r][s];
					if (cr->status)
						continue;
					struct cell_cfg c = cell_config(blocks[b], size, schemes[s],
									pin, stride_factor,
									reuses[r], tmin, max_group,
									b, r);
					memset(sh, 0, sizeof(*sh));
					void *arg[2] = {&c, sh};
					int rc = ft_spawn(2, 600, rank_main, arg);
					if (rc && !sh->status)
						sh->status = rc;
					if (sh->status) {
						cr->status = sh->status;
						snprintf(cr->err, sizeof(cr->err), "%s",
							 sh->err[0] ? sh->err : "failed (see stderr)");
						continue;
					}
					ts[s][nts[s]++] = sh->t_xfer;
					cr->t_first = sh->t_first;
					cr->t_rest = sh->t_rest;
					cr->groups = sh->groups;
					cr->transfers = sh->transfers;
					cr->extrapolated |= sh->extrapolated;
					snprintf(cr->used, sizeof(cr->used), "%s", sh->used);
					cr->tx = sh->delta[0];
					cr->rx = sh->delta[1];
				}
			}
			for (int s = 0; s < ns; s++) {
				struct cell_res *cr = &res[b][r][s];
				if (!cr->status) {
					memcpy(cr->runs, ts[s], sizeof(double) * (size_t)nts[s]);
					cr->nruns = nts[s];
					cr->t_med = nc_median(ts[s], nts[s]); /* sorts ts */
					cr->t_min = ts[s][0];
					cr->t = use_min ? cr->t_min : cr->t_med;
				}
				if (cr->status == 2)
					bad_data++;
				else if (cr->status)
					errors++;
			}
			/* Row: times, winner among the fixed schemes, auto relative to it. */
			printf("%6zu", reuses[r]);
			int best = -1, second = -1;
			for (int s = 0; s < ns; s++) {
				struct cell_res *cr = &res[b][r][s];
				if (cr->status)
					printf(" %10s", cr->status == 2 ? "BADDATA" : "ERROR");
				else
					printf(" %9.1f%s", cr->t * 1e6, cr->extrapolated ? "~" : " ");
				if (s == auto_idx || cr->status)
					continue;
				if (best < 0 || cr->t < res[b][r][best].t) {
					second = best;
					best = s;
				} else if (second < 0 || cr->t < res[b][r][second].t) {
					second = s;
				}
			}
			if (best >= 0) {
				double margin = second >= 0 ? res[b][r][second].t / res[b][r][best].t : 0;
				printf("  %-6s %6.2fx", schemes[best], margin);
			} else {
				printf("  %-6s %7s", "-", "-");
			}
			if (auto_idx >= 0 && best >= 0 && !res[b][r][auto_idx].status)
				printf(" %9.3f  %s", res[b][r][auto_idx].t / res[b][r][best].t,
				       res[b][r][auto_idx].used);
			printf("\n");
			for (int s = 0; s < ns; s++)
				if (res[b][r][s].status)
					printf("   %s: %s\n", schemes[s], res[b][r][s].err);
		}
	}
	double elapsed = ft_now() - t_start;

	/* The map, and auto against the best fixed scheme (issue 3, benchmark b). */
	printf("\n# crossover map: winning fixed scheme and margin over the second best\n%8s",
	       "block");
	for (int r = 0; r < nr; r++)
		printf("  reuse %-6zu", reuses[r]);
	printf("\n");
	int cells = 0, within = 0;
	double worst = 0;
	for (int b = 0; b < nb; b++) {
		char bs[16];
		nc_fmt_bytes(bs, sizeof(bs), blocks[b]);
		printf("%8s", bs);
		for (int r = 0; r < nr; r++) {
			int best = -1;
			double second = 0;
			for (int s = 0; s < ns; s++) {
				struct cell_res *cr = &res[b][r][s];
				if (s == auto_idx || cr->status)
					continue;
				if (best < 0 || cr->t < res[b][r][best].t) {
					if (best >= 0)
						second = res[b][r][best].t;
					best = s;
				} else if (!second || cr->t < second) {
					second = cr->t;
				}
			}
			char cell[32] = "-";
			if (best >= 0)
				snprintf(cell, sizeof(cell), "%s %.2fx", schemes[best],
					 second ? second / res[b][r][best].t : 0);
			printf("  %-12s", cell);
			if (best >= 0 && auto_idx >= 0 && !res[b][r][auto_idx].status) {
				double q = res[b][r][auto_idx].t / res[b][r][best].t;
				cells++;
				within += q <= 1.05;
				if (q > worst)
					worst = q;
			}
		}
		printf("\n");
	}
	if (auto_idx >= 0) {
		printf("\n# auto / best fixed scheme (target <= 1.05 in every cell)\n%8s", "block");
		for (int r = 0; r < nr; r++)
			printf("  reuse %-6zu", reuses[r]);
		printf("\n");
		for (int b = 0; b < nb; b++) {
			char bs[16];
			nc_fmt_bytes(bs, sizeof(bs), blocks[b]);
			printf("%8s", bs);
			for (int r = 0; r < nr; r++) {
				double bt = 0;
				for (int s = 0; s < ns; s++)
					if (s != auto_idx && !res[b][r][s].status &&
					    (!bt || res[b][r][s].t < bt))
						bt = res[b][r][s].t;
				char cell[32] = "-";
				if (bt > 0 && !res[b][r][auto_idx].status) {
					double q = res[b][r][auto_idx].t / bt;
					snprintf(cell, sizeof(cell), "%.3f%s", q, q <= 1.05 ? "" : " MISS");
				}
				printf("  %-12s", cell);
			}
			printf("\n");
		}
		printf("auto within 5%% of the best fixed scheme in %d of %d cells (worst %.3f)\n",
		       within, cells, worst);
	}
	printf("map took %.0f s; '~' marks cells extrapolated from a cut group\n", elapsed);

	if (json) {
		FILE *f = fopen(json, "w");
		if (!f) {
			fprintf(stderr, "nc_crossover: cannot write %s: %s\n", json, strerror(errno));
			return 1;
		}
		fprintf(f, "{\n  \"benchmark\": \"nc_crossover\",\n  \"size\": %zu,\n"
			   "  \"stride_factor\": %g,\n  \"cpus\": %ld,\n  \"repeat\": %d,\n"
			   "  \"stat\": \"%s\",\n  \"seconds\": %.1f,\n  \"blocks\": [",
			size, stride_factor, sysconf(_SC_NPROCESSORS_ONLN), repeat,
			use_min ? "min" : "median", elapsed);
		for (int b = 0; b < nb; b++)
			fprintf(f, "%s%zu", b ? ", " : "", blocks[b]);
		fprintf(f, "],\n  \"reuse\": [");
		for (int r = 0; r < nr; r++)
			fprintf(f, "%s%zu", r ? ", " : "", reuses[r]);
		fprintf(f, "],\n  \"schemes\": [");
		for (int s = 0; s < ns; s++) {
			fprintf(f, "%s", s ? ", " : "");
			nc_json_str(f, schemes[s]);
		}
		fprintf(f, "],\n  \"cells\": [\n");
		bool firstc = true;
		for (int b = 0; b < nb; b++)
			for (int r = 0; r < nr; r++)
				for (int s = 0; s < ns; s++) {
					struct cell_res *cr = &res[b][r][s];
					fprintf(f, "%s    {\"block\": %zu, \"reuse\": %zu, \"scheme\": ",
						firstc ? "" : ",\n", blocks[b], reuses[r]);
					firstc = false;
					nc_json_str(f, schemes[s]);
					fprintf(f, ", \"status\": \"%s\"", status_name(cr->status));
					if (cr->status) {
						fprintf(f, ", \"error\": ");
						nc_json_str(f, cr->err);
						fprintf(f, "}");
						continue;
					}
					fprintf(f, ", \"time_us_median\": %.3f, \"time_us_min\": %.3f, "
						   "\"runs_us\": [",
						cr->t_med * 1e6, cr->t_min * 1e6);
					for (int x = 0; x < cr->nruns; x++)
						fprintf(f, "%s%.3f", x ? ", " : "", cr->runs[x] * 1e6);
					fprintf(f, "]");
					fprintf(f, ", \"time_us\": %.3f, \"first_us\": %.3f, "
						   "\"rest_us\": %.3f, \"gbps\": %.4f, \"groups\": %ld, "
						   "\"transfers\": %ld, \"extrapolated\": %s, \"moved_by\": ",
						cr->t * 1e6, cr->t_first * 1e6, cr->t_rest * 1e6,
						(double)size / cr->t / 1e9, cr->groups, cr->transfers,
						cr->extrapolated ? "true" : "false");
					nc_json_str(f, cr->used);
					fprintf(f, ", ");
					json_stats(f, "rx_stats", &cr->rx);
					fprintf(f, ", ");
					json_stats(f, "tx_stats", &cr->tx);
					fprintf(f, "}");
				}
		fprintf(f, "\n  ]\n}\n");
		fclose(f);
		printf("wrote %s\n", json);
	}
	munmap(sh, sizeof(*sh));
	if (bad_data)
		fprintf(stderr, "nc_crossover: %d cell(s) delivered wrong data\n", bad_data);
	if (errors)
		fprintf(stderr, "nc_crossover: %d cell(s) failed\n", errors);
	return bad_data ? 1 : 0;
}
