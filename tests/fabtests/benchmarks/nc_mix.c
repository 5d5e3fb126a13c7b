/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nc_mix: the adaptive scheme choice against every fixed scheme on workloads that mix
 * small-block and large-block layouts (benchmark b of the engine issue).
 *
 * A workload is a list of components, each a layout on the sender and one on the receiver; one
 * iteration sends every component once, in order, and ends with the receiver's acknowledgement
 * (nc_common.h).  The same buffers are reused for --reuse iterations, then both sides move to
 * fresh buffers at new addresses.  Each scheme (FI_DDTX_SCHEME = pack, sgl, umr, auto) runs in
 * its own pair of processes; every component is also timed alone, to show which scheme wins it.
 *
 * Workloads (LAYOUTS.md):
 *   mg    NAS_MG (1024,132,132): x face, 16900 blocks of 8 B (one per row), and y face,
 *         130 blocks of 8176 B; send and receive planes differ by one, as in the benchmark
 *   sw4   SW4Lite: 3000 blocks of 48 B, and 55 blocks of 5000 B (stride twice the block)
 *   lah   the crossover's extremes: 1024 blocks of 64 B and 64 blocks of 16 KiB
 *
 * With the iov lists of libfabric a layout longer than iov_limit is sent as several messages
 * (so MG's x face goes as messages of 8 KiB, under the eager limit); --handles describes each
 * layout once with the provider's layout handles (fi_ddtx.h) and sends it as one message.
 */
#include "nc_common.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_COMP 4

struct comp_def {
	const char *name;
	/* Fills off/len (n entries) of the sender (rank 0) or receiver (rank 1) side. */
	size_t (*make)(int rank, size_t *off, size_t *len, size_t max);
};

struct mix_def {
	const char *name;
	const char *desc;
	struct comp_def comps[MAX_COMP];
	int k;
};

/* NAS_MG faces (LAYOUTS.md section 3), D = (1024, 132, 132), doubles. */
enum { MG_D1 = 1024, MG_D2 = 132, MG_D3 = 132 };
static size_t mg_x(int rank, size_t *off, size_t *len, size_t max)
{
	size_t n = 0, X = rank == 0 ? MG_D1 - 2 : MG_D1 - 1;
	for (size_t k = 1; k <= MG_D3 - 2; k++)
		for (size_t j = 1; j <= MG_D2 - 2 && n < max; j++) {
			off[n] = 8 * (X + MG_D1 * (j + MG_D2 * k));
			len[n++] = 8;
		}
	return n;
}
static size_t mg_y(int rank, size_t *off, size_t *len, size_t max)
{
	size_t n = 0, Y = rank == 0 ? MG_D2 - 2 : MG_D2 - 1;
	for (size_t k = 1; k <= MG_D3 - 2 && n < max; k++) {
		off[n] = 8 * (1 + MG_D1 * (Y + MG_D2 * k));
		len[n++] = 8 * (MG_D1 - 2);
	}
	return n;
}
static size_t strided(size_t *off, size_t *len, size_t max, size_t block, size_t count,
		      size_t stride)
{
	size_t n = 0;
	for (; n < count && n < max; n++) {
		off[n] = n * stride;
		len[n] = block;
	}
	return n;
}
static size_t sw4_small(int rank, size_t *off, size_t *len, size_t max)
{
	return strided(off, len, max, 48, 3000, 96);
}
static size_t sw4_large(int rank, size_t *off, size_t *len, size_t max)
{
	return strided(off, len, max, 5000, 55, 10000);
}
static size_t lah_small(int rank, size_t *off, size_t *len, size_t max)
{
	return strided(off, len, max, 64, 1024, 128);
}
static size_t lah_large(int rank, size_t *off, size_t *len, size_t max)
{
	return strided(off, len, max, 16384, 64, 32768);
}

static const struct mix_def mixes[] = {
	{"mg", "NAS_MG 1024x132x132: x face 16900 x 8 B + y face 130 x 8176 B",
	 {{"x", mg_x}, {"y", mg_y}}, 2},
	{"sw4", "SW4Lite: 3000 x 48 B + 55 x 5000 B", {{"small", sw4_small}, {"large", sw4_large}},
	 2},
	{"lah", "1024 x 64 B + 64 x 16 KiB", {{"small", lah_small}, {"large", lah_large}}, 2},
};
#define NMIX (sizeof(mixes) / sizeof(mixes[0]))

static const char *scheme_names[] = {"pack", "sgl", "umr", "auto"};
#define NSCH 4

struct run_cfg {
	const struct mix_def *mix;
	int only;                  /* component index, or -1: the whole mix */
	const char *scheme;
	bool handles;
	bool pin;
	struct nc_loop_cfg loop;
};

struct run_res {
	int status;
	char err[256];
	double t;
	char used[64];
	bool handles;
	size_t msgs;
	struct fi_ddtx_stats rx, tx;
};

struct rank_shared {
	struct nc_loop_shared loop;
	bool handles;              /* rank 0: layouts went through handles */
	size_t msgs;
};

static int rank_main(struct ft_ctx *ctx, void *varg)
{
	const struct run_cfg *c = ((void **)varg)[0];
	struct rank_shared *sh = ((void **)varg)[1];
	struct nc_fab f;
	if (nc_rank_open(ctx, c->pin, c->scheme, &f, sh->loop.err, sizeof(sh->loop.err))) {
		sh->loop.status = 1;
		return 1;
	}
	struct nc_layout comps[MAX_COMP];
	int k = 0;
	size_t max = 1 << 20;
	size_t *off = malloc(max * sizeof(size_t)), *len = malloc(max * sizeof(size_t));
	FT_CHECK(off && len, "out of memory");
	bool handles = c->handles;
	for (int i = 0; i < c->mix->k; i++) {
		if (c->only >= 0 && i != c->only)
			continue;
		size_t n = c->mix->comps[i].make(ctx->rank, off, len, max);
		nc_layout_list(&comps[k], n, off, len);
		if (handles && nc_fab_handle(&f, &comps[k]))
			handles = false;
		k++;
	}
	/* Both ranks must agree on how the layouts travel. */
	int mine = handles, all[2];
	ft_allgather(ctx, &mine, sizeof(mine), all);
	if (!all[0] || !all[1])
		for (int i = 0; i < k; i++)
			if (comps[i].handle) {
				f.dops->layout_free(comps[i].handle);
				comps[i].handle = NULL;
			}
	if (ctx->rank == 0) {
		sh->handles = all[0] && all[1];
		sh->msgs = 0;
		for (int i = 0; i < k; i++)
			sh->msgs += nc_fab_nmsg(&f, &comps[i]);
	}
	free(off);
	free(len);
	int rc = nc_loop(ctx, &f, comps, k, &c->loop, &sh->loop);
	for (int i = 0; i < k; i++) {
		if (comps[i].handle)
			f.dops->layout_free(comps[i].handle);
		nc_layout_free(&comps[i]);
	}
	ft_barrier(ctx);
	nc_fab_close(&f);
	return rc;
}

static void usage(const char *prog)
{
	printf("Usage: %s [options]\n"
	       "Adaptive (auto) against every fixed scheme on workloads mixing small-block and\n"
	       "large-block layouts.\n\n"
	       "  -m, --mix LIST        of mg, sw4, lah (default all)\n"
	       "  -r, --reuse N         iterations per buffer placement (default 100)\n"
	       "  -t, --time SEC        timed seconds per run at least (default 0.5)\n"
	       "      --repeat N        runs per case (default 3)\n"
	       "      --stat median|min statistic over the runs (default median)\n"
	       "      --handles         send every layout through a layout handle (fi_ddtx.h)\n"
	       "      --no-parts        do not time the components alone\n"
	       "      --json FILE       write every figure as JSON\n"
	       "      --no-pin          do not pin the two processes to different CPUs\n"
	       "  -h, --help\n",
	       prog);
}

static bool use_min; /* --stat min */

static void run_case(struct run_cfg *c, int repeat, struct rank_shared *sh, struct run_res *out)
{
	double ts[100];
	int n = 0;
	memset(out, 0, sizeof(*out));
	for (int rep = 0; rep < repeat; rep++) {
		memset(sh, 0, sizeof(*sh));
		void *arg[2] = {c, sh};
		int rc = ft_spawn(2, 900, rank_main, arg);
		if (rc && !sh->loop.status)
			sh->loop.status = rc;
		if (sh->loop.status) {
			out->status = sh->loop.status;
			snprintf(out->err, sizeof(out->err), "%s",
				 sh->loop.err[0] ? sh->loop.err : "failed (see stderr)");
			return;
		}
		ts[n++] = sh->loop.t_xfer;
		snprintf(out->used, sizeof(out->used), "%s", sh->loop.used);
		out->handles = sh->handles;
		out->msgs = sh->msgs;
		out->tx = sh->loop.delta[0];
		out->rx = sh->loop.delta[1];
	}
	out->t = nc_median(ts, n); /* sorts ts */
	if (use_min)
		out->t = ts[0];
}

int main(int argc, char **argv)
{
	char mix_s[128] = "mg,sw4,lah";
	int reuse = 100, repeat = 3;
	double tmin = 0.5;
	bool handles = false, parts = true, pin = true, ok = true;
	const char *json = NULL;
	enum { O_REP = 256, O_HANDLES, O_NOPARTS, O_JSON, O_NOPIN, O_STAT };
	static const struct option lopts[] = {
		{"mix", required_argument, NULL, 'm'},     {"reuse", required_argument, NULL, 'r'},
		{"time", required_argument, NULL, 't'},    {"repeat", required_argument, NULL, O_REP},
		{"handles", no_argument, NULL, O_HANDLES}, {"no-parts", no_argument, NULL, O_NOPARTS},
		{"json", required_argument, NULL, O_JSON}, {"no-pin", no_argument, NULL, O_NOPIN},
		{"stat", required_argument, NULL, O_STAT},
		{"help", no_argument, NULL, 'h'},          {0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "m:r:t:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'm': snprintf(mix_s, sizeof(mix_s), "%s", optarg); break;
		case 'r': reuse = atoi(optarg); ok &= reuse > 0; break;
		case 't': tmin = atof(optarg); ok &= tmin >= 0; break;
		case O_REP: repeat = atoi(optarg); ok &= repeat > 0 && repeat < 100; break;
		case O_HANDLES: handles = true; break;
		case O_NOPARTS: parts = false; break;
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
	const struct mix_def *sel[NMIX];
	int nsel = 0;
	for (char *tok = strtok(mix_s, ","); tok; tok = strtok(NULL, ",")) {
		size_t i;
		for (i = 0; i < NMIX; i++)
			if (!strcmp(tok, mixes[i].name))
				break;
		if (i == NMIX || nsel == (int)NMIX) {
			ok = false;
			break;
		}
		sel[nsel++] = &mixes[i];
	}
	if (!ok || optind < argc || !nsel) {
		fprintf(stderr, "nc_mix: bad arguments (see --help)\n");
		return 2;
	}
	struct rank_shared *sh = nc_bench_start(sizeof(*sh));
	if (!sh)
		return 1;
	FILE *jf = NULL;
	if (json) {
		jf = fopen(json, "w");
		if (!jf) {
			fprintf(stderr, "nc_mix: cannot write %s: %s\n", json, strerror(errno));
			return 1;
		}
		fprintf(jf, "{\n  \"benchmark\": \"nc_mix\",\n  \"reuse\": %d,\n  \"repeat\": %d,\n"
			    "  \"handles_requested\": %s,\n  \"stat\": \"%s\",\n  \"cpus\": %ld,\n"
			    "  \"results\": [\n",
			reuse, repeat, handles ? "true" : "false", use_min ? "min" : "median",
			sysconf(_SC_NPROCESSORS_ONLN));
	}
	printf("nc_mix: reuse %d iterations per buffer placement, %s of %d run(s), %ld CPUs, "
	       "FI_PROVIDER_PATH=%s\n",
	       reuse, use_min ? "minimum" : "median", repeat, sysconf(_SC_NPROCESSORS_ONLN),
	       getenv("FI_PROVIDER_PATH") ? getenv("FI_PROVIDER_PATH") : "(unset)");
	int bad = 0, met_all = 1;
	bool firstj = true;
	for (int m = 0; m < nsel; m++) {
		const struct mix_def *mx = sel[m];
		printf("\n# %s: %s\n", mx->name, mx->desc);
		printf("%-10s %-6s %12s %6s %-8s %s\n", "part", "scheme", "time_us", "msgs", "handles",
		       "moved by (receiver)");
		struct run_res whole[NSCH];
		for (int part = parts ? 0 : mx->k; part <= mx->k; part++) {
			int only = part < mx->k ? part : -1;
			for (int s = 0; s < NSCH; s++) {
				struct run_cfg c = {.mix = mx, .only = only, .scheme = scheme_names[s],
						    .handles = handles, .pin = pin};
				c.loop = (struct nc_loop_cfg){
					.reuse = reuse, .min_s = tmin, .min_groups = 2,
					.max_groups = 100000, .max_group_s = 0, .warmup_groups = 1,
					.warmup_len = 5, .seed = (uint64_t)(m * 100 + part * 10 + 7)};
				struct run_res r;
				run_case(&c, repeat, sh, &r);
				const char *pname = only >= 0 ? mx->comps[only].name : "MIX";
				if (r.status) {
					printf("%-10s %-6s %s: %s\n", pname, scheme_names[s],
					       r.status == 2 ? "WRONG DATA" : "ERROR", r.err);
					bad += r.status == 2;
				} else {
					printf("%-10s %-6s %12.1f %6zu %-8s %s\n", pname, scheme_names[s],
					       r.t * 1e6, r.msgs, r.handles ? "yes" : "no", r.used);
				}
				if (only < 0)
					whole[s] = r;
				if (jf) {
					fprintf(jf, "%s    {\"mix\": \"%s\", \"part\": \"%s\", "
						    "\"scheme\": \"%s\", \"status\": %d",
						firstj ? "" : ",\n", mx->name, pname, scheme_names[s],
						r.status);
					firstj = false;
					if (!r.status) {
						fprintf(jf, ", \"time_us\": %.3f, \"msgs\": %zu, "
							    "\"handles\": %s, \"moved_by\": ",
							r.t * 1e6, r.msgs, r.handles ? "true" : "false");
						nc_json_str(jf, r.used);
						fprintf(jf, ", \"rx_layout_hits\": %llu, "
							    "\"rx_layout_misses\": %llu, "
							    "\"rx_zcopy_not_ready\": %llu, "
							    "\"rx_explorations\": %llu",
							(unsigned long long)r.rx.layout_hits,
							(unsigned long long)r.rx.layout_misses,
							(unsigned long long)r.rx.zcopy_not_ready,
							(unsigned long long)r.rx.explorations);
					} else {
						fprintf(jf, ", \"error\": ");
						nc_json_str(jf, r.err);
					}
					fprintf(jf, "}");
				}
			}
		}
		/* Target: auto faster than every fixed scheme on the whole mix. */
		printf("target (auto faster than every fixed scheme on the mix):");
		if (whole[3].status) {
			printf(" auto failed\n");
			met_all = 0;
			continue;
		}
		for (int s = 0; s < 3; s++) {
			if (whole[s].status) {
				printf(" %s failed;", scheme_names[s]);
				continue;
			}
			double x = whole[s].t / whole[3].t;
			printf(" %.2fx %s (%s);", x, scheme_names[s], x > 1 ? "met" : "MISSED");
			if (x <= 1)
				met_all = 0;
		}
		printf("\n");
	}
	if (jf) {
		fprintf(jf, "\n  ]\n}\n");
		fclose(jf);
		printf("\nwrote %s\n", json);
	}
	printf("\nauto faster than every fixed scheme on every mix: %s\n", met_all ? "yes" : "NO");
	munmap(sh, sizeof(*sh));
	return bad ? 1 : 0;
}
